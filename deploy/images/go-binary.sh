#!/usr/bin/env bash
# Used by an image's prepare.sh: puts the binary of a Go command (built with the host's Go
# from the module proxy, cached by version outside the checkout so a rebuild costs nothing)
# into .prepared/ of the current folder.
# Usage: ../go-binary.sh <module path of the command> <version> <binary name>
set -euo pipefail
module=$1 version=$2 binary=$3
cache=${XDG_CACHE_HOME:-$HOME/.cache}/pier/$binary-$version
if [[ ! -x $cache/$binary ]]; then
  command -v go >/dev/null || { echo "go is needed to build $binary $version ($module)" >&2; exit 1; }
  mkdir -p "$cache"
  GOBIN=$cache CGO_ENABLED=0 GOFLAGS=-mod=mod go install -trimpath -ldflags='-s -w' "$module@$version"
fi
mkdir -p .prepared
cp "$cache/$binary" ".prepared/$binary"
