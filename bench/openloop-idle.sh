#!/usr/bin/env bash
# The generator's CPU while it can send nothing: an open loop (--rate) whose
# connections are all waiting on a server that answers in 1 s. A generator
# that spins here takes the CPU from the server it measures, exactly when
# that server is overloaded (issue 12). Goal: at most 5% of a core.
#
# Measures each build's CPU (user + system, from /usr/bin/time, whose
# resolution is 10 ms) over its wall time, with the report's own generator
# CPU (getrusage, microseconds; the load itself, without start-up) and
# wake-ups beside it. With
# --before BIN, an older build is measured the same way, alternating runs.
#
# Usage: bench/openloop-idle.sh [--before BIN] [--rate 2000] [--connections 100]
#          [--duration 5] [--delay 1s] [--repeat 3] [--out DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RACKBENCH=${RACKBENCH:-$root/target/release/rackbench}
before=""; rate=2000; connections=100; duration=5; delay=1s; repeat=3; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --before) before=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --delay) delay=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "unknown option $1: see the usage line at the top of $0" >&2; exit 2 ;;
  esac
done
out=${out:-$root/bench/runs/$(date +%F)-openloop-idle}
mkdir -p "$out/raw"
[ -x /usr/bin/time ] || { echo "/usr/bin/time is missing: apt-get install time" >&2; exit 1; }
builds=(after)
declare -A bin=([after]=$RACKBENCH)
if [ -n "$before" ]; then builds=(before after); bin[before]=$before; fi

pid=""
# The test server, in its own process group so that it and its threads go
# together; a fresh one per run so no run inherits another's backlog.
start_server() { # $1 = run name; sets pid and url
  setsid "$RACKBENCH" serve-test --delay "$delay" > "$out/raw/$1-url.txt" 2> "$out/raw/$1-server.err" &
  pid=$!
  for _ in $(seq 100); do [ -s "$out/raw/$1-url.txt" ] && break; sleep 0.05; done
  url=$(head -1 "$out/raw/$1-url.txt")
  [ -n "$url" ] || { echo "the test server did not start: see $out/raw/$1-server.err" >&2; exit 1; }
}
stop_server() { kill -TERM -- "-$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""; }
trap '[ -n "$pid" ] && kill -KILL -- "-$pid" 2>/dev/null || true' EXIT

load_args="--rate $rate -c $connections -d ${duration}s --json"
{
  echo "# test server, one per run (own process group via setsid)"
  echo "setsid $RACKBENCH serve-test --delay $delay"
  for b in "${builds[@]}"; do
    echo "# $b: ${bin[$b]}"
    echo "/usr/bin/time -o $out/raw/$b-runN.time -f '%e %U %S %M' ${bin[$b]} load URL $load_args"
  done
} > "$out/commands.txt"

for r in $(seq "$repeat"); do
  for b in "${builds[@]}"; do
    name="$b-run$r"
    start_server "$name"
    # shellcheck disable=SC2086 # load_args is a list of words
    /usr/bin/time -o "$out/raw/$name.time" -f '%e %U %S %M' \
      "${bin[$b]}" load "$url" $load_args > "$out/raw/$name.json"
    stop_server
  done
done
trap - EXIT

# One row per run: wall, user, system, % of a core, OK responses, wake-ups
# (0 where the build does not report them).
num() { { grep -o "\"$1\": *[0-9.e+-]*" "$2" || true; } | head -1 | sed 's/.*: *//'; }
{
  printf '# Open-loop generator CPU while every connection is busy\n\n'
  printf 'rackbench load URL %s against `rackbench serve-test --delay %s`, %s runs each.\n\n' "$load_args" "$delay" "$repeat"
  printf '| build | run | wall s | user s | sys s | CPU %% of a core | report CPU s | ok | wake-ups |\n|---|---|---|---|---|---|---|---|---|\n'
  for b in "${builds[@]}"; do
    for r in $(seq "$repeat"); do
      read -r wall user sys _ < "$out/raw/$b-run$r.time"
      j=$out/raw/$b-run$r.json
      ok=$(num ok "$j"); wake=$(num wakeups "$j"); ru=$(num cpu_user_s "$j"); rs=$(num cpu_sys_s "$j")
      awk -v b="$b" -v r="$r" -v w="$wall" -v u="$user" -v s="$sys" -v ok="$ok" -v wk="${wake:-0}" -v rc="$ru + $rs" \
        'BEGIN { split(rc, x, " [+] "); printf "| %s | %d | %.2f | %.2f | %.2f | %.1f | %.3f | %d | %d |\n", b, r, w, u, s, (u + s) / w * 100, x[1] + x[2], ok, wk }'
    done
  done
  printf '\n'
  for b in "${builds[@]}"; do
    cat "$out"/raw/"$b"-run*.time | awk -v b="$b" '{ w += $1; c += $2 + $3 } END { printf "%s: %.3f CPU-s in %.1f s wall, %.1f%% of a core\n", b, c, w, c / w * 100 }'
  done
  if [ -n "$before" ]; then
    cat "$out"/raw/before-run*.time "$out"/raw/after-run*.time | awk -v n="$repeat" '
      NR <= n { cb += $2 + $3 } NR > n { ca += $2 + $3 }
      END { if (ca > 0) printf "before / after CPU: %.0fx\n", cb / ca; else print "before / after CPU: after used no measurable CPU" }'
  fi
  cat "$out"/raw/after-run*.time | awk '{ w += $1; c += $2 + $3 } END {
    p = c / w * 100; printf "goal, at most 5%% of a core: %s (%.1f%%)\n", (p <= 5 ? "met" : "NOT MET"), p }'
} | tee "$out/results.md"
