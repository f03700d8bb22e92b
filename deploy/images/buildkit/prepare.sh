#!/usr/bin/env bash
# Puts BuildKit (buildkitd, buildctl and its buildctl-daemonless.sh) and RootlessKit into
# .prepared/ for the image build, from the Go module proxy. BuildKit's go.mod has exclude
# directives, so it is built inside a copy of its module (go-binary.sh --in-module).
set -euo pipefail
BUILDKIT=v0.34.2
ROOTLESSKIT=v2.3.6
../go-binary.sh --in-module github.com/moby/buildkit "$BUILDKIT" cmd/buildkitd buildkitd
../go-binary.sh --in-module github.com/moby/buildkit "$BUILDKIT" cmd/buildctl buildctl
../go-binary.sh github.com/rootless-containers/rootlesskit/v2/cmd/rootlesskit "$ROOTLESSKIT" rootlesskit
dir=$(cd / && CGO_ENABLED=0 GOFLAGS=-mod=mod go mod download -json "github.com/moby/buildkit@$BUILDKIT" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
install -m 0755 "$dir/examples/buildctl-daemonless/buildctl-daemonless.sh" .prepared/buildctl-daemonless.sh
