#!/usr/bin/env bash
# What the telemetry middleware (issue 15) costs on hello: paired,
# interleaved runs of puma serving ruby/apps/hello.ru bare (off) and inside
# the telemetry wrapper (on), the order alternating pair by pair (off-on,
# on-off, ...) so drift on a shared machine falls on both sides. Each run
# starts a fresh puma, warms up, then measures with `rackbench load`.
#
# Usage: bench/telemetry-overhead.sh [options]
#   --pairs N        pairs of runs (default 5)
#   --duration S     counted seconds per run (default 3)
#   --warmup S       warm-up seconds per run (default 1)
#   --connections N  (default 8)
#   --threads N      puma threads, single mode (default 4)
#   --out DIR        default bench/runs/$(date +%F)-telemetry-overhead
# Environment: RACKBENCH = rackbench binary (default target/release/rackbench).
# Writes OUT/runs.csv (one row per run), OUT/summary.md (per-pair ratios,
# median), OUT/commands.txt and OUT/raw/ (load JSON and telemetry lines).
#
# The wrapper is rendered here with sed from ruby/telemetry/wrapper.ru the
# way src/telemetry's write_wrapper renders it (paths quoted).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
pairs=5
duration=3
warmup=1
connections=8
threads=4
out=""
RACKBENCH=${RACKBENCH:-$root/target/release/rackbench}

while [ $# -gt 0 ]; do
  case "$1" in
    --pairs) pairs=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || out="$root/bench/runs/$(date +%F)-telemetry-overhead"
[ -x "$RACKBENCH" ] || { echo "no rackbench at $RACKBENCH: cargo build --release, or set RACKBENCH" >&2; exit 2; }
command -v puma >/dev/null || { echo "puma not found: apt-get install puma" >&2; exit 2; }

mkdir -p "$out/raw"
work=$(mktemp -d /tmp/rb-tel-overhead.XXXXXX)
pid=""
cleanup() { [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

app="$root/ruby/apps/hello.ru"
cp "$root/ruby/telemetry/rackbench_telemetry.rb" "$work/"
sed -e "s|{{dir}}|\"$work/telemetry\"|" -e "s|{{app}}|\"$app\"|" \
  "$root/ruby/telemetry/wrapper.ru" > "$work/telemetry.ru"

{
  echo "# $(date -u +%FT%TZ) on $(hostname), $(nproc) CPUs, $(uname -r)"
  echo "# $(ruby -v); puma $(puma --version 2>/dev/null | head -1)"
  echo "# the machine is shared with other jobs: expect noise"
  echo "bench/telemetry-overhead.sh --pairs $pairs --duration $duration --warmup $warmup --connections $connections --threads $threads"
} > "$out/commands.txt"
echo "pair,order,mode,rps,p50_us,p99_us,telemetry_requests" > "$out/runs.csv"

one() { # pair order mode
  local pair=$1 order=$2 mode=$3 ru port
  if [ "$mode" = on ]; then ru="$work/telemetry.ru"; else ru="$app"; fi
  rm -rf "$work/telemetry"; mkdir -p "$work/telemetry"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  local cmd="puma --bind tcp://127.0.0.1:$port --workers 0 --threads $threads:$threads --environment production $ru"
  RACKBENCH_TELEMETRY_DIR="$work/telemetry" $cmd > "$work/puma.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/" >/dev/null 2>&1 && break; sleep 0.1; done
  local load="$RACKBENCH load -c $connections -d ${duration}s --warmup ${warmup}s --json http://127.0.0.1:$port/"
  echo "$mode: $cmd" >> "$out/commands.txt"
  echo "$mode: $load" >> "$out/commands.txt"
  $load > "$out/raw/pair$pair-$mode.json"
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  cat "$work"/telemetry/*.jsonl > "$out/raw/pair$pair-$mode.telemetry.jsonl" 2>/dev/null || true
  python3 - "$out/raw/pair$pair-$mode.json" "$out/raw/pair$pair-$mode.telemetry.jsonl" "$pair" "$order" "$mode" >> "$out/runs.csv" <<'EOF'
import json, sys, os
d = json.load(open(sys.argv[1]))
tel = 0
if os.path.exists(sys.argv[2]):
    tel = sum(json.loads(l)["requests"] for l in open(sys.argv[2]) if l.strip())
l = d["latency_us"]
print(f"{sys.argv[3]},{sys.argv[4]},{sys.argv[5]},{d['throughput_rps']:.1f},{l['p50']},{l['p99']},{tel}")
EOF
  tail -1 "$out/runs.csv"
}

for p in $(seq "$pairs"); do
  if [ $((p % 2)) -eq 1 ]; then one "$p" off-on off; one "$p" off-on on
  else one "$p" on-off on; one "$p" on-off off; fi
done

python3 - "$out/runs.csv" > "$out/summary.md" <<'EOF'
import csv, sys, statistics as st
rows = list(csv.DictReader(open(sys.argv[1])))
pairs = {}
for r in rows:
    pairs.setdefault(r["pair"], {})[r["mode"]] = r
print("# Telemetry middleware overhead on hello (puma, single mode)\n")
print("| pair | order | rps off | rps on | on/off | p50 off µs | p50 on µs | telemetry requests |")
print("|---|---|---|---|---|---|---|---|")
ratios = []
for p, m in sorted(pairs.items(), key=lambda x: int(x[0])):
    a, b = float(m["off"]["rps"]), float(m["on"]["rps"])
    ratios.append(b / a)
    print(f"| {p} | {m['on']['order']} | {a:.0f} | {b:.0f} | {b/a:.3f} | {m['off']['p50_us']} | {m['on']['p50_us']} | {m['on']['telemetry_requests']} |")
print()
print(f"Median on/off throughput ratio: **{st.median(ratios):.3f}** "
      f"(mean {st.mean(ratios):.3f}, min {min(ratios):.3f}, max {max(ratios):.3f}, {len(ratios)} pairs).")
worse = sum(r < 1 for r in ratios)
from math import comb
n = len(ratios)
k = max(worse, n - worse)
p = min(1.0, 2 * sum(comb(n, i) for i in range(k, n + 1)) / 2 ** n)
print(f"Pairs where telemetry was slower: {worse} of {n} (two-sided sign test p = {p:.2f}).")
EOF
cat "$out/summary.md"
