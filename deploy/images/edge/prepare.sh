#!/usr/bin/env bash
# Puts Caddy into .prepared/ for the image build. Debian's Caddy (2.6) lacks what the edge's
# one dynamic route needs: an SRV lookup that keeps serving its last answer while compute is
# away (grace_period, 2.8+) and forgets a failed upstream's answer before a retry.
set -euo pipefail
exec ../go-binary.sh github.com/caddyserver/caddy/v2/cmd/caddy v2.11.9 caddy
