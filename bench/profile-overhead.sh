#!/usr/bin/env bash
# What `--profile` costs (issue 40): paired, interleaved `rackbench trial`
# runs of one server and app without profiling (off) and with it at the
# default rate (on), the order alternating pair by pair (off-on, on-off,
# ...) so drift on a shared machine falls on both sides. Each run starts
# a fresh server, warms up, then counts its window; `on` runs rbspy (both
# views) over that window.
#
# `rackbench ab` cannot do this yet: `profile` is a plan-wide key, not a
# variant's, so an A/B cannot profile one side only.
#
# Usage: bench/profile-overhead.sh [options] [-- more rackbench trial flags]
#   --pairs N        pairs of runs (default 8)
#   --duration S     counted seconds per run (default 5)
#   --warmup S       warm-up seconds per run (default 2)
#   --out DIR        default bench/runs/$(date +%F)-profile-overhead
# Environment: RACKBENCH = rackbench binary (default target/release/rackbench).
# The trial flags after `--` name the server and app (default: puma, 2
# workers, hello, 8 connections).
# Writes OUT/runs.csv (one row per run), OUT/summary.md (per-pair ratios,
# median), OUT/commands.txt (with `uptime` before and after) and OUT/raw/
# (each run's trial-v1 record).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
pairs=8
duration=5
warmup=2
out=""
RACKBENCH=${RACKBENCH:-$root/target/release/rackbench}

while [ $# -gt 0 ]; do
  case "$1" in
    --pairs) pairs=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
flags=("$@")
[ ${#flags[@]} -gt 0 ] || flags=(--server puma --workers 2 --app hello -c 8)
[ -n "$out" ] || out="$root/bench/runs/$(date +%F)-profile-overhead"
[ -x "$RACKBENCH" ] || { echo "no rackbench at $RACKBENCH: cargo build --release, or set RACKBENCH" >&2; exit 2; }

mkdir -p "$out/raw"
work=$(mktemp -d /tmp/rb-prof-overhead.XXXXXX)
trap 'rm -rf "$work"' EXIT

{
  echo "# $(date -u +%FT%TZ) on $(hostname), $(nproc) CPUs, $(uname -r)"
  echo "# $("$RACKBENCH" --version 2>/dev/null); $(rbspy --version 2>/dev/null)"
  echo "# uptime before: $(uptime)"
  echo "bench/profile-overhead.sh --pairs $pairs --duration $duration --warmup $warmup -- ${flags[*]}"
} > "$out/commands.txt"
echo "pair,order,mode,rps,p50_us,p99_us,cpu_ms_per_request,profile_samples,profile_error" > "$out/runs.csv"

one() { # pair order mode
  local pair=$1 order=$2 mode=$3 extra=()
  [ "$mode" = on ] && extra=(--profile)
  local cmd=("$RACKBENCH" trial "${flags[@]}" -d "${duration}s" --warmup "${warmup}s"
    --work-dir "$work/$pair-$mode" --json "${extra[@]}")
  echo "$mode: ${cmd[*]}" >> "$out/commands.txt"
  "${cmd[@]}" > "$out/raw/pair$pair-$mode.json" 2> "$work/stderr" || {
    echo "pair $pair $mode failed: $(tail -3 "$work/stderr")" >&2; return 1; }
  jq -r --arg p "$pair" --arg o "$order" --arg m "$mode" '[$p, $o, $m,
      (.load.throughput_rps | tostring),
      (.load.latency_us.p50 | tostring), (.load.latency_us.p99 | tostring),
      ((.server_metrics.cpu_ms_per_request // "") | tostring),
      ((.profile.samples // "") | tostring), (.profile_error // "")] | @csv' \
    "$out/raw/pair$pair-$mode.json" >> "$out/runs.csv"
  rm -rf "$work/$pair-$mode"
}

for pair in $(seq 1 "$pairs"); do
  if [ $((pair % 2)) = 1 ]; then
    one "$pair" off-on off; one "$pair" off-on on
  else
    one "$pair" on-off on; one "$pair" on-off off
  fi
  echo "pair $pair done" >&2
done
echo "# uptime after: $(uptime)" >> "$out/commands.txt"

python3 - "$out" <<'EOF'
import csv, statistics, sys
out = sys.argv[1]
rows = list(csv.DictReader(open(f"{out}/runs.csv")))
pairs = {}
for r in rows:
    pairs.setdefault(r["pair"], {})[r["mode"]] = r
lines = ["| pair | order | off rps | on rps | on/off | on samples |", "|---|---|---|---|---|---|"]
ratios = []
for p, d in sorted(pairs.items(), key=lambda x: int(x[0])):
    off, on = float(d["off"]["rps"]), float(d["on"]["rps"])
    ratios.append(on / off)
    lines.append(f"| {p} | {d['on']['order']} | {off:.0f} | {on:.0f} | {on/off:.3f} | {d['on']['profile_samples']} |")
ratios.sort()
med = statistics.median(ratios)
lines.append("")
lines.append(f"median on/off: {med:.3f} (cost {100*(1-med):.1f}%); "
             f"range {ratios[0]:.3f} to {ratios[-1]:.3f} over {len(ratios)} pairs; "
             f"mean {statistics.mean(ratios):.3f}, sd {statistics.stdev(ratios) if len(ratios) > 1 else 0:.3f}")
open(f"{out}/summary.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
