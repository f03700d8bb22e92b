#!/usr/bin/env bash
# Used by an image's prepare.sh: puts the binary of a Go command (built with the host's Go
# from the module proxy, cached by version outside the checkout so a rebuild costs nothing)
# into .prepared/ of the current folder.
# Usage: ../go-binary.sh <module path of the command> <version> <binary name>
#        ../go-binary.sh --in-module <module> <version> <package dir> <binary name>
# The second form is for a module whose go.mod has replace or exclude directives, which
# `go install mod@version` refuses (they apply only to the main module): go build inside a
# copy of the module's source, from the module proxy like the rest.
set -euo pipefail
in_module=
if [[ $1 == --in-module ]]; then
  in_module=$4
  set -- "$2" "$3" "$5"
fi
module=$1 version=$2 binary=$3
cache=${XDG_CACHE_HOME:-$HOME/.cache}/pier/$binary-$version
if [[ ! -x $cache/$binary ]]; then
  command -v go >/dev/null || { echo "go is needed to build $binary $version ($module)" >&2; exit 1; }
  mkdir -p "$cache"
  export CGO_ENABLED=0 GOFLAGS=-mod=mod
  if [[ -z $in_module ]]; then
    GOBIN=$cache go install -trimpath -ldflags='-s -w' "$module@$version"
  else
    dir=$(cd / && go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [[ -d $dir ]] || { echo "go mod download $module@$version gave no source" >&2; exit 1; }
    src=$(mktemp -d)
    trap 'rm -rf "$src"' EXIT
    cp -r "$dir/." "$src" && chmod -R u+w "$src"
    (cd "$src" && go build -trimpath -ldflags='-s -w' -o "$cache/$binary" "./$in_module")
  fi
fi
mkdir -p .prepared
cp "$cache/$binary" ".prepared/$binary"
