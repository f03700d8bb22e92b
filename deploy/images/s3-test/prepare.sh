#!/usr/bin/env bash
# Puts the versitygw binary into .prepared/ for the image build: built with the host's Go
# from the module proxy (no registry serves an S3 server image here, and Debian packages
# none), cached by version outside the checkout so a rebuild costs nothing.
set -euo pipefail
version=v1.8.0
cache=${XDG_CACHE_HOME:-$HOME/.cache}/pier/versitygw-$version
if [[ ! -x $cache/versitygw ]]; then
  command -v go >/dev/null || { echo "go is needed to build versitygw $version (the tests' S3 server)" >&2; exit 1; }
  mkdir -p "$cache"
  GOBIN=$cache CGO_ENABLED=0 GOFLAGS=-mod=mod go install -trimpath -ldflags='-s -w' "github.com/versity/versitygw/cmd/versitygw@$version"
fi
mkdir -p .prepared
cp "$cache/versitygw" .prepared/versitygw
