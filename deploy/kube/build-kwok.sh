#!/usr/bin/env bash
# Builds kwok (sigs.k8s.io/kwok: fake nodes whose pods "run" without running) from the Go
# module proxy, as build-addons.sh builds the cluster's add-ons, into a cache of its own:
# the scale benchmark (bench/scale.ts) alone needs it, and a key of its own keeps it from
# rebuilding the add-ons. Beside the binary, kwok.yaml: the Stages that make kwok's nodes
# Ready (and keep their leases), its pods Running and Ready, then gone once deleted, and
# claims of StorageClass `kwok-volume` bound to a volume that is a record only: kwok's own
# "fast" stages from the module's kustomize/stage (the set kwokctl starts with, and its
# volume stages; the StorageClass itself is the benchmark's to create).
#
#   $PIER_KUBE_CACHE/kwok-v<version>-<go version>-<hash of this file>/{kwok,kwok.yaml}
# Usage: deploy/kube/build-kwok.sh   build what is missing, print that directory
# Env:   PIER_KUBE_CACHE (default ~/.cache/pier/kube), KWOK_VERSION, GO
set -euo pipefail

KWOK_VERSION=${KWOK_VERSION:-0.8.0}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
CACHE_ROOT=${PIER_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pier/kube}
NICE=(nice -n 19)
command -v ionice >/dev/null && NICE+=(ionice -c3)

log() { printf '[kwok %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ -x $GO ]] || command -v "$GO" >/dev/null || die "go is missing"
go_version=$("$GO" env GOVERSION)
DIR="$CACHE_ROOT/kwok-v$KWOK_VERSION-$go_version-$(sha256sum "$0" | cut -c1-12)"
BUILD_LOG="$DIR/build.log"
# The Go caches build.sh fills: kwok imports the same k8s.io modules, mostly built already.
export GOMODCACHE="$CACHE_ROOT/go/mod" GOCACHE="$CACHE_ROOT/go/build"
export GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOTOOLCHAIN=local

if [[ ! -f $DIR/.complete ]]; then
  mkdir -p "$DIR"
  start=$(date +%s)
  log "building kwok v$KWOK_VERSION into $DIR (once; a few minutes on 2 cores)"
  rm -rf "$DIR/.bin" && mkdir -p "$DIR/.bin"
  if ! (cd / && GOBIN="$DIR/.bin" "${NICE[@]}" "$GO" install -trimpath -ldflags='-s -w' "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION" >>"$BUILD_LOG" 2>&1); then
    tail -n 30 "$BUILD_LOG" >&2
    die "failed: go install sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION (whole log: $BUILD_LOG)"
  fi
  mv "$DIR/.bin/kwok" "$DIR/kwok"
  rmdir "$DIR/.bin"
  src=$(cd / && "$GO" mod download -json "sigs.k8s.io/kwok@v$KWOK_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -d $src ]] || die "go mod download sigs.k8s.io/kwok@v$KWOK_VERSION gave no source"
  # One multi-document config: kwok reads Stages from --config when they are not CRDs.
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml \
    volume/fast/pvc-provision.yaml volume/fast/pv-bind.yaml volume/fast/pvc-delete.yaml volume/fast/pv-delete.yaml; do
    echo '---'
    cat "$src/kustomize/stage/$f"
  done >"$DIR/kwok.yaml"
  touch "$DIR/.complete"
  log "kwok v$KWOK_VERSION built in $(($(date +%s) - start))s"
  for old in "$CACHE_ROOT"/kwok-*; do
    [[ $old == "$DIR" ]] || rm -rf "$old"
  done
fi
echo "$DIR"
