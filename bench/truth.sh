#!/usr/bin/env bash
# Truth check: rackbench and wrk against the built-in test server, which
# measures its own service time. Prints each p50 and the server's own, and
# whether rackbench's p50 agrees with wrk's within 2% + 200 us and is never
# below the server's figure.
# Usage: bench/truth.sh [--delay 1ms] [--connections 10] [--duration 10] [--out DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RACKBENCH=${RACKBENCH:-$root/target/release/rackbench}
delay=1ms; connections=10; duration=10; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --delay) delay=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
out=${out:-$root/bench/runs/$(date +%F)-$(hostname)}
mkdir -p "$out/raw"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }

run_server() { # $1 = name; starts the test server, sets pid and url
  setsid taskset -c 1 "$RACKBENCH" serve-test --delay "$delay" > "$out/raw/truth-$1-url.txt" 2> "$out/raw/truth-$1-server.json" &
  pid=$!
  for _ in $(seq 100); do [ -s "$out/raw/truth-$1-url.txt" ] && break; sleep 0.05; done
  url=$(head -1 "$out/raw/truth-$1-url.txt")
}
stop_server() { kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; }
trap 'kill -KILL -- "-$pid" 2>/dev/null || true' EXIT

rb_cmd="taskset -c 0 $RACKBENCH load URL -c $connections -d ${duration}s --json"
wrk_cmd="taskset -c 0 wrk -t1 -c$connections -d${duration}s --latency URL"
printf '%s\n%s\n' "$RACKBENCH serve-test --delay $delay (pinned to CPU 1, one server per tool)" "$rb_cmd" "$wrk_cmd" > "$out/truth-commands.txt"

run_server rackbench
${rb_cmd/URL/$url} > "$out/raw/truth-rackbench.json"
stop_server
run_server wrk
${wrk_cmd/URL/$url} > "$out/raw/truth-wrk.txt"
stop_server
trap - EXIT

rb_p50=$(grep -o '"p50": [0-9]*' "$out/raw/truth-rackbench.json" | head -1 | grep -o '[0-9]*$')
rb_srv=$(grep -o '"service_p50_us":[0-9]*' "$out/raw/truth-rackbench-server.json" | grep -o '[0-9]*$')
wrk_srv=$(grep -o '"service_p50_us":[0-9]*' "$out/raw/truth-wrk-server.json" | grep -o '[0-9]*$')
# wrk prints "50%  1.10ms" under --latency.
wrk_p50=$(awk '$1=="50%" {v=$2; if (v ~ /us$/) {sub(/us$/,"",v); print int(v)} else if (v ~ /ms$/) {sub(/ms$/,"",v); print int(v*1000)} else if (v ~ /s$/) {sub(/s$/,"",v); print int(v*1000000)}}' "$out/raw/truth-wrk.txt")
awk -v rb="$rb_p50" -v wrk="$wrk_p50" -v srv="$rb_srv" -v wsrv="$wrk_srv" -v d="$delay" -v c="$connections" 'BEGIN {
  diff = rb - wrk; if (diff < 0) diff = -diff
  allowed = wrk * 0.02 + 200
  printf "# Truth check (test server, delay %s, %d connections)\n\n", d, c
  printf "| figure | us |\n|---|---|\n"
  printf "| rackbench p50 | %d |\n| test server own p50 (rackbench run) | %d |\n", rb, srv
  printf "| wrk p50 | %d |\n| test server own p50 (wrk run) | %d |\n\n", wrk, wsrv
  printf "rackbench vs wrk: %d us apart, allowed %.0f us -> %s\n", diff, allowed, (diff <= allowed ? "agree" : "DISAGREE")
  printf "rackbench p50 >= server own p50: %s\n", (rb >= srv ? "yes" : "NO")
}' | tee "$out/truth.md"
