#!/usr/bin/env bash
# Puts the versitygw binary into .prepared/ for the image build (no registry serves an S3
# server image here, and Debian packages none).
set -euo pipefail
exec ../go-binary.sh github.com/versity/versitygw/cmd/versitygw v1.8.0 versitygw
