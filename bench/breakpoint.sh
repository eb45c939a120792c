#!/usr/bin/env bash
# Break-point search against linear search (seed 000's 100-client steps) on
# the test server, which resets connections beyond a known limit. Shows
# that both find the same break point and how much load time each spends.
# Usage: bench/breakpoint.sh [--limits "400 900 1500"] [--step 3s] [--out DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RACKBENCH=${RACKBENCH:-$root/target/release/rackbench}
limits="400 900 1500"; step=3s; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --limits) limits=$2; shift 2 ;;
    --step) step=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
out=${out:-$root/bench/runs/$(date +%F)-$(hostname)}
mkdir -p "$out/raw"
pid=""
trap '[ -z "$pid" ] || kill -KILL -- "-$pid" 2>/dev/null || true' EXIT
ulimit -n 65536 2>/dev/null || true
{
  echo "# Break point: geometric + bisect vs linear 100-client steps"
  echo
  echo "Test server (rackbench serve-test --max-connections LIMIT, an epoll server: connections past LIMIT open at once get 503)."
  echo "Linear (seed 000's method): steps of 100 from 100, each $step after 1 s warm-up."
  echo "Geometric: x3 from 100, then bisection to 5%; each level probed for 0.5 s, the level found confirmed by a full step ($step after 1 s warm-up), whose throughput is the one reported."
  echo "Any step ends at its first error. load-seconds = wall seconds of load applied, warm-ups included."
  echo
  echo "| limit | method | break point | throughput at it | load-seconds | steps | load vs linear |"
  echo "|---:|---|---:|---:|---:|---:|---:|"
} > "$out/breakpoint.md"
: > "$out/breakpoint-commands.txt"
for limit in $limits; do
  for method in geometric linear; do
    setsid taskset -c 1 "$RACKBENCH" serve-test --max-connections "$limit" > "$out/raw/bp-$limit-$method-url.txt" 2>/dev/null &
    pid=$!
    for _ in $(seq 100); do [ -s "$out/raw/bp-$limit-$method-url.txt" ] && break; sleep 0.05; done
    url=$(head -1 "$out/raw/bp-$limit-$method-url.txt")
    extra=""; [ "$method" = linear ] && extra="--linear 100"
    cmd="taskset -c 0 $RACKBENCH breakpoint URL --start 100 --max 5000 --growth 3 --resolution 0.05 -d $step --warmup 1s $extra --json"
    echo "$cmd   # serve-test --max-connections $limit" >> "$out/breakpoint-commands.txt"
    ${cmd/URL/$url} > "$out/raw/bp-$limit-$method.json"
    kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; pid=""
    f="$out/raw/bp-$limit-$method.json"
    level=$(grep -o '"connections": [0-9.]*' "$f" | head -1 | grep -o '[0-9.]*$')
    tp=$(grep -o '"throughput_rps": [0-9.]*' "$f" | head -1 | grep -o '[0-9.]*$')
    ls=$(grep -o '"load_seconds": [0-9.]*' "$f" | head -1 | grep -o '[0-9.]*$')
    steps=$(grep -c '"level":' "$f")
    if [ "$method" = geometric ]; then geo_ls=${ls:-0}; geo_row=$(printf '| %s | %s | %s | %.0f | %.1f | %s |' "$limit" "$method" "${level:-none}" "${tp:-0}" "${ls:-0}" "$steps"); continue; fi
    ratio=$(awk -v g="$geo_ls" -v l="${ls:-0}" 'BEGIN { if (l > 0) printf "%.2f", g / l; else print "-" }')
    { echo "$geo_row $ratio |"; printf '| %s | %s | %s | %.0f | %.1f | %s | 1.00 |\n' "$limit" "$method" "${level:-none}" "${tp:-0}" "${ls:-0}" "$steps"; } | tee -a "$out/breakpoint.md"
  done
done
