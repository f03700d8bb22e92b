#!/usr/bin/env bash
# Builds the binaries of a real single-node Kubernetes from the Go module proxy alone
# (no release tarballs, no registry): etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet, kube-proxy (Services' ClusterIPs, for Pier's own chart),
# kubectl, helm (to install deploy/helm/pier), plus two small helpers of ours (a pod-sandbox `pause`
# process and `pier-cri-clean`, which tears pod sandboxes down on stop; crictl is not
# served by the proxy here).
#
# The binaries go to a cache OUTSIDE the checkout, one directory per key:
#   $PIER_KUBE_CACHE/<key>/bin     key = k8s-v<kube>-etcd-v<etcd>-<go version>-<hash of this file>
# so a later run on the same machine reuses them; changing a version, Go or this file
# builds a new set (the Go caches in $PIER_KUBE_CACHE/go are shared, so that is quick
# unless the versions changed) and removes the older sets.
#
# Usage: deploy/kube/build.sh          build what is missing, print the bin directory
#        deploy/kube/build.sh --key    print the key only
# Env:   PIER_KUBE_CACHE (default ~/.cache/pier/kube), KUBE_VERSION, ETCD_VERSION,
#        HELM_VERSION, GO (default: go on PATH; must be >= the go line of k8s.io/kubernetes' go.mod)
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-1.37.2}
ETCD_VERSION=${ETCD_VERSION:-3.6.16}
HELM_VERSION=${HELM_VERSION:-3.22.0}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
CACHE_ROOT=${PIER_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pier/kube}
# Compiles run at the lowest priority: the machine is shared with test runs.
NICE=(nice -n 19)
command -v ionice >/dev/null && NICE+=(ionice -c3)

KMINOR=$(echo "$KUBE_VERSION" | cut -d. -f2)
STAGING_VERSION="0.${KUBE_VERSION#1.}"
K8S_CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)

log() { printf '[kube build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.0f", b-a}'; }
# go's own output (hundreds of "go: downloading" lines) goes to $BUILD_LOG; its tail on failure.
quiet() {
  "$@" >>"$BUILD_LOG" 2>&1 && return 0
  tail -n 30 "$BUILD_LOG" >&2
  die "failed: $* (whole log: $BUILD_LOG)"
}

[[ -x $GO ]] || command -v "$GO" >/dev/null || die "go is missing (need Go >= 1.26 for Kubernetes $KUBE_VERSION)"
go_version=$("$GO" env GOVERSION)
key="k8s-v$KUBE_VERSION-etcd-v$ETCD_VERSION-helm-v$HELM_VERSION-$go_version-$(sha256sum "$0" | cut -c1-12)"
if [[ ${1:-} == --key ]]; then echo "$key"; exit 0; fi

BIN="$CACHE_ROOT/$key/bin"
SRC="$CACHE_ROOT/src"
BUILD_LOG="$CACHE_ROOT/$key/build.log"
mkdir -p "$BIN" "$SRC"
export GOMODCACHE="$CACHE_ROOT/go/mod" GOCACHE="$CACHE_ROOT/go/build"
export GOFLAGS="-buildvcs=false -mod=mod" CGO_ENABLED=0 GOTOOLCHAIN=local

build_etcd() {
  [[ -x $BIN/etcd ]] && return 0
  local d="$SRC/etcd-v$ETCD_VERSION" t
  mkdir -p "$d"
  # etcd's server/go.mod has replace directives (../api and others), so
  # `go install go.etcd.io/etcd/server/v3@version` refuses it: pin the siblings here.
  cat >"$d/go.mod" <<MOD
module pier.local/kube/etcd

go 1.26.0

require go.etcd.io/etcd/server/v3 v$ETCD_VERSION

replace (
	go.etcd.io/etcd/api/v3 => go.etcd.io/etcd/api/v3 v$ETCD_VERSION
	go.etcd.io/etcd/client/pkg/v3 => go.etcd.io/etcd/client/pkg/v3 v$ETCD_VERSION
	go.etcd.io/etcd/client/v3 => go.etcd.io/etcd/client/v3 v$ETCD_VERSION
	go.etcd.io/etcd/pkg/v3 => go.etcd.io/etcd/pkg/v3 v$ETCD_VERSION
)
MOD
  t=$(now)
  (cd "$d" && quiet "${NICE[@]}" "$GO" get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" &&
    quiet "${NICE[@]}" "$GO" build -trimpath -ldflags='-s -w' -o "$BIN/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "$BIN/etcd.tmp" "$BIN/etcd"
  log "etcd v$ETCD_VERSION built in $(since "$t")s"
}

# k8s.io/kubernetes requires every staging module at v0.0.0 and replaces it with
# ./staging/src/..., which its module zip does not contain (and a dependency's replace
# directives are ignored anyway): a wrapper module maps each to its published v0.x.y tag.
k8s_module() {
  local d="$SRC/k8s-v$KUBE_VERSION" gomod
  mkdir -p "$d"
  [[ -f $d/go.sum ]] && return 0
  gomod=$(cd / && GOFLAGS= "$GO" mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" |
    node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).GoMod))')
  {
    printf 'module pier.local/kube/k8s\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$KUBE_VERSION"
    grep -E '^\s+k8s\.io/[a-z0-9-]+ v0\.0\.0$' "$gomod" | awk -v v="v$STAGING_VERSION" '{printf "\t%s => %s %s\n", $1, $1, v}'
    echo ')'
  } >"$d/go.mod.tmp"
  mv "$d/go.mod.tmp" "$d/go.mod"
  mkdir -p "$d/cmd/pier-cri-clean"
  cat >"$d/cmd/pier-cri-clean/main.go" <<'GO'
// pier-cri-clean unix:///path/cri.sock: StopPodSandbox + RemovePodSandbox for every pod
// sandbox, so that stopping the node leaves no containers, netns or mounts behind.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	addr := os.Args[1]
	if !strings.HasPrefix(addr, "unix://") {
		addr = "unix://" + addr
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer conn.Close()
	rs := runtimeapi.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "list:", err)
		os.Exit(1)
	}
	rc := 0
	for _, s := range resp.Items {
		name := s.Metadata.Namespace + "/" + s.Metadata.Name
		if _, err := rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			fmt.Fprintln(os.Stderr, "stop", name, err)
			rc = 1
		}
		if _, err := rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			fmt.Fprintln(os.Stderr, "remove", name, err)
			rc = 1
		}
	}
	os.Exit(rc)
}
GO
  (cd "$d" && quiet "${NICE[@]}" "$GO" get "k8s.io/kubernetes@v$KUBE_VERSION")
}

build_k8s() {
  local c missing=() pkgs=() ld="-s -w" p t d="$SRC/k8s-v$KUBE_VERSION"
  for c in "${K8S_CMDS[@]}" pier-cri-clean; do [[ -x $BIN/$c ]] || missing+=("$c"); done
  ((${#missing[@]})) || return 0
  t=$(now)
  k8s_module
  log "k8s.io/kubernetes v$KUBE_VERSION module resolved in $(since "$t")s"
  # Without these the binaries report v0.0.0-master+$Format:%H$.
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=v$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$KMINOR -X $p.gitTreeState=clean -X $p.gitCommit=modproxy-v$KUBE_VERSION"
  done
  for c in "${missing[@]}"; do
    if [[ $c == pier-cri-clean ]]; then pkgs+=(./cmd/pier-cri-clean); else pkgs+=("k8s.io/kubernetes/cmd/$c"); fi
  done
  # One `go build` for all of them shares the compile work and overlaps the links.
  t=$(now)
  rm -rf "$BIN/.tmp" && mkdir -p "$BIN/.tmp"
  (cd "$d" && quiet "${NICE[@]}" "$GO" build -trimpath -ldflags="$ld" -o "$BIN/.tmp/" "${pkgs[@]}")
  for c in "${missing[@]}"; do mv "$BIN/.tmp/$c" "$BIN/$c"; done
  rmdir "$BIN/.tmp"
  log "built ${missing[*]} in $(since "$t")s"
}

build_pause() {
  [[ -x $BIN/pause ]] && return 0
  local d="$SRC/pause"
  mkdir -p "$d"
  printf 'module pier.local/kube/pause\n\ngo 1.26.0\n' >"$d/go.mod"
  cat >"$d/main.go" <<'GO'
// The pod sandbox process: sleeps, exits on SIGINT/SIGTERM, reaps zombies.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
GO
  (cd "$d" && quiet "${NICE[@]}" "$GO" build -trimpath -ldflags='-s -w' -o "$BIN/pause" .)
}

# helm.sh/helm/v3 has no replace directives, so `go install module@version` builds it as
# published (its own go.sum pins its client-go). The -X sets what `helm version` reports.
build_helm() {
  [[ -x $BIN/helm ]] && return 0
  local t
  t=$(now)
  rm -rf "$BIN/.helm" && mkdir -p "$BIN/.helm"
  (cd / && GOFLAGS=-buildvcs=false GOBIN="$BIN/.helm" quiet "${NICE[@]}" "$GO" install -trimpath \
    -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION" "helm.sh/helm/v3/cmd/helm@v$HELM_VERSION")
  mv "$BIN/.helm/helm" "$BIN/helm"
  rmdir "$BIN/.helm"
  log "helm v$HELM_VERSION built in $(since "$t")s"
}

started=$(now)
if [[ ! -f $BIN/.complete ]]; then
  log "building Kubernetes v$KUBE_VERSION, etcd v$ETCD_VERSION and helm v$HELM_VERSION with $go_version into $BIN (once per key; ~8 min on 2 cores)"
  build_etcd
  build_k8s
  build_pause
  build_helm
  touch "$BIN/.complete"
  log "done in $(since "$started")s"
  # Older keys' binaries (~480 MB each) are of no further use.
  for old in "$CACHE_ROOT"/k8s-v*; do
    [[ $old == "$CACHE_ROOT/$key" ]] || rm -rf "$old"
  done
fi
echo "$BIN"
