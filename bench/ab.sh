#!/usr/bin/env bash
# `rackbench ab` against a difference whose size is known (issue 38).
#
# The app is ruby/apps/two_methods.ru on unicorn, one worker, two
# connections: each request runs an allocation-free loop TWO_METHODS_A
# times (spend_b off), so B's loop longer by SHIFT% is SHIFT% more work a
# request (the server's own overhead of about 0.1 ms a request, against
# about 7 ms of loop, dilutes it by under 2% of itself). SHIFT 0 is an A/A
# (`--aa`: the same configuration both sides, on purpose).
#
# Each run is one `rackbench ab ... --json`; its document goes to
# OUT/run-N.json and one line per run to OUT/runs.tsv (verdict, change,
# interval, rounds, rounds rerun, counted load, wall time).
#
# With --hog server|generator, an intermittent CPU hog (busy 2 s, idle
# 3 s, on the server's CPU or the generator's under rackbench's default
# pinning) runs beside every run, started and stopped by this script.
#
# Usage: bench/ab.sh --out DIR [--runs N] [--shift PCT] [--hog WHERE]
#                    [-- more rackbench ab flags]
set -euo pipefail
cd "$(dirname "$0")/.."
RACKBENCH=${RACKBENCH:-target/release/rackbench}
out="" runs=3 shift=5 hog=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --shift) shift=$2; shift 2 ;;
    --hog) hog=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "unknown option $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || { echo "give --out DIR" >&2; exit 2; }
mkdir -p "$out"
base=300000
b=$(python3 -c "print(round($base * (1 + $shift / 100)))")
if [ "$shift" = 0 ]; then
  vary=(--aa --vary "env.TWO_METHODS_A=$base,$base")
else
  vary=(--vary "env.TWO_METHODS_A=$base,$b")
fi
hog_pid=""
stop_hog() { [ -n "$hog_pid" ] && kill -- "-$hog_pid" 2>/dev/null || true; }
trap stop_hog EXIT
if [ -n "$hog" ]; then
  # rackbench pins the generator to the last CPU and the server to the
  # others (app::os::default_pinning); on 2 CPUs: server 0, generator 1.
  last=$(( $(nproc) - 1 ))
  case "$hog" in server) cpu=0 ;; generator) cpu=$last ;; *) echo "--hog server|generator" >&2; exit 2 ;; esac
  setsid taskset -c "$cpu" bash -c 'while :; do timeout 2 sh -c "while :; do :; done"; sleep 3; done' &
  hog_pid=$!
fi
printf 'run\tverdict\tchange_pct\tci_low_pct\tci_high_pct\trounds\trerun\tload_s\twall_s\n' > "$out/runs.tsv"
{
  echo "# $(date -u +%FT%TZ) $(uptime)"
  echo "shift=$shift hog=${hog:-none} runs=$runs"
} > "$out/commands.txt"
for i in $(seq 1 "$runs"); do
  cmd=("$RACKBENCH" ab --server unicorn --workers 1 --app ruby/apps/two_methods.ru
       --env TWO_METHODS_B=0 -c 2 "${vary[@]}"
       --out "$out/results-$i" --json "$@")
  echo "${cmd[*]}" >> "$out/commands.txt"
  "${cmd[@]}" > "$out/run-$i.json" 2> "$out/run-$i.log" || true
  python3 - "$out/run-$i.json" "$i" >> "$out/runs.tsv" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"{sys.argv[2]}\tnone ({e})"); sys.exit()
f = lambda x: "" if x is None else f"{x:.2f}"
print("\t".join([sys.argv[2], d["verdict"], f(d["change_pct"]), f(d["ci_low_pct"]),
                 f(d["ci_high_pct"]), str(d["rounds"]), str(d["rounds_disturbed_rerun"]),
                 f(d["load_s"]), f(d["wall_s"])]))
EOF
  tail -1 "$out/runs.tsv"
done
