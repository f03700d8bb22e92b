#!/usr/bin/env bash
# A real single-node Kubernetes on this machine, for the tests and for trying Pier on it:
# etcd, kube-apiserver, kube-controller-manager and kube-scheduler (the control plane) and,
# where it can run, one node (Debian's containerd + runc + CNI plugins, the kubelet, and
# kube-proxy for Services' ClusterIPs) whose containerd holds Pier's locally built images,
# CoreDNS as cluster DNS, metrics-server (HorizontalPodAutoscalers act), Traefik as ingress
# controller, local-path-provisioner (the default StorageClass) and cert-manager with an
# ACME server and a DNS server of its own (custom domains' certificates), and a registry for
# builds. The binaries come from
# deploy/kube/build.sh and build-addons.sh (built once into a cache outside the checkout).
#
#   deploy/kube/cluster.sh start [--user PID]  build if needed, start, import the images
#   deploy/kube/cluster.sh stop  [--user PID]  stop everything and remove all state
#   deploy/kube/cluster.sh status | env   env: the exports to run Pier on it (./pier up)
#
# `start` writes $STATE_DIR/kubeconfig (admin) and $STATE_DIR/node: "ready", or why there
# is no node ("control-plane only: ..."). Without root, cgroups, overlayfs, iptables or
# the Debian packages (containerd runc containernetworking-plugins iptables) only the
# control plane runs: objects are stored and validated, no pod ever runs.
#
# --user PID shares one cluster between concurrent users (two `./pier test` runs on one
# machine): start registers PID, stop only removes it while another live PID is
# registered, and the last one out stops the cluster. A plain `stop` stops it regardless,
# and also cleans up after a run that was killed.
#
# Env: PIER_KUBE_NODE=off (the control plane only, as where no node can run),
# PIER_KUBE_STATE (default /tmp/pier-kube), PIER_KUBE_IMAGES (docker images loaded
# into the node; default "pier/tiny-http:1 pier/exits:1 pier/image-push:1 pier/buildkit:1
# pier/volume-tools:1 pier/platform:1 pier/postgres:15 pier/nats:2 pier/pg-managed:15
# pier/mariadb:10.11", buildkit and image-push
# for build Jobs, volume-tools for disk backups' Jobs, the last three for
# deploy/helm/pier, the databases' two engines for the operator-free mode; one not built
# is left out, saying so),
# PIER_KUBE_APISERVER_PORT (16443).
#
# Pods reach the API server as in any cluster, through the `kubernetes` Service (10.96.0.1:443):
# the apiserver listens on all addresses (not 127.0.0.1 only) and advertises the node's IP,
# which kube-proxy (iptables mode) sends that ClusterIP to. CoreDNS is the cluster DNS
# (cluster.local, at 10.96.0.10), so pods resolve Services by name.
set -euo pipefail

HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
STATE_DIR=${PIER_KUBE_STATE:-/tmp/pier-kube}
IMAGES=${PIER_KUBE_IMAGES:-pier/tiny-http:1 pier/exits:1 pier/image-push:1 pier/buildkit:1 pier/volume-tools:1 pier/platform:1 pier/postgres:15 pier/nats:2 pier/pg-managed:15 pier/mariadb:10.11}
APISERVER_PORT=${PIER_KUBE_APISERVER_PORT:-16443}
ETCD_PORT=23790
ETCD_PEER_PORT=23800
ETCD_METRICS_PORT=23810
KCM_PORT=10357
SCHED_PORT=10359
KUBELET_PORT=10350
KUBELET_HEALTHZ_PORT=10348
PROXY_HEALTHZ_PORT=10346
PROXY_METRICS_PORT=10347
METRICS_PORT=10343
COREDNS_HEALTH_PORT=10341
COREDNS_READY_PORT=10342
INGRESS_HTTP_PORT=${PIER_KUBE_INGRESS_HTTP_PORT:-80}
INGRESS_HTTPS_PORT=${PIER_KUBE_INGRESS_HTTPS_PORT:-10443}
INGRESS_PING_PORT=10340
# Traefik's Prometheus metrics, on the node's address: compute reads its requests there (pods too).
INGRESS_METRICS_PORT=10341
DNS_IP=10.96.0.10
NODE_NAME=pier-kube-node
POD_CIDR=10.88.0.0/16
SERVICE_CIDR=10.96.0.0/16
CNI_BIN_DIR=/usr/lib/cni
BRIDGE=pier-kube0
DNS_CONTAINER=pier-kube-dns
ACME_CONTAINER=pier-kube-acme
REGISTRY_CONTAINER=pier-kube-registry
S3_CONTAINER=pier-kube-s3
S3_PORT=19443
BUILD_NAMESPACE=pier-builds
CERT_ZONES=${PIER_KUBE_DNS_ZONES:-example.test}
APPS_DOMAIN=apps.pier-kube.test
PAUSE_IMAGE=docker.io/pier/kube-pause:local

log() { printf '[kube %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }

# ---------------------------------------------------------------- helpers
# Running, and not a zombie (a killed component nobody has reaped yet).
alive() {
  local pid
  [[ -f $STATE_DIR/pids/$1 ]] || return 1
  pid=$(cat "$STATE_DIR/pids/$1")
  kill -0 "$pid" 2>/dev/null && [[ $(ps -o stat= -p "$pid" 2>/dev/null) != Z* ]]
}

launch() { # name cmd...
  local n=$1
  shift
  alive "$n" && return 0
  # 9>&-: the daemons must not hold the start/stop lock (fd 9) for their whole life.
  setsid nohup "$@" >"$STATE_DIR/logs/$n.log" 2>&1 </dev/null 9>&- &
  echo $! >"$STATE_DIR/pids/$n"
}

# wait_until WHAT TIMEOUT_S CMD...: for what is not a process of ours (a container, say).
wait_until() {
  local what=$1 to=$2 i
  shift 2
  for ((i = 0; i < to * 5; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  die "$what did not come up within ${to}s"
}

wait_for() { # name timeout_s cmd...
  local n=$1 to=$2 i
  shift 2
  for ((i = 0; i < to * 5; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    alive "$n" || { tail -20 "$STATE_DIR/logs/$n.log" >&2; die "$n exited (log: $STATE_DIR/logs/$n.log)"; }
    sleep 0.2
  done
  tail -20 "$STATE_DIR/logs/$n.log" >&2
  die "$n not ready after ${to}s (log: $STATE_DIR/logs/$n.log)"
}

node_ip() {
  ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p' | head -1 | grep . ||
    hostname -I 2>/dev/null | awk '{print $1}' | grep . || echo 127.0.0.1
}

kubeconfig() { # file user token
  cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: pier-kube
  cluster: {server: "https://127.0.0.1:$APISERVER_PORT", certificate-authority: "$STATE_DIR/pki/ca.crt"}
users:
- name: $2
  user: {token: "$3"}
contexts:
- name: pier-kube
  context: {cluster: pier-kube, user: $2}
current-context: pier-kube
KC
  chmod 600 "$1"
}

pki() {
  local p="$STATE_DIR/pki" ip=$1
  [[ -f $p/done ]] && return 0
  mkdir -p "$p"
  (
    cd "$p"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -keyout ca.key -out ca.crt -subj /CN=pier-kube-ca 2>/dev/null
    sign() { # name subj ext
      openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
      printf '%b' "$3" >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -out "$1.crt" -extfile "$1.ext" 2>/dev/null
    }
    sign apiserver /CN=kube-apiserver "subjectAltName=IP:127.0.0.1,IP:${SERVICE_CIDR%.*/*}.1,IP:$ip,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n"
    sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "extendedKeyUsage=clientAuth\n"
    sign kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" "subjectAltName=IP:$ip,IP:127.0.0.1,DNS:$NODE_NAME,DNS:localhost\nextendedKeyUsage=serverAuth\n"
    # The API server's identity towards aggregated APIs (metrics-server), which trust it by this CA and name.
    sign front-proxy-client /CN=front-proxy-client "extendedKeyUsage=clientAuth\n"
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    local ta tc ts tk tp
    ta=$(openssl rand -hex 16) tc=$(openssl rand -hex 16) ts=$(openssl rand -hex 16) tk=$(openssl rand -hex 16) tp=$(openssl rand -hex 16)
    {
      echo "$ta,admin,admin,system:masters"
      echo "$tc,system:kube-controller-manager,kcm"
      echo "$ts,system:kube-scheduler,ksched"
      echo "$tk,system:node:$NODE_NAME,kubelet,system:nodes"
      echo "$tp,system:kube-proxy,kube-proxy" # bound to system:node-proxier by default RBAC
    } >tokens.csv
    chmod 600 tokens.csv ./*.key
    kubeconfig "$STATE_DIR/kubeconfig" admin "$ta"
    kubeconfig "$STATE_DIR/kubeconfig-kcm" system:kube-controller-manager "$tc"
    kubeconfig "$STATE_DIR/kubeconfig-scheduler" system:kube-scheduler "$ts"
    kubeconfig "$STATE_DIR/kubeconfig-kubelet" "system:node:$NODE_NAME" "$tk"
    kubeconfig "$STATE_DIR/kubeconfig-proxy" system:kube-proxy "$tp"
    touch done
  )
}

# Why no node can run here, or nothing when one can.
node_problem() {
  [[ ${PIER_KUBE_NODE:-} != off ]] || { echo "PIER_KUBE_NODE=off"; return; }
  [[ $(id -u) == 0 ]] || { echo "the node needs root"; return; }
  local missing=() c
  for c in containerd runc ctr iptables; do command -v "$c" >/dev/null || missing+=("$c"); done
  [[ -x $CNI_BIN_DIR/bridge && -x $CNI_BIN_DIR/firewall ]] || missing+=(containernetworking-plugins)
  ((${#missing[@]} == 0)) || { echo "missing ${missing[*]} (Debian: apt-get install containerd runc containernetworking-plugins iptables)"; return; }
  iptables -w -L FORWARD -n >/dev/null 2>&1 || { echo "iptables does not work here (a container without NET_ADMIN?)"; return; }
  grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || { echo "no overlayfs"; return; }
  [[ -d /sys/fs/cgroup && -w /sys/fs/cgroup ]] || { echo "no writable cgroup filesystem"; return; }
  command -v docker >/dev/null && docker info >/dev/null 2>&1 || { echo "no docker engine to take the images ($IMAGES) from"; return; }
}

# ---------------------------------------------------------------- start
cmd_start() {
  local user=${1:-} started t ip p="$STATE_DIR/pki" bin
  started=$(now)
  bin=$("$HERE/build.sh")
  # What a run killed before its stop left (processes, mounts, the bridge): gone first.
  if [[ -d $STATE_DIR ]] && ! alive kube-apiserver; then
    log "cleaning up what an earlier run left in $STATE_DIR"
    cmd_stop ""
  fi
  mkdir -p "$STATE_DIR"/{pids,logs,etcd,users}
  echo "$bin" >"$STATE_DIR/bin"
  [[ -z $user ]] || echo "$user" >"$STATE_DIR/users/$user"
  if alive kube-apiserver && [[ -f $STATE_DIR/node ]]; then
    log "already running ($(cat "$STATE_DIR/node")); kubeconfig: $STATE_DIR/kubeconfig"
    return 0
  fi
  ip=$(node_ip)
  pki "$ip"

  t=$(now)
  launch etcd nice -n 5 "$bin/etcd" --name pier-kube --data-dir "$STATE_DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "pier-kube=http://127.0.0.1:$ETCD_PEER_PORT" --listen-metrics-urls "http://127.0.0.1:$ETCD_METRICS_PORT" \
    --quota-backend-bytes=2147483648 --unsafe-no-fsync
  wait_for etcd 30 curl -sf "http://127.0.0.1:$ETCD_PORT/health"
  launch kube-apiserver nice -n 5 "$bin/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" --etcd-prefix=/pier-kube \
    --bind-address=0.0.0.0 --advertise-address="$ip" --secure-port="$APISERVER_PORT" \
    --tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key" \
    --client-ca-file="$p/ca.crt" --token-auth-file="$p/tokens.csv" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$p/sa.pub" --service-account-signing-key-file="$p/sa.key" \
    --service-cluster-ip-range="$SERVICE_CIDR" --authorization-mode=Node,RBAC --allow-privileged=true \
    --kubelet-client-certificate="$p/apiserver-kubelet-client.crt" --kubelet-client-key="$p/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$p/ca.crt" --kubelet-preferred-address-types=InternalIP,Hostname \
    --requestheader-client-ca-file="$p/ca.crt" --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="$p/front-proxy-client.crt" --proxy-client-key-file="$p/front-proxy-client.key" \
    --enable-aggregator-routing=true --profiling=false
  wait_for kube-apiserver 120 sh -c "curl -sf --cacert $p/ca.crt https://127.0.0.1:$APISERVER_PORT/readyz | grep -qx ok"
  launch kube-controller-manager nice -n 5 "$bin/kube-controller-manager" \
    --kubeconfig="$STATE_DIR/kubeconfig-kcm" --authentication-kubeconfig="$STATE_DIR/kubeconfig-kcm" \
    --authorization-kubeconfig="$STATE_DIR/kubeconfig-kcm" --bind-address=127.0.0.1 --secure-port="$KCM_PORT" \
    --use-service-account-credentials=true --service-account-private-key-file="$p/sa.key" --root-ca-file="$p/ca.crt" \
    --cluster-signing-cert-file="$p/ca.crt" --cluster-signing-key-file="$p/ca.key" \
    --service-cluster-ip-range="$SERVICE_CIDR" --cluster-cidr="$POD_CIDR" --allocate-node-cidrs=false \
    --leader-elect=false --controllers='*' --profiling=false
  launch kube-scheduler nice -n 5 "$bin/kube-scheduler" --kubeconfig="$STATE_DIR/kubeconfig-scheduler" \
    --authentication-kubeconfig="$STATE_DIR/kubeconfig-scheduler" --authorization-kubeconfig="$STATE_DIR/kubeconfig-scheduler" \
    --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --leader-elect=false --profiling=false
  wait_for kube-controller-manager 60 curl -sfk "https://127.0.0.1:$KCM_PORT/healthz"
  wait_for kube-scheduler 60 curl -sfk "https://127.0.0.1:$SCHED_PORT/healthz"
  log "control plane ready ($(since "$t")s)"

  local problem
  problem=$(node_problem)
  if [[ -n $problem ]]; then
    echo "control-plane only: $problem" >"$STATE_DIR/node"
    log "NO NODE: $problem; pods will not run"
  else
    start_node "$ip" "$bin"
    local addons
    addons=$("$HERE/build-addons.sh")
    start_coredns "$ip" "$bin" "$addons"
    start_metrics_server "$ip" "$bin" "$addons"
    start_ingress "$ip" "$bin" "$addons"
    start_storage "$bin" "$addons"
    start_certificates "$ip" "$bin" "$addons"
    start_registry "$bin"
    start_backup_store "$ip"
    echo ready >"$STATE_DIR/node"
  fi
  log "up in $(since "$started")s; export KUBECONFIG=$STATE_DIR/kubeconfig (kubectl: $bin/kubectl)"
}

# mkimage OUT.tar REPO:TAG ROOTFS ENTRYPOINT_JSON: a one-layer docker-archive, without docker
mkimage() {
  local out=$1 tag=$2 rootfs=$3 ep=$4 user=${5:-} w lsha csha
  w=$(mktemp -d)
  tar --numeric-owner --owner=0 --group=0 --sort=name --mtime=2020-01-01 -C "$rootfs" -cf "$w/layer.tar" .
  lsha=$(sha256sum "$w/layer.tar" | cut -d' ' -f1)
  mkdir "$w/$lsha"
  mv "$w/layer.tar" "$w/$lsha/layer.tar"
  printf '{"architecture":"amd64","os":"linux","created":"2020-01-01T00:00:00Z","config":{"Entrypoint":%s,"User":"%s","WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' "$ep" "$user" "$lsha" >"$w/config.json"
  csha=$(sha256sum "$w/config.json" | cut -d' ' -f1)
  mv "$w/config.json" "$w/$csha.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$csha" "$tag" "$lsha" >"$w/manifest.json"
  tar -C "$w" -cf "$out" manifest.json "$csha.json" "$lsha"
  rm -rf "$w"
}

start_node() {
  local ip=$1 bin=$2 t p="$STATE_DIR/pki" c="$STATE_DIR/containerd" restrict=false capeff ctr
  mkdir -p "$c" "$STATE_DIR/cni/net.d" "$STATE_DIR/kubelet/root"
  # Without CAP_SYS_RESOURCE runc cannot lower oom_score_adj (the sandbox asks for -998):
  # "runc create failed: unable to start container process: can't get final child's PID from pipe: EOF"
  capeff=$(awk '/^CapEff/{print $2}' /proc/self/status)
  (((0x$capeff >> 24) & 1)) || restrict=true
  cat >"$c/config.toml" <<TOML
version = 2
root = "$c/root"
state = "$c/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "$c/containerd.sock"
[ttrpc]
  address = "$c/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = $restrict
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$c/certs.d"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN_DIR"
    conf_dir = "$STATE_DIR/cni/net.d"
TOML
  # "firewall" accepts pod traffic in FORWARD: Docker sets its policy to DROP, and
  # br_netfilter sends bridged pod-to-pod traffic through it.
  cat >"$STATE_DIR/cni/net.d/10-pier-kube.conflist" <<CNI
{"cniVersion": "1.0.0", "name": "pier-kube", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}],
            "dataDir": "$STATE_DIR/cni/ipam"}},
  {"type": "firewall", "backend": "iptables"},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
CNI
  t=$(now)
  launch containerd containerd --config "$c/config.toml"
  ctr=(ctr -a "$c/containerd.sock" -n k8s.io)
  wait_for containerd 30 "${ctr[@]}" version
  local r
  r=$(mktemp -d)
  cp "$bin/pause" "$r/pause"
  mkimage "$STATE_DIR/pause.tar" "$PAUSE_IMAGE" "$r" '["/pause"]'
  rm -rf "$r"
  "${ctr[@]}" images import "$STATE_DIR/pause.tar" >/dev/null
  local img have=()
  for img in $IMAGES; do
    if docker image inspect "$img" >/dev/null 2>&1; then have+=("$img"); else log "image $img is not built (deploy/images/build.sh): not imported"; fi
  done
  ((${#have[@]} == 0)) || docker save "${have[@]}" | "${ctr[@]}" images import - >/dev/null
  log "containerd ready, images imported: ${have[*]} ($(since "$t")s)"

  cat >"$STATE_DIR/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $ip
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
containerRuntimeEndpoint: unix://$c/containerd.sock
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
tlsCertFile: $p/kubelet.crt
tlsPrivateKeyFile: $p/kubelet.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $p/ca.crt}
authorization: {mode: Webhook}
clusterDomain: cluster.local
clusterDNS: [$DNS_IP]
resolvConf: /etc/resolv.conf
evictionHard: {memory.available: 100Mi, nodefs.available: 2%, imagefs.available: 2%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
maxPods: 60
YAML
  t=$(now)
  launch kubelet nice -n 5 "$bin/kubelet" --config="$STATE_DIR/kubelet/config.yaml" \
    --kubeconfig="$STATE_DIR/kubeconfig-kubelet" --hostname-override="$NODE_NAME" --node-ip="$ip" \
    --root-dir="$STATE_DIR/kubelet/root"
  local k=("$bin/kubectl" --kubeconfig "$STATE_DIR/kubeconfig")
  wait_for kubelet 120 "${k[@]}" get node "$NODE_NAME"
  "${k[@]}" wait --for=condition=Ready "node/$NODE_NAME" --timeout=120s >/dev/null
  log "node $NODE_NAME ready ($(since "$t")s)"
  start_proxy "$ip" "$bin"
}

# kube-proxy in iptables mode: ClusterIPs (and NodePorts) of Services, the `kubernetes` one
# included, become DNAT rules to their endpoints. It leaves the host's sysctls alone
# (conntrack limits, route_localnet), and `stop` removes its chains (--cleanup).
start_proxy() {
  local ip=$1 bin=$2 t
  t=$(now)
  cat >"$STATE_DIR/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $STATE_DIR/kubeconfig-proxy}
mode: iptables
hostnameOverride: $NODE_NAME
bindAddress: $ip
clusterCIDR: $POD_CIDR
healthzBindAddress: 127.0.0.1:$PROXY_HEALTHZ_PORT
metricsBindAddress: 127.0.0.1:$PROXY_METRICS_PORT
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
YAML
  launch kube-proxy nice -n 5 "$bin/kube-proxy" --config="$STATE_DIR/kube-proxy.yaml"
  wait_for kube-proxy 60 curl -sf "http://127.0.0.1:$PROXY_HEALTHZ_PORT/healthz"
  service_ips_stay_here
  log "kube-proxy ready ($(since "$t")s)"
}

# A connection to a Service IP that kube-proxy has no rule for (a Service gone, or one of
# its syncs not done yet on a busy machine) would follow the default route off the machine:
# here an egress proxy answered such requests with a bodiless 404 (`server: keryx`), which
# the rolling upgrade's load saw as the API's. Refused here instead (a reset: clients retry
# a refused connection). These run after kube-proxy's DNAT, so a Service it routes has its
# endpoint's address by then and never matches.
service_ips_stay_here() {
  local chain
  for chain in OUTPUT FORWARD; do
    iptables -C "$chain" -d "$SERVICE_CIDR" -p tcp -j REJECT --reject-with tcp-reset 2>/dev/null ||
      iptables -I "$chain" -d "$SERVICE_CIDR" -p tcp -j REJECT --reject-with tcp-reset
    iptables -C "$chain" -d "$SERVICE_CIDR" -j REJECT 2>/dev/null || iptables -I "$chain" 2 -d "$SERVICE_CIDR" -j REJECT
  done
}

service_ips_released() {
  local chain
  for chain in OUTPUT FORWARD; do
    iptables -D "$chain" -d "$SERVICE_CIDR" -p tcp -j REJECT --reject-with tcp-reset 2>/dev/null || true
    iptables -D "$chain" -d "$SERVICE_CIDR" -j REJECT 2>/dev/null || true
  done
}

# A Service in kube-system without a selector whose one endpoint is this host: how pods and
# the API server reach what runs beside the control plane (CoreDNS, metrics-server).
host_service() { # bin name ip service-ports endpoint-ports [more of the Service's spec]
  "$1/kubectl" --kubeconfig "$STATE_DIR/kubeconfig" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Service
metadata: {name: $2, namespace: kube-system}
spec: {${6:+$6, }ports: $4}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: $2-host, namespace: kube-system, labels: {kubernetes.io/service-name: $2}}
addressType: IPv4
endpoints: [{addresses: ["$3"]}]
ports: $5
YAML
}

# CoreDNS (deploy/kube/build-addons.sh) on the host, as the control plane runs, as the
# cluster DNS: the kubelet gives pods $DNS_IP, the ClusterIP of kube-system/kube-dns, a
# Service without a selector whose EndpointSlice is the node's address, where CoreDNS
# answers cluster.local from the API (its kubernetes plugin, as the admin) and forwards
# every other name to the host's resolvers.
start_coredns() {
  local ip=$1 bin=$2 addons=$3 t
  t=$(now)
  mkdir -p "$STATE_DIR/coredns"
  cat >"$STATE_DIR/coredns/Corefile" <<COREFILE
.:53 {
    bind $ip
    errors
    health 127.0.0.1:$COREDNS_HEALTH_PORT
    ready 127.0.0.1:$COREDNS_READY_PORT
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $STATE_DIR/kubeconfig pier-kube
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    forward . /etc/resolv.conf
    cache 30
}
COREFILE
  launch coredns nice -n 5 "$addons/coredns" -conf "$STATE_DIR/coredns/Corefile"
  wait_for coredns 60 curl -sf "http://127.0.0.1:$COREDNS_READY_PORT/ready"
  local ports="[{name: dns, port: 53, protocol: UDP}, {name: dns-tcp, port: 53, protocol: TCP}]"
  host_service "$bin" kube-dns "$ip" "$ports" "$ports" "clusterIP: $DNS_IP"
  log "CoreDNS ready: cluster.local at $DNS_IP ($(since "$t")s)"
}

# metrics-server (deploy/kube/build-addons.sh) on the host, as the control plane runs: it
# scrapes the kubelet every 10 s and serves metrics.k8s.io, which the API server reaches
# through a selector-less Service whose endpoint is the host (aggregator routing goes to
# endpoints, not ClusterIPs). HorizontalPodAutoscalers then act on real CPU.
start_metrics_server() {
  local ip=$1 bin=$2 addons=$3 t k
  t=$(now)
  mkdir -p "$STATE_DIR/metrics-server"
  launch metrics-server nice -n 5 "$addons/metrics-server" --secure-port="$METRICS_PORT" --bind-address=0.0.0.0 \
    --cert-dir="$STATE_DIR/metrics-server" --kubeconfig="$STATE_DIR/kubeconfig" \
    --authentication-kubeconfig="$STATE_DIR/kubeconfig" --authorization-kubeconfig="$STATE_DIR/kubeconfig" \
    --kubelet-insecure-tls --kubelet-preferred-address-types=InternalIP --kubelet-use-node-status-port \
    --metric-resolution=10s --kubelet-request-timeout=5s
  wait_for metrics-server 60 curl -sfk "https://127.0.0.1:$METRICS_PORT/livez"
  host_service "$bin" metrics-server "$ip" "[{name: https, port: 443, targetPort: $METRICS_PORT, protocol: TCP}]" \
    "[{name: https, port: $METRICS_PORT, protocol: TCP}]"
  k=("$bin/kubectl" --kubeconfig "$STATE_DIR/kubeconfig")
  "${k[@]}" apply -f - >/dev/null <<YAML
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  group: metrics.k8s.io
  version: v1beta1
  service: {name: metrics-server, namespace: kube-system, port: 443}
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
YAML
  # The first scrape is one resolution (10 s) away: the node's metrics say it works.
  wait_for metrics-server 90 "${k[@]}" get --raw "/apis/metrics.k8s.io/v1beta1/nodes/$NODE_NAME"
  log "metrics-server ready: node metrics served ($(since "$t")s)"
}

# Traefik (deploy/kube/build-addons.sh) on the host as the ingress controller, watching the
# API as the admin: every Ingress of the default IngressClass `traefik` (those that name no
# class too) is served on the host's ports $INGRESS_HTTP_PORT (HTTP) and $INGRESS_HTTPS_PORT
# (HTTPS, with the Ingress's TLS Secret or its default certificate), to the endpoints of its
# backend Service: pod IPs, which the host reaches on the node's bridge, or a selector-less
# Service's endpoint (the activator). The default certificate is a wildcard for the cluster's
# apps domain ($APPS_DOMAIN), signed by a CA made here ($STATE_DIR/apps-ca.pem): compute's
# uptime checks trust it (PIER_EDGE_CA_FILE), as a real installation's ingress controller
# serves its apps domain's wildcard. $STATE_DIR/ingress holds the HTTPS address, as `env`
# prints it (PIER_KUBE_INGRESS_ADDR). Its Prometheus metrics, per router, with latency buckets
# on Pier's own bounds (every third: 1.73 times apart), are served on the node's address
# ($STATE_DIR/ingress-metrics, PIER_COMPUTE_INGRESS_METRICS_URLS): service metrics' requests.
start_ingress() {
  local ip=$1 bin=$2 addons=$3 t d="$STATE_DIR/traefik"
  t=$(now)
  mkdir -p "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=pier-kube apps CA" \
    -keyout "$d/apps-ca.key" -out "$STATE_DIR/apps-ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=*.$APPS_DOMAIN" -keyout "$d/apps.key" -out "$d/apps.csr" 2>/dev/null
  openssl x509 -req -in "$d/apps.csr" -CA "$STATE_DIR/apps-ca.pem" -CAkey "$d/apps-ca.key" -CAcreateserial -days 30 \
    -extfile <(printf 'subjectAltName=DNS:*.%s\nextendedKeyUsage=serverAuth\n' "$APPS_DOMAIN") -out "$d/apps.crt" 2>/dev/null
  cat >"$d/certificates.yaml" <<YAML
tls:
  stores:
    default:
      defaultCertificate: {certFile: "$d/apps.crt", keyFile: "$d/apps.key"}
YAML
  cat >"$d/traefik.yaml" <<YAML
global: {checkNewVersion: false, sendAnonymousUsage: false}
entryPoints:
  web: {address: "$ip:$INGRESS_HTTP_PORT"}
  websecure: {address: ":$INGRESS_HTTPS_PORT", http: {tls: {}}}
  ping: {address: "127.0.0.1:$INGRESS_PING_PORT"}
  metrics: {address: "$ip:$INGRESS_METRICS_PORT"}
ping: {entryPoint: ping}
metrics:
  prometheus:
    entryPoint: metrics
    addRoutersLabels: true
    addServicesLabels: false
    buckets: [0.0005, 0.000864, 0.00149299, 0.00257989, 0.00445805, 0.00770351, 0.0133117, 0.0230026, 0.0397484, 0.0686853, 0.118688, 0.205093, 0.354401, 0.612405, 1.05824, 1.82863, 3.15987, 5.46026, 9.43533, 16.3043]
providers:
  kubernetesIngress: {}
  file: {filename: "$d/certificates.yaml"}
log: {level: WARN}
YAML
  "$bin/kubectl" --kubeconfig "$STATE_DIR/kubeconfig" apply -f - >/dev/null <<YAML
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: traefik
  annotations: {ingressclass.kubernetes.io/is-default-class: "true"}
spec: {controller: traefik.io/ingress-controller}
YAML
  KUBECONFIG=$STATE_DIR/kubeconfig launch traefik nice -n 5 "$addons/traefik" --configFile="$d/traefik.yaml"
  wait_for traefik 60 curl -sf "http://127.0.0.1:$INGRESS_PING_PORT/ping"
  echo "$ip:$INGRESS_HTTPS_PORT" >"$STATE_DIR/ingress"
  echo "http://$ip:$INGRESS_METRICS_PORT/metrics" >"$STATE_DIR/ingress-metrics"
  log "Traefik ready: Ingresses served at http://$ip:$INGRESS_HTTP_PORT and https://$ip:$INGRESS_HTTPS_PORT ($(since "$t")s)"
}

# local-path-provisioner (deploy/kube/build-addons.sh) on the host, as the admin, behind the
# default StorageClass `local-path`: a claim is bound once its pod is scheduled
# (WaitForFirstConsumer) to a directory under $STATE_DIR/local-path on the node, made and
# removed by a helper pod (pier/tiny-http's BusyBox: no image is pulled here).
start_storage() {
  local bin=$1 addons=$2 t d="$STATE_DIR/local-path"
  t=$(now)
  mkdir -p "$d/volumes"
  cat >"$d/config.json" <<JSON
{"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": ["$d/volumes"]}]}
JSON
  cat >"$d/helperPod.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: helper-pod}
spec:
  containers:
    - {name: helper-pod, image: pier/tiny-http:1, imagePullPolicy: IfNotPresent}
YAML
  "$bin/kubectl" --kubeconfig "$STATE_DIR/kubeconfig" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: local-path-storage}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: local-path-provisioner, namespace: local-path-storage}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: local-path-config, namespace: local-path-storage}
data:
  setup: |-
    #!/bin/sh
    set -eu
    mkdir -m 0777 -p "\$VOL_DIR"
  teardown: |-
    #!/bin/sh
    set -eu
    rm -rf "\$VOL_DIR"
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: local-path
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: rancher.io/local-path
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
YAML
  launch local-path-provisioner nice -n 5 "$addons/local-path-provisioner" start \
    --kubeconfig "$STATE_DIR/kubeconfig" --namespace local-path-storage \
    --service-account-name local-path-provisioner --configmap-name local-path-config \
    --config "$d/config.json" --helper-pod-file "$d/helperPod.yaml" --helper-image pier/tiny-http:1
  sleep 1
  alive local-path-provisioner || { tail -20 "$STATE_DIR/logs/local-path-provisioner.log" >&2; die "local-path-provisioner exited"; }
  log "local-path-provisioner ready: StorageClass local-path, the default ($(since "$t")s)"
}

# Custom domains' certificates: cert-manager (build-addons.sh) on the host as the admin, and
# the ClusterIssuer `pier-acme` of an ACME server of the cluster's own, Pebble
# (pier/acme-test), which resolves names through a DNS server people and tests change with
# dynamic updates (BIND, pier/dns-test: zones $CERT_ZONES). Both are containers on Docker's
# default bridge. HTTP-01 is answered by cert-manager's solver pods (pier/acmesolver, made
# here from the add-on's binary) behind the Ingress cert-manager writes for Traefik, which
# serves port 80 on the node's address: where Pebble connects (its A record points there)
# and where cert-manager's own self-check, through the same DNS server, connects too.
start_certificates() {
  local ip=$1 bin=$2 addons=$3 t img dns_ip acme_ip pem k
  k=("$bin/kubectl" --kubeconfig "$STATE_DIR/kubeconfig")
  for img in pier/dns-test:1 pier/acme-test:1; do
    docker image inspect "$img" >/dev/null 2>&1 || { log "image $img is not built (deploy/images/build.sh): no cert-manager"; return 0; }
  done
  t=$(now)
  docker rm -f "$DNS_CONTAINER" "$ACME_CONTAINER" >/dev/null 2>&1 || true
  docker run -d --name "$DNS_CONTAINER" --label pier.kube=dns -e "ZONES=$CERT_ZONES" pier/dns-test:1 >/dev/null
  dns_ip=$(docker inspect -f '{{.NetworkSettings.IPAddress}}' "$DNS_CONTAINER")
  docker run -d --name "$ACME_CONTAINER" --label pier.kube=acme -e "PEBBLE_DNS=$dns_ip:53" -e "PEBBLE_HTTP_PORT=$INGRESS_HTTP_PORT" pier/acme-test:1 >/dev/null
  acme_ip=$(docker inspect -f '{{.NetworkSettings.IPAddress}}' "$ACME_CONTAINER")
  wait_until Pebble 60 docker exec "$ACME_CONTAINER" test -s /etc/pebble/listener.pem
  pem=$(docker exec "$ACME_CONTAINER" cat /etc/pebble/listener.pem)
  echo "$pem" >"$STATE_DIR/acme-ca.pem"
  wait_until Pebble 60 curl -sf --cacert "$STATE_DIR/acme-ca.pem" "https://$acme_ip:14000/dir" -o /dev/null

  local r
  r=$(mktemp -d)
  cp "$addons/acmesolver" "$r/acmesolver"
  mkimage "$STATE_DIR/acmesolver.tar" pier/acmesolver:1 "$r" '["/acmesolver"]' 65534
  rm -rf "$r"
  ctr -a "$STATE_DIR/containerd/containerd.sock" -n k8s.io images import "$STATE_DIR/acmesolver.tar" >/dev/null

  # Server-side: the CRDs are too large for client-side apply's annotation.
  "${k[@]}" apply --server-side --force-conflicts -f "$addons/cert-manager-crds/" >/dev/null
  "${k[@]}" wait --for=condition=Established crd/clusterissuers.cert-manager.io crd/certificates.cert-manager.io --timeout=60s >/dev/null
  "${k[@]}" create namespace cert-manager --dry-run=client -o yaml | "${k[@]}" apply -f - >/dev/null
  launch cert-manager nice -n 5 "$addons/cert-manager-controller" --kubeconfig="$STATE_DIR/kubeconfig" \
    --cluster-resource-namespace=cert-manager --acme-http01-solver-image=pier/acmesolver:1 \
    --acme-http01-solver-nameservers="$dns_ip:53" --v=1
  "${k[@]}" apply -f - >/dev/null <<YAML
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: pier-acme}
spec:
  acme:
    server: https://$acme_ip:14000/dir
    caBundle: $(echo "$pem" | base64 -w0)
    privateKeySecretRef: {name: pier-acme-account}
    solvers:
      - http01: {ingress: {ingressClassName: traefik}}
YAML
  "${k[@]}" wait --for=condition=Ready clusterissuer/pier-acme --timeout=60s >/dev/null
  echo "$dns_ip:53" >"$STATE_DIR/dns"
  log "cert-manager ready: ClusterIssuer pier-acme (Pebble at https://$acme_ip:14000/dir), DNS at $dns_ip:53 for $CERT_ZONES ($(since "$t")s)"
}

# The S3-compatible store databases keep their backups and WAL / binary-log archives in
# (pier/s3-test: versitygw over HTTPS with a certificate made at its start, naming the
# node's address): published on the node's address, port $S3_PORT, where the database pods
# and the databases service both reach it. Bucket pier-databases, keys made per start.
start_backup_store() {
  local ip=$1 t key secret
  docker image inspect pier/s3-test:1 >/dev/null 2>&1 || { log "image pier/s3-test:1 is not built (deploy/images/build.sh): no backup store for databases"; return 0; }
  t=$(now)
  docker rm -f "$S3_CONTAINER" >/dev/null 2>&1 || true
  key=pier$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
  secret=$(od -An -N18 -tx1 /dev/urandom | tr -d ' \n')
  docker run -d --name "$S3_CONTAINER" --label pier.kube=s3 -e "S3_ACCESS_KEY=$key" -e "S3_SECRET_KEY=$secret" \
    -e S3_BUCKETS=pier-databases -e "S3_HOSTNAME=$ip" -p "$ip:$S3_PORT:443" pier/s3-test:1 >/dev/null
  wait_until "backup store" 30 docker exec "$S3_CONTAINER" test -s /certs/cert.pem
  docker exec "$S3_CONTAINER" cat /certs/cert.pem >"$STATE_DIR/s3-ca.pem"
  # Any HTTP answer (an anonymous request is refused) means it is up.
  wait_until "backup store" 30 curl -s --cacert "$STATE_DIR/s3-ca.pem" -o /dev/null "https://$ip:$S3_PORT/"
  printf '%s\n%s\n%s\n' "https://$ip:$S3_PORT" "$key" "$secret" >"$STATE_DIR/s3"
  log "backup store ready at https://$ip:$S3_PORT, bucket pier-databases ($(since "$t")s)"
}

# The registry build Jobs push to and the node pulls from: Debian's docker-registry
# (pier/registry-test, anonymous: a test cluster's) on HTTPS at <container address>:5000
# with a certificate made at its start. containerd trusts that CA (certs.d/<host>/hosts.toml,
# read at each pull), build Jobs through the ConfigMap pier-registry-ca of the build
# namespace (PIER_BUILD_REGISTRY_CA). pier/tiny-http:1 is pushed to it as a base image a
# Dockerfile can start FROM (<registry>/pier/tiny-http:1), with skopeo (pier/image-push).
# Rootless BuildKit's newuidmap needs CAP_SYS_ADMIN in its bounding set on some kernels (this
# VM's 6.18 among them): tried here once in a container, and `env` says what to add.
start_registry() {
  local bin=$1 t img reg k
  k=("$bin/kubectl" --kubeconfig "$STATE_DIR/kubeconfig")
  for img in pier/registry-test:1 pier/image-push:1 pier/buildkit:1 pier/tiny-http:1; do
    docker image inspect "$img" >/dev/null 2>&1 || { log "image $img is not built (deploy/images/build.sh): no registry for builds"; return 0; }
  done
  t=$(now)
  docker rm -f "$REGISTRY_CONTAINER" >/dev/null 2>&1 || true
  docker run -d --name "$REGISTRY_CONTAINER" --label pier.kube=registry -e REGISTRY_ANONYMOUS=1 pier/registry-test:1 >/dev/null
  reg="$(docker inspect -f '{{.NetworkSettings.IPAddress}}' "$REGISTRY_CONTAINER"):5000"
  wait_until registry 30 docker exec "$REGISTRY_CONTAINER" test -s /certs/cert.pem
  docker exec "$REGISTRY_CONTAINER" cat /certs/cert.pem >"$STATE_DIR/registry-ca.pem"
  wait_until registry 30 curl -sf --cacert "$STATE_DIR/registry-ca.pem" "https://$reg/v2/"
  mkdir -p "$STATE_DIR/containerd/certs.d/$reg"
  cat >"$STATE_DIR/containerd/certs.d/$reg/hosts.toml" <<TOML
server = "https://$reg"
[host."https://$reg"]
  capabilities = ["pull", "resolve"]
  ca = "$STATE_DIR/registry-ca.pem"
TOML
  docker save pier/tiny-http:1 -o "$STATE_DIR/tiny-http.tar"
  chmod 0644 "$STATE_DIR/tiny-http.tar"
  docker run --rm -v "$STATE_DIR/tiny-http.tar:/image.tar:ro" -v "$STATE_DIR/registry-ca.pem:/certs/ca.crt:ro" \
    pier/image-push:1 skopeo copy --quiet --dest-cert-dir /certs docker-archive:/image.tar "docker://$reg/pier/tiny-http:1" >/dev/null
  rm -f "$STATE_DIR/tiny-http.tar"
  "${k[@]}" create namespace "$BUILD_NAMESPACE" --dry-run=client -o yaml | "${k[@]}" apply -f - >/dev/null
  "${k[@]}" -n "$BUILD_NAMESPACE" create configmap pier-registry-ca --from-file=ca.crt="$STATE_DIR/registry-ca.pem" \
    --dry-run=client -o yaml | "${k[@]}" apply -f - >/dev/null
  if docker run --rm --security-opt seccomp=unconfined --security-opt apparmor=unconfined pier/buildkit:1 \
    sh -c 'unshare -U sleep 3 & sleep 0.5; newuidmap $! 0 1000 1 1 100000 65536' >/dev/null 2>&1; then
    echo "" >"$STATE_DIR/buildkit-capabilities"
  else
    echo SYS_ADMIN >"$STATE_DIR/buildkit-capabilities"
  fi
  echo "$reg" >"$STATE_DIR/registry"
  log "registry ready at https://$reg (pier/tiny-http:1 pushed; BuildKit's added capabilities: $(cat "$STATE_DIR/buildkit-capabilities")) ($(since "$t")s)"
}

# ---------------------------------------------------------------- stop
stop_one() {
  local n=$1 pid i
  [[ -f $STATE_DIR/pids/$n ]] || return 0
  pid=$(cat "$STATE_DIR/pids/$n")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 75; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$STATE_DIR/pids/$n"
}

cmd_stop() {
  local user=${1:-} u others=0
  [[ -d $STATE_DIR ]] || return 0
  if [[ -n $user ]]; then
    rm -f "$STATE_DIR/users/$user"
    for u in "$STATE_DIR"/users/*; do
      [[ -e $u ]] || continue
      if kill -0 "$(basename "$u")" 2>/dev/null; then others=$((others + 1)); else rm -f "$u"; fi
    done
    if ((others)); then
      log "left running for $others other user(s)"
      return 0
    fi
  fi
  local t bin
  t=$(now)
  bin=$(cat "$STATE_DIR/bin" 2>/dev/null || true)
  stop_one cert-manager
  docker rm -f "$DNS_CONTAINER" "$ACME_CONTAINER" "$REGISTRY_CONTAINER" "$S3_CONTAINER" >/dev/null 2>&1 || true
  stop_one traefik
  stop_one local-path-provisioner
  stop_one metrics-server
  stop_one coredns
  stop_one kube-proxy
  service_ips_released
  # Its iptables chains (KUBE-SERVICES, KUBE-FORWARD, ...) outlive it: removed here.
  if [[ -x $bin/kube-proxy ]] && command -v iptables >/dev/null; then
    timeout 60 "$bin/kube-proxy" --cleanup >/dev/null 2>&1 || true
  fi
  stop_one kubelet
  # Stopping the kubelet leaves the pods' containers, network namespaces and mounts:
  # tear the sandboxes down through the CRI first.
  if alive containerd && [[ -x $bin/pier-cri-clean ]]; then
    "$bin/pier-cri-clean" "unix://$STATE_DIR/containerd/containerd.sock" 2>/dev/null || true
  fi
  stop_one containerd
  # The apiserver before etcd: stopped together it hangs retrying etcd.
  stop_one kube-scheduler
  stop_one kube-controller-manager
  stop_one kube-apiserver
  stop_one etcd
  # Leftover shims of a containerd that was killed, then mounts (deepest first), the bridge.
  pkill_shims
  { findmnt -rn -o TARGET 2>/dev/null | grep "^$STATE_DIR/" | sort -r || true; } |
    while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  ip link del "$BRIDGE" 2>/dev/null || true
  firewall_chains_down
  kubelet_chains_down
  rm -rf "$STATE_DIR" 2>/dev/null || { sleep 1; rm -rf "$STATE_DIR"; }
  log "stopped and removed $STATE_DIR ($(since "$t")s)"
}

# The chains the CNI firewall plugin adds (it never removes them), once no pod rule is left
# in them: another CNI user on this machine keeps its rules, and so the chains.
firewall_chains_down() {
  command -v iptables >/dev/null || return 0
  local rules
  rules=$(iptables -w -S CNI-FORWARD 2>/dev/null | grep -c '^-A' || true)
  [[ $rules == 1 ]] && [[ $(iptables -w -S CNI-ADMIN 2>/dev/null | grep -c '^-A' || true) == 0 ]] || return 0
  iptables -w -D FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD 2>/dev/null || true
  iptables -w -F CNI-FORWARD 2>/dev/null && iptables -w -X CNI-FORWARD 2>/dev/null || true
  iptables -w -X CNI-ADMIN 2>/dev/null || true
}

# The kubelet's own chains (its canary in mangle, nat and filter; KUBE-FIREWALL, which drops
# outside traffic to 127.0.0.0/8, in filter), which neither it nor kube-proxy --cleanup removes.
kubelet_chains_down() {
  command -v iptables >/dev/null || return 0
  local t
  for t in mangle nat filter; do iptables -w -t "$t" -X KUBE-KUBELET-CANARY 2>/dev/null || true; done
  iptables -w -t mangle -X KUBE-IPTABLES-HINT 2>/dev/null || true
  iptables -w -D INPUT -j KUBE-FIREWALL 2>/dev/null || true
  iptables -w -D OUTPUT -j KUBE-FIREWALL 2>/dev/null || true
  iptables -w -F KUBE-FIREWALL 2>/dev/null && iptables -w -X KUBE-FIREWALL 2>/dev/null || true
}

# containerd-shim processes of our containerd only (their -address names our socket).
pkill_shims() {
  local pid
  for pid in $(pgrep -f "containerd-shim.*-address $STATE_DIR/containerd/containerd.sock" 2>/dev/null || true); do
    kill -KILL "$pid" 2>/dev/null || true
  done
}

cmd_status() {
  local n
  [[ -f $STATE_DIR/node ]] && echo "node: $(cat "$STATE_DIR/node")"
  for n in etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy coredns metrics-server traefik local-path-provisioner cert-manager; do
    if alive "$n"; then printf '%-24s pid %s\n' "$n" "$(cat "$STATE_DIR/pids/$n")"; else printf '%-24s stopped\n' "$n"; fi
  done
}

# What `./pier up` (and a person) needs to run Pier against this cluster, as exports.
cmd_env() {
  [[ -f $STATE_DIR/kubeconfig ]] || die "no cluster: deploy/kube/cluster.sh start"
  echo "export KUBECONFIG=$STATE_DIR/kubeconfig"
  echo "export PIER_CLUSTER=kubernetes"
  echo "export PIER_KUBECONFIG=$STATE_DIR/kubeconfig"
  if [[ -f $STATE_DIR/ingress ]]; then
    local addr
    addr=$(cat "$STATE_DIR/ingress")
    echo "export PIER_EDGE_INGRESS_CLASS=traefik"
    # Compute runs on this host: the activator listens on the node's address, which the
    # ingress controller (on this host too) reaches.
    echo "export PIER_COMPUTE_ACTIVATOR_ADDRESS=${addr%:*}"
    echo "export PIER_KUBE_INGRESS_ADDR=$addr"
    # Services' urls under the domain of the ingress controller's default certificate;
    # compute reaches them (uptime) at its HTTPS port, trusting the CA that signed it.
    echo "export PIER_APPS_DOMAIN=$APPS_DOMAIN"
    echo "export PIER_EDGE_ADDRESSES=${addr%:*}"
    echo "export PIER_EDGE_HTTPS_PORT=${addr##*:}"
    echo "export PIER_EDGE_CA_FILE=$STATE_DIR/apps-ca.pem"
    # Service metrics' requests: what Traefik counted per router.
    [[ ! -f $STATE_DIR/ingress-metrics ]] || echo "export PIER_COMPUTE_INGRESS_METRICS_URLS=$(cat "$STATE_DIR/ingress-metrics")"
  fi
  if [[ -f $STATE_DIR/dns ]]; then
    # Custom domains: verified against the cluster's DNS server, certified by cert-manager
    # through its ClusterIssuer; an A record may point at the node's address (PIER_EDGE_ADDRESSES).
    echo "export PIER_DNS_RESOLVERS=$(cat "$STATE_DIR/dns")"
    echo "export PIER_EDGE_CLUSTER_ISSUER=pier-acme"
  fi
  # Databases: run by Pier itself from its images (this cluster has no database operator;
  # tests may install the operators' CRDs, which would otherwise choose the operator), reached
  # from outside on NodePorts (no load balancer here); clients in the pod network are inside.
  echo "export PIER_DATABASES_KUBERNETES_OPERATOR=none"
  echo "export PIER_DATABASES_KUBERNETES_EXTERNAL_SERVICE=NodePort"
  echo "export PIER_DATABASES_KUBERNETES_CLUSTER_NETWORKS=$POD_CIDR"
  if [[ -f $STATE_DIR/s3 ]]; then
    local s3
    mapfile -t s3 <"$STATE_DIR/s3"
    echo "export PIER_DATABASES_BACKUP_S3_ENDPOINT=${s3[0]}"
    echo "export PIER_DATABASES_BACKUP_S3_BUCKET=pier-databases"
    echo "export PIER_DATABASES_BACKUP_S3_ACCESS_KEY_ID=${s3[1]}"
    echo "export PIER_DATABASES_BACKUP_S3_SECRET_ACCESS_KEY=${s3[2]}"
    echo "export PIER_DATABASES_BACKUP_S3_CA_FILE=$STATE_DIR/s3-ca.pem"
  fi
  if [[ -f $STATE_DIR/registry ]]; then
    # Builds: Jobs of pier/buildkit push to the cluster's registry, trusted through its CA.
    echo "export PIER_BUILD_REGISTRY=$(cat "$STATE_DIR/registry")/$BUILD_NAMESPACE"
    echo "export PIER_BUILD_NAMESPACE=$BUILD_NAMESPACE"
    echo "export PIER_BUILD_REGISTRY_CA=pier-registry-ca"
    echo "export PIER_BUILDKIT_IMAGE=pier/buildkit:1"
    echo "export PIER_BUILDKIT_ADD_CAPABILITIES=$(cat "$STATE_DIR/buildkit-capabilities")"
  fi
}

cmd=${1:-}
shift || true
user=
if [[ ${1:-} == --user ]]; then user=${2:?--user needs a PID}; fi
mkdir -p "$(dirname "$STATE_DIR")"
case $cmd in
  start | stop)
    # One start or stop at a time on this machine.
    exec 9>"$STATE_DIR.lock"
    flock 9
    "cmd_$cmd" "$user"
    ;;
  status) cmd_status ;;
  env) cmd_env ;;
  *)
    sed -n '2,25s/^# \{0,1\}//p' "$0"
    exit 2
    ;;
esac
