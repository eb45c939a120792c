#!/usr/bin/env bash
# A Kubernetes cluster on this machine, from Kubernetes' own sources and
# Debian's etcd and containerd, for running `rackbench k8s run` for real
# (docs/SCALING.md, "Running on this machine's cluster"). Needs root.
#
#   scripts/cluster.sh build             the Kubernetes binaries and pause, once
#   scripts/cluster.sh up [--nodes 1|2]  build, then start the cluster; prints
#                                        `export KUBECONFIG=...`
#   scripts/cluster.sh down              stop it and remove all it made
#   scripts/cluster.sh status            what runs
#   scripts/cluster.sh env               the values a caller needs (KEY=VALUE)
#
# Binaries: k8s.io/kubernetes $K8S_VERSION from the Go module proxy, built
# with Go into $RACKBENCH_CACHE/k8s/$K8S_VERSION/bin (default cache
# ${XDG_CACHE_HOME:-$HOME/.cache}/rackbench) and reused from there. The
# module's go.mod replaces the k8s.io/* staging modules with
# ./staging/src/..., which a module zip lacks: the build uses a copy with
# the replace block dropped and the staging modules pinned at their
# published $STAGING_VERSION. Packages: etcd-server, containerd, runc,
# containernetworking-plugins, openssl, iproute2 (Debian 12); their own
# services are never used: this script starts its own etcd and containerds
# with their own state, sockets and ports.
#
# Everything lives under one state dir, $RACKBENCH_CLUSTER_DIR (default
# ${XDG_RUNTIME_DIR:-/tmp}/rackbench-cluster): certificates (pki/),
# kubeconfigs, etcd's data, each node's containerd and kubelet roots,
# logs/ and pids/. The processes:
#   etcd                       127.0.0.1:23790 (client), :23800 (peer), plain HTTP
#   kube-apiserver             https://10.200.0.1:16443, authorization Node,RBAC
#   kube-controller-manager    no port; service-account credentials; the CA signs
#   kube-scheduler             no port
#   node-1: containerd, kubelet  on the host, node address 10.200.0.1
#   node-2: containerd, kubelet  (--nodes 2) in the network namespace
#                              rackbench-node-2, address 10.200.0.2, reached
#                              over the veth pair rb-veth0 (host, 10.200.0.1)
#                              and rb-veth1 (namespace)
# The namespace and veth pair are made with one node too: 10.200.0.1 is
# the address every component and pod uses for the host. No CNI network:
# pods use hostNetwork (`rackbench k8s run --host-network`); the CNI
# configuration holds only the loopback plugin, so that containerd reports
# its network ready (pods without hostNetwork get a loopback interface
# only). Each kubelet's pods live under the cgroup /rackbench-node-N, so
# that two kubelets on one kernel do not share /kubepods. cgroup v1 (as
# on the machine this was written on; failCgroupV1: false) or v2 only
# (provided for, not tried).
#
# Images: no registry: the pause image (build/pause/linux/pause.c, static)
# and rackbench:dev (target/release/rackbench, or $RACKBENCH_BIN, with its
# shared libraries) are written by scripts/oci-image.sh and imported into
# each node's containerd. The Job needs --image rackbench:dev (present, so
# the kubelet pulls nothing).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
home=$(dirname "$here")

K8S_VERSION=v1.34.2
STAGING_VERSION=v0.34.2
PAUSE_IMAGE=registry.k8s.io/pause:3.10.1
RACKBENCH_IMAGE=rackbench:dev
cache=${RACKBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rackbench}/k8s/$K8S_VERSION
bin=$cache/bin
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
COMPONENTS="kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl"

state=${RACKBENCH_CLUSTER_DIR:-${XDG_RUNTIME_DIR:-/tmp}/rackbench-cluster}
NETNS=rackbench-node-2
HOST_IF=rb-veth0
NS_IF=rb-veth1
HOST_IP=10.200.0.1
NODE2_IP=10.200.0.2
API_PORT=16443
ETCD_CLIENT=127.0.0.1:23790
ETCD_PEER=127.0.0.1:23800
SERVICE_CIDR=10.96.0.0/24

say() { echo "cluster: $*" >&2; }
die() { say "$*"; exit 1; }

# --- build -----------------------------------------------------------------

module_dir() {
  GOFLAGS=-mod=mod "$GO" mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}

# The Kubernetes binaries, each built once and kept in $bin.
build_k8s() {
  local missing="" c
  for c in $COMPONENTS; do [ -x "$bin/$c" ] || missing="$missing $c"; done
  if [ -n "$missing" ]; then
    [ -x "$GO" ] || die "no Go toolchain (set GO=/path/to/go): it builds Kubernetes $K8S_VERSION"
    local dir src=$cache/src
    dir=$(module_dir)
    [ -d "$dir" ] || die "go mod download k8s.io/kubernetes@$K8S_VERSION gave no directory"
    if [ ! -f "$src/.copied" ]; then
      rm -rf "$src"; mkdir -p "$src"
      cp -a "$dir/." "$src/"; chmod -R u+w "$src"
      rm -f "$src/go.work" "$src/go.work.sum"
      # Drop `replace ( ... )`; pin every `k8s.io/x v0.0.0` at the staging version.
      sed -i -e '/^replace (/,/^)/d' \
        -e "s#^\(\tk8s.io/[a-z0-9-]*\) v0\.0\.0\$#\1 $STAGING_VERSION#" "$src/go.mod"
      touch "$src/.copied"
    fi
    # What `--version` prints and what node registration and the version
    # skew checks read (k8s.io/component-base/version/base.go).
    local pkg=k8s.io/component-base/version major minor
    major=$(echo "${K8S_VERSION#v}" | cut -d. -f1); minor=$(echo "$K8S_VERSION" | cut -d. -f2)
    local ldflags="-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
    mkdir -p "$bin"
    for c in $missing; do
      say "building $c $K8S_VERSION into $bin"
      (cd "$src" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 "$GO" build -trimpath \
        -ldflags "$ldflags" -o "$bin/$c.tmp" "./cmd/$c")
      mv "$bin/$c.tmp" "$bin/$c"
    done
  fi
  build_pause
}

# The pause container's binary and image, from build/pause/linux/pause.c.
build_pause() {
  if [ ! -x "$bin/pause" ]; then
    local dir; dir=$(module_dir)
    mkdir -p "$bin"
    gcc -Os -Wall -Werror -static -DVERSION="$K8S_VERSION" -o "$bin/pause.tmp" "$dir/build/pause/linux/pause.c"
    strip "$bin/pause.tmp"; mv "$bin/pause.tmp" "$bin/pause"
  fi
  [ -f "$bin/pause.tar" ] || "$here/oci-image.sh" pause "$bin/pause.tar" "$PAUSE_IMAGE" "$bin/pause"
}

# --- certificates and kubeconfigs ------------------------------------------

# cert NAME SUBJECT EXTENSIONS: NAME.key and NAME.crt signed by the CA.
cert() {
  local name=$1 subj=$2 ext=$3 pki=$state/pki
  openssl req -new -newkey rsa:2048 -nodes -keyout "$pki/$name.key" -subj "$subj" \
    -out "$pki/$name.csr" 2>/dev/null
  printf '%b\n' "$ext" > "$pki/$name.ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
    -CAcreateserial -days 30 -sha256 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr" "$pki/$name.ext"
}

make_pki() {
  local pki=$state/pki nodes=$1 i
  mkdir -p "$pki"
  openssl req -x509 -new -nodes -newkey rsa:2048 -keyout "$pki/ca.key" -out "$pki/ca.crt" \
    -days 30 -subj /CN=rackbench-cluster-ca 2>/dev/null
  local client='basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth'
  local server='basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth'
  cert apiserver /CN=kube-apiserver \
    "$server\nsubjectAltName=IP:127.0.0.1,IP:$HOST_IP,IP:$NODE2_IP,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
  cert admin "/O=system:masters/CN=rackbench-admin" "$client"
  cert controller-manager /CN=system:kube-controller-manager "$client"
  cert scheduler /CN=system:kube-scheduler "$client"
  for i in $(seq 1 "$nodes"); do
    cert "node-$i" "/O=system:nodes/CN=system:node:node-$i" "$client"
    cert "node-$i-serving" "/CN=node-$i" "$server\nsubjectAltName=IP:$(node_ip "$i"),DNS:node-$i"
  done
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  chmod 0600 "$pki"/*.key
}

# kubeconfig FILE CERT: a kubeconfig for the API server as CERT's subject.
kubeconfig() {
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: rackbench
  cluster:
    server: https://$HOST_IP:$API_PORT
    certificate-authority: $state/pki/ca.crt
users:
- name: $2
  user:
    client-certificate: $state/pki/$2.crt
    client-key: $state/pki/$2.key
contexts:
- name: rackbench
  context: {cluster: rackbench, user: $2}
current-context: rackbench
EOF
}

node_ip() { if [ "$1" = 1 ]; then echo "$HOST_IP"; else echo "$NODE2_IP"; fi; }

# --- processes --------------------------------------------------------------

# start NAME [NETNS] -- CMD...: CMD in its own session (its pid is its
# process group), its output in logs/NAME.log, its pid in pids/NAME.
start() {
  local name=$1 ns=$2; shift 3
  if [ -n "$ns" ]; then
    setsid nsenter --net="/run/netns/$ns" -- "$@" > "$state/logs/$name.log" 2>&1 < /dev/null &
  else
    setsid "$@" > "$state/logs/$name.log" 2>&1 < /dev/null &
  fi
  echo $! > "$state/pids/$name"
}

alive() { [ -f "$state/pids/$1" ] && kill -0 "$(cat "$state/pids/$1")" 2>/dev/null; }

# wait_for WHAT SECONDS CMD...: until CMD succeeds; a component that died
# on the way is named with its log's last lines.
wait_for() {
  local what=$1 secs=$2 t=0 name; shift 2
  until "$@" >/dev/null 2>&1; do
    for name in $(ls "$state/pids"); do
      alive "$name" && continue
      tail -n 15 "$state/logs/$name.log" >&2 || true
      die "$name exited while waiting for $what (log: $state/logs/$name.log)"
    done
    t=$((t + 1))
    [ "$t" -le "$((secs * 2))" ] || die "$what not ready after $secs s (logs: $state/logs/)"
    sleep 0.5
  done
}

kctl() { "$bin/kubectl" --kubeconfig "$state/admin.kubeconfig" --request-timeout=10s "$@"; }

cgroup_v2_only() { [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; }

# The hierarchies a kubelet and runc make cgroups in: v1's controllers,
# the named systemd one and, on a hybrid machine, the v2 tree beside them
# (runc makes its groups there too); or the single v2 tree.
cgroup_roots() {
  if cgroup_v2_only; then echo /sys/fs/cgroup; return; fi
  local d
  for d in /sys/fs/cgroup/*/; do
    d=${d%/}
    case "$(stat -fc %T "$d")" in cgroupfs|cgroup2fs) echo "$d" ;; esac
  done
  return 0
}

# --- the cluster -------------------------------------------------------------

make_network() {
  ip netns add "$NETNS"
  ip link add "$HOST_IF" type veth peer name "$NS_IF"
  ip link set "$NS_IF" netns "$NETNS"
  ip addr add "$HOST_IP/24" dev "$HOST_IF"
  ip link set "$HOST_IF" up
  ip netns exec "$NETNS" ip addr add "$NODE2_IP/24" dev "$NS_IF"
  ip netns exec "$NETNS" ip link set "$NS_IF" up
  ip netns exec "$NETNS" ip link set lo up
}

start_control_plane() {
  local pki=$state/pki
  mkdir -p "$state/etcd"
  start etcd "" -- etcd --name rackbench --data-dir "$state/etcd" \
    --listen-client-urls "http://$ETCD_CLIENT" --advertise-client-urls "http://$ETCD_CLIENT" \
    --listen-peer-urls "http://$ETCD_PEER" --initial-advertise-peer-urls "http://$ETCD_PEER" \
    --initial-cluster "rackbench=http://$ETCD_PEER" --initial-cluster-state new
  wait_for etcd 30 curl -fsS "http://$ETCD_CLIENT/health"
  start kube-apiserver "" -- "$bin/kube-apiserver" \
    --etcd-servers "http://$ETCD_CLIENT" \
    --bind-address "$HOST_IP" --advertise-address "$HOST_IP" --secure-port "$API_PORT" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --kubelet-preferred-address-types InternalIP \
    --profiling=false
  wait_for "the API server" 120 kctl get --raw /readyz
  start kube-controller-manager "" -- "$bin/kube-controller-manager" \
    --kubeconfig "$state/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$state/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$state/controller-manager.kubeconfig" \
    --secure-port 0 --leader-elect=false --use-service-account-credentials \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" --profiling=false \
    --flex-volume-plugin-dir "$state/flexvolume"
  start kube-scheduler "" -- "$bin/kube-scheduler" \
    --kubeconfig "$state/scheduler.kubeconfig" \
    --authentication-kubeconfig "$state/scheduler.kubeconfig" \
    --authorization-kubeconfig "$state/scheduler.kubeconfig" \
    --secure-port 0 --leader-elect=false --profiling=false
}

# start_node I: node-I's containerd (its images imported) and kubelet.
start_node() {
  local i=$1 name=node-$1 ip ns="" d root
  d=$state/$name
  ip=$(node_ip "$i")
  [ "$i" = 1 ] || ns=$NETNS
  mkdir -p "$d/containerd" "$d/cni" "$d/kubelet" "$d/pod-logs"
  # The loopback plugin only: containerd reports the network ready, and
  # hostNetwork pods need no more.
  printf '{"cniVersion":"0.4.0","name":"rackbench-loopback","plugins":[{"type":"loopback"}]}\n' \
    > "$d/cni/10-loopback.conflist"
  # Without CAP_SYS_RESOURCE (this VM withholds it) no process may lower
  # its oom_score_adj, and runc fails to start a Guaranteed pod's
  # containers (the kubelet asks for -998: "failed to update
  # /proc/self/oom_score_adj: Permission denied"); containerd then keeps
  # every container at or above its own.
  local restrict_oom=false
  sh -c 'echo -1 > /proc/self/oom_score_adj' 2>/dev/null || restrict_oom=true
  cat > "$d/containerd/config.toml" <<EOF
version = 2
root = "$d/containerd/root"
state = "$d/containerd/state"
[grpc]
  address = "$d/containerd.sock"
[ttrpc]
  address = "$d/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$d/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = $restrict_oom
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$d/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$d/cni"
EOF
  start "$name-containerd" "$ns" -- containerd --config "$d/containerd/config.toml"
  wait_for "$name's containerd" 30 ctr --address "$d/containerd.sock" version
  ctr --address "$d/containerd.sock" -n k8s.io images import "$bin/pause.tar" >/dev/null
  ctr --address "$d/containerd.sock" -n k8s.io images import "$state/rackbench-image.tar" >/dev/null
  # The kubelet's pods go under /rackbench-node-I (it must exist).
  for root in $(cgroup_roots); do mkdir -p "$root/rackbench-$name"; done
  local v1=""
  cgroup_v2_only || v1="failCgroupV1: false"
  cat > "$d/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $ip
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $state/pki/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $state/pki/$name-serving.crt
tlsPrivateKeyFile: $state/pki/$name-serving.key
containerRuntimeEndpoint: unix://$d/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: /rackbench-$name
failSwapOn: false
$v1
makeIPTablesUtilChains: false
podLogsDir: $d/pod-logs
volumePluginDir: $d/kubelet/volume-plugins
maxPods: 20
podPidsLimit: -1
# Images come from no registry: none may be collected.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
EOF
  kubeconfig "$state/$name.kubeconfig" "$name"
  start "$name-kubelet" "$ns" -- "$bin/kubelet" --config "$d/kubelet/config.yaml" \
    --kubeconfig "$state/$name.kubeconfig" --root-dir "$d/kubelet" --cert-dir "$d/kubelet/pki" \
    --hostname-override "$name" --node-ip "$ip"
}

nodes_ready() {
  local want=$1 ready
  ready=$(kctl get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
    grep -c '^True$' || true)
  [ "$ready" -ge "$want" ]
}

up() {
  local nodes=1
  while [ $# -gt 0 ]; do
    case "$1" in
      --nodes) nodes=${2:-}; shift 2 ;;
      --nodes=*) nodes=${1#*=}; shift ;;
      *) die "up: unknown argument '$1' (up [--nodes 1|2])" ;;
    esac
  done
  case "$nodes" in 1|2) ;; *) die "--nodes is 1 or 2, not '$nodes'" ;; esac
  [ "$(id -u)" = 0 ] || die "up needs root (network namespace, mounts, cgroups)"
  [ ! -e "$state" ] || die "$state exists: a cluster is up (scripts/cluster.sh status) or was left; run scripts/cluster.sh down"
  local c
  for c in etcd curl containerd ctr runc nsenter ip openssl; do
    command -v "$c" >/dev/null || die "no $c: apt-get install etcd-server containerd runc openssl iproute2 util-linux"
  done
  [ -x /usr/lib/cni/loopback ] || die "no /usr/lib/cni/loopback: apt-get install containernetworking-plugins"
  local rb=${RACKBENCH_BIN:-$home/target/release/rackbench}
  [ -x "$rb" ] || die "no $rb for the rackbench image: make build (or set RACKBENCH_BIN)"
  build_k8s
  mkdir -p "$state/logs" "$state/pids"
  # Made outside the state dir when missing, so down removes them then:
  # /run/netns (ip netns add mounts it on itself), /run/containerd/s (the
  # shims' sockets, a fixed path in containerd 1.6) and
  # /var/lib/kubelet/device-plugins (the kubelets' device plugin socket,
  # a fixed path in the kubelet whatever its --root-dir).
  for c in /run/netns /run/containerd /var/lib/kubelet; do
    [ -e "$c" ] || echo "$c" >> "$state/made-outside"
  done
  echo "$nodes" > "$state/nodes"
  "$here/oci-image.sh" rackbench "$state/rackbench-image.tar" "$RACKBENCH_IMAGE" "$rb"
  make_pki "$nodes"
  kubeconfig "$state/admin.kubeconfig" admin
  kubeconfig "$state/controller-manager.kubeconfig" controller-manager
  kubeconfig "$state/scheduler.kubeconfig" scheduler
  make_network
  start_control_plane
  for c in $(seq 1 "$nodes"); do start_node "$c"; done
  wait_for "$nodes node(s) Ready" 180 nodes_ready "$nodes"
  # The default service account, which every pod needs, comes from the
  # controller manager.
  wait_for "the default service account" 60 kctl get serviceaccount default -n default
  say "up: $nodes node(s) Ready, Kubernetes $K8S_VERSION, image $RACKBENCH_IMAGE; the host is $HOST_IP"
  echo "export KUBECONFIG=$state/admin.kubeconfig PATH=$bin:\$PATH"
}

# --- down and status -------------------------------------------------------------

# stop NAME: SIGTERM to its pid and process group, SIGKILL after 10 s.
stop() {
  local f=$state/pids/$1 pid t=0
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null && [ $t -lt 20 ]; do sleep 0.5; t=$((t + 1)); done
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  rm -f "$f"
}

# Processes whose command line names the state dir (the containerd shims
# started by our containerds; their pods' processes are in our cgroups).
state_pids() {
  local p
  for p in /proc/[0-9]*; do
    tr '\0' ' ' 2>/dev/null < "$p/cmdline" | grep -qF -- "$state/" && echo "${p#/proc/}"
  done
  return 0
}

# Processes in the cgroups under /rackbench-node-*.
cgroup_pids() {
  local root
  for root in $(cgroup_roots); do
    find "$root"/rackbench-node-* -name cgroup.procs -exec cat {} + 2>/dev/null || true
  done | sort -u
}

down() {
  [ -d "$state" ] || { say "down: nothing at $state"; remove_network; remove_cgroups; return 0; }
  local n
  # The kubelets first (they would restart the pods), then the pods'
  # processes, the shims, the containerds, and the control plane.
  for n in node-2-kubelet node-1-kubelet; do stop "$n"; done
  local pids
  pids=$(cgroup_pids)
  [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
  for n in node-2-containerd node-1-containerd; do stop "$n"; done
  pids=$(state_pids)
  [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
  for n in kube-scheduler kube-controller-manager kube-apiserver etcd; do stop "$n"; done
  sleep 0.5
  # Mounts under the state dir (containerd's rootfs and shm, the
  # kubelet's volumes), deepest first.
  local m t=0
  while m=$(awk -v s="$state/" 'index($5, s) == 1 { print $5 }' /proc/self/mountinfo | sort -r); [ -n "$m" ]; do
    for n in $m; do umount "$n" 2>/dev/null || umount -l "$n" 2>/dev/null || true; done
    t=$((t + 1)); [ $t -lt 5 ] || { say "still mounted: $m"; break; }
  done
  remove_cgroups
  # The kubelet's links to container logs in /var/log/containers.
  if [ -d /var/log/containers ]; then
    for n in /var/log/containers/*; do
      [ -L "$n" ] && case "$(readlink "$n")" in "$state"/*) rm -f "$n" ;; esac
    done
    rmdir /var/log/containers 2>/dev/null || true
  fi
  remove_network
  remove_outside
  rm -rf "$state"
  local left
  left=$(leftovers)
  [ -z "$left" ] || die "down left: $left"
  say "down: stopped and removed"
}

# The pods' cgroups (empty once their processes are gone), deepest first.
remove_cgroups() {
  local root n
  for root in $(cgroup_roots); do
    for n in "$root"/rackbench-node-*; do
      [ -d "$n" ] && find "$n" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done
  done
}

# What up made outside the state dir, if it is empty now.
remove_outside() {
  local d
  [ -f "$state/made-outside" ] || return 0
  while read -r d; do
    case "$d" in
      /run/netns) umount /run/netns 2>/dev/null || true; rmdir /run/netns 2>/dev/null || true ;;
      /run/containerd)
        # A shim killed by down leaves its socket; no process listens on it.
        local sock
        for sock in /run/containerd/s/*; do
          [ -S "$sock" ] && ! grep -qF " $sock" /proc/net/unix && rm -f "$sock"
        done
        rmdir /run/containerd/s /run/containerd 2>/dev/null || true ;;
      /var/lib/kubelet)
        rm -f /var/lib/kubelet/device-plugins/kubelet.sock
        rmdir /var/lib/kubelet/device-plugins /var/lib/kubelet 2>/dev/null || true ;;
    esac
  done < "$state/made-outside"
}

remove_network() {
  ip link del "$HOST_IF" 2>/dev/null || true
  ip netns del "$NETNS" 2>/dev/null || true
}

# What down must not leave, one line each (empty when clean).
leftovers() {
  local p root
  p=$(state_pids | tr '\n' ' ')
  [ -z "$p" ] || echo "processes $p"
  grep -F " $state/" /proc/self/mountinfo | awk '{print "mount " $5}' || true
  [ ! -e "/run/netns/$NETNS" ] || echo "netns $NETNS"
  ! ip link show "$HOST_IF" >/dev/null 2>&1 || echo "link $HOST_IF"
  for root in $(cgroup_roots); do
    for p in "$root"/rackbench-node-*; do [ ! -d "$p" ] || echo "cgroup $p"; done
  done
  [ ! -e "$state" ] || echo "dir $state"
}

status() {
  if [ ! -d "$state" ]; then
    say "down (no $state)"
    return 3
  fi
  local f name all=0
  for f in "$state"/pids/*; do
    [ -f "$f" ] || continue
    name=$(basename "$f")
    if alive "$name"; then echo "$name: running, pid $(cat "$f")"; else echo "$name: not running (log: $state/logs/$name.log)"; all=1; fi
  done
  kctl get nodes -o wide 2>&1 || all=1
  echo "export KUBECONFIG=$state/admin.kubeconfig PATH=$bin:\$PATH"
  return $all
}

case "${1:-}" in
  build) build_k8s ;;
  up) shift; up "$@" ;;
  down) down ;;
  status) status ;;
  env) printf 'KUBECONFIG=%s\nBIN=%s\nHOST_IP=%s\nIMAGE=%s\nSTATE=%s\nVERSION=%s\n' \
      "$state/admin.kubeconfig" "$bin" "$HOST_IP" "$RACKBENCH_IMAGE" "$state" "$K8S_VERSION" ;;
  leftovers) leftovers ;;
  *) die "usage: $0 build | up [--nodes 1|2] | down | status | env | leftovers" ;;
esac
