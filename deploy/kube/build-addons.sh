#!/usr/bin/env bash
# Builds the test cluster's add-ons from the Go module proxy, as build.sh builds
# Kubernetes itself, into a cache of their own so that adding one never rebuilds the
# cluster:
#   metrics-server   the resource metrics API (metrics.k8s.io) HorizontalPodAutoscalers read
#   coredns          the cluster DNS (cluster.local): pods resolve Services by name
#   local-path-provisioner  the default StorageClass: a claim gets a directory on the node
#   traefik          the ingress controller: it routes the Ingresses Pier writes (3.6: 3.7
#                    needs modules the proxy here refuses, its nested dynamic/ext module
#                    and lego v5's DNS providers' SDKs)
#   cert-manager-controller, acmesolver
#                    cert-manager 1.21: the proxy serves its module without cmd/ (a nested
#                    module), so the mains are ours (deploy/kube/cert-manager/), built
#                    inside a copy of the module against its pkg/ and its pinned versions
#
#   $PIER_KUBE_CACHE/addons-<go version>-<hash of this file>/bin
# Usage: deploy/kube/build-addons.sh   build what is missing, print the bin directory
# Env:   PIER_KUBE_CACHE (default ~/.cache/pier/kube), METRICS_SERVER_VERSION, COREDNS_VERSION,
#        TRAEFIK_VERSION, LOCAL_PATH_VERSION, CERT_MANAGER_VERSION, GO
set -euo pipefail

METRICS_SERVER_VERSION=${METRICS_SERVER_VERSION:-0.8.0}
COREDNS_VERSION=${COREDNS_VERSION:-1.15.0}
TRAEFIK_VERSION=${TRAEFIK_VERSION:-3.6.12}
LOCAL_PATH_VERSION=${LOCAL_PATH_VERSION:-0.0.30}
CERT_MANAGER_VERSION=${CERT_MANAGER_VERSION:-1.21.2}
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
CACHE_ROOT=${PIER_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pier/kube}
NICE=(nice -n 19)
command -v ionice >/dev/null && NICE+=(ionice -c3)

log() { printf '[kube addons %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.0f", b-a}'; }

[[ -x $GO ]] || command -v "$GO" >/dev/null || die "go is missing"
go_version=$("$GO" env GOVERSION)
key="addons-$go_version-$(cat "$0" "$HERE"/cert-manager/*.go | sha256sum | cut -c1-12)"
BIN="$CACHE_ROOT/$key/bin"
BUILD_LOG="$CACHE_ROOT/$key/build.log"
mkdir -p "$BIN"
# The Go caches build.sh fills: most of what the add-ons import is already there.
export GOMODCACHE="$CACHE_ROOT/go/mod" GOCACHE="$CACHE_ROOT/go/build"
export GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOTOOLCHAIN=local

# go install MODULE/CMD VERSION NAME: one binary into $BIN, its output in $BUILD_LOG.
install() {
  local t
  [[ -x $BIN/$3 ]] && return 0
  t=$(now)
  rm -rf "$BIN/.$3" && mkdir -p "$BIN/.$3"
  if ! (cd / && GOBIN="$BIN/.$3" "${NICE[@]}" "$GO" install -trimpath -ldflags='-s -w' "$1@v$2" >>"$BUILD_LOG" 2>&1); then
    tail -n 30 "$BUILD_LOG" >&2
    die "failed: go install $1@v$2 (whole log: $BUILD_LOG)"
  fi
  mv "$BIN/.$3/$3" "$BIN/$3"
  rmdir "$BIN/.$3"
  log "$3 v$2 built in $(since "$t")s"
}

# build_in MODULE VERSION PACKAGE NAME [MAIN.go]: for a module whose go.mod has replace
# directives, which `go install mod@version` refuses (they apply only to the main module): go
# build in a copy of the module's source, from the module proxy like the rest. With MAIN.go,
# that file becomes PACKAGE's main.go first (a main the published module lacks).
build_in() {
  local t dir src
  [[ -x $BIN/$4 ]] && return 0
  t=$(now)
  dir=$(cd / && "$GO" mod download -json "$1@v$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -d $dir ]] || die "go mod download $1@v$2 gave no source (log: $BUILD_LOG)"
  src=$(mktemp -d)
  cp -r "$dir/." "$src" && chmod -R u+w "$src"
  [[ -z ${5:-} ]] || { mkdir -p "$src/$3" && cp "$5" "$src/$3/main.go"; }
  if ! (cd "$src" && "${NICE[@]}" "$GO" build -trimpath -ldflags='-s -w' -o "$BIN/.$4" "./$3" >>"$BUILD_LOG" 2>&1); then
    rm -rf "$src"
    tail -n 30 "$BUILD_LOG" >&2
    die "failed: go build ./$3 in $1@v$2 (whole log: $BUILD_LOG)"
  fi
  rm -rf "$src"
  mv "$BIN/.$4" "$BIN/$4"
  log "$4 v$2 built in $(since "$t")s"
}

if [[ ! -f $BIN/.complete ]]; then
  log "building the cluster's add-ons into $BIN (once per key; a few minutes on 2 cores)"
  install sigs.k8s.io/metrics-server/cmd/metrics-server "$METRICS_SERVER_VERSION" metrics-server
  install github.com/coredns/coredns "$COREDNS_VERSION" coredns
  install github.com/rancher/local-path-provisioner "$LOCAL_PATH_VERSION" local-path-provisioner
  build_in github.com/traefik/traefik/v3 "$TRAEFIK_VERSION" cmd/traefik traefik
  build_in github.com/cert-manager/cert-manager "$CERT_MANAGER_VERSION" cmd/pier-controller cert-manager-controller "$HERE/cert-manager/controller.go"
  build_in github.com/cert-manager/cert-manager "$CERT_MANAGER_VERSION" cmd/pier-acmesolver acmesolver "$HERE/cert-manager/acmesolver.go"
  # Its CRDs, all six (deploy/crds of the repository keeps only the three compute writes).
  mkdir -p "$BIN/cert-manager-crds"
  cp "$(cd / && "$GO" mod download -json "github.com/cert-manager/cert-manager@v$CERT_MANAGER_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"/deploy/crds/*.yaml "$BIN/cert-manager-crds/"
  touch "$BIN/.complete"
  for old in "$CACHE_ROOT"/addons-*; do
    [[ $old == "$CACHE_ROOT/$key" ]] || rm -rf "$old"
  done
fi
echo "$BIN"
