#!/usr/bin/env bash
# The committed run of `rackbench k8s run` on this machine's two-node
# Kubernetes (README.md). Run from the repository's top as root, after
# `cargo build --release --locked` and `scripts/cluster.sh build`:
#   bench/runs/2026-11-28-k8s-cluster/run.sh
# Writes into this directory; leaves nothing running.
set -euo pipefail

out=$(cd "$(dirname "$0")" && pwd)
rb=$PWD/target/release/rackbench
port=18080
eval "$(scripts/cluster.sh env | sed 's/^/cl_/')"

# `up` from warm (binaries cached), timed.
start=$(date +%s.%N)
scripts/cluster.sh up --nodes 2 > "$out/up.txt" 2>&1
end=$(date +%s.%N)
echo "up --nodes 2, binaries cached: $(echo "$end - $start" | bc) s" > "$out/up-time.txt"
export KUBECONFIG=$cl_KUBECONFIG PATH=$cl_BIN:$PATH
trap 'kill "$server" "$dump" 2>/dev/null || true; scripts/cluster.sh down' EXIT

{
  kubectl version 2>&1
  etcd --version | head -1
  containerd --version
  runc --version | head -1
  uname -r
} > "$out/versions.txt"
kubectl get nodes -o wide > "$out/nodes.txt"

# The control plane and nodes at rest: CPU (all threads, user + system)
# and resident memory of every process up started, over 30 s.
sleep 10
tick=$(getconf CLK_TCK)
declare -A t0
for f in "$cl_STATE"/pids/*; do t0[$(basename "$f")]=$(awk '{print $14 + $15}' "/proc/$(cat "$f")/stat"); done
sleep 30
{
  printf '%-26s %12s %8s\n' process cpu_pct_30s rss_mib
  for f in "$cl_STATE"/pids/*; do
    n=$(basename "$f"); p=$(cat "$f")
    t1=$(awk '{print $14 + $15}' "/proc/$p/stat")
    printf '%-26s %12.2f %8.1f\n' "$n" "$(echo "($t1 - ${t0[$n]}) * 100 / $tick / 30" | bc -l)" \
      "$(awk '/VmRSS/ { print $2 / 1024 }' "/proc/$p/status")"
  done
} > "$out/at-rest.txt"

# The server under test on the host's cluster address; each connection's
# SYN (lo for node 1's pods, rb-veth0 for node 2's) with its time.
"$rb" serve-test --listen "$cl_HOST_IP:$port" > /dev/null 2> "$out/server.txt" &
server=$!
tcpdump -i any -n -tt -l "tcp dst port $port and tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn" \
  > "$out/syn.txt" 2> /dev/null &
dump=$!
sleep 2

rm -rf "$out/job"
"$rb" k8s run --segments 2 --image "$cl_IMAGE" --name cluster-run --host-network \
  --spread required --cpu 1 --memory 256Mi --start-in 30s --deadline 10m --out "$out/job" \
  -- load "http://$cl_HOST_IP:$port/" -c 8 -n 200000 --warmup 0s > "$out/run.txt" 2>&1
kubectl get pods -o wide > "$out/pods.txt"
kill "$dump"; kill "$server"; wait "$server" || true
