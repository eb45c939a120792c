#!/usr/bin/env bash
# Pipelining: `rackbench load --pipeline DEPTH` beside wrk with
# bench/wrk-pipeline.lua (DEPTH requests per write) against one local nginx.
#
# Starts a throwaway nginx (1 worker pinned to one CPU, 13-byte file,
# keep-alive without a request cap, as bench/peers.sh does), then runs both
# generators pinned to another CPU, one thread, the same connections and
# duration, in interleaved rounds (A B A B ...). For each run it records ok
# responses, errors and the generator's CPU (user+sys from GNU time, the
# same method for both), and reports the medians.
#
# Goal (issue 17): rackbench's requests per generator CPU-second with
# --pipeline 16 at least wrk's with the same depth.
#
# Usage: bench/pipeline.sh [options]
#   --duration S     seconds per run (default 10)
#   --repeat N       rounds (default 3)
#   --connections N  connections per run (default 50)
#   --depth N        requests per write (default 16)
#   --server-cpu N   CPU for nginx (default 1)
#   --load-cpu N     CPU for the generators (default 0)
#   --out DIR        output dir (default bench/runs/$(date +%F)-pipeline)
#   -h, --help
# Environment: RACKBENCH = rackbench binary (default target/release/rackbench).
# Writes OUT/results.md (the table and PASS/MISS), OUT/runs.csv,
# OUT/commands.txt and OUT/raw/.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib/nginx.sh
source "$here/lib/nginx.sh"
root=$(cd "$here/.." && pwd)
duration=10
repeat=3
connections=50
depth=16
server_cpu=1
load_cpu=0
out=""
RACKBENCH=${RACKBENCH:-$root/target/release/rackbench}
lua="$here/wrk-pipeline.lua"

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
die() { echo "pipeline: $*" >&2; exit 2; }
note() { echo "pipeline: $*" >&2; }
is_pos() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ]; }

while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=${2%s}; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --connections|-c) connections=$2; shift 2 ;;
    --depth) depth=$2; shift 2 ;;
    --server-cpu) server_cpu=$2; shift 2 ;;
    --load-cpu) load_cpu=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
for v in duration repeat connections depth; do is_pos "${!v}" || die "--$v wants an integer >= 1, got '${!v}'"; done
[[ $server_cpu =~ ^[0-9]+$ && $load_cpu =~ ^[0-9]+$ ]] || die "--server-cpu/--load-cpu want CPU numbers"
for c in nginx curl taskset awk jq wrk; do
  command -v "$c" >/dev/null 2>&1 || die "$c is missing (scripts/deps.sh bench)"
done
[ -x "$RACKBENCH" ] || die "RACKBENCH=$RACKBENCH is not an executable (make build)"
[ -f "$lua" ] || die "$lua is missing"
bench_check_pinning "apt-get install time"

bench_out pipeline runs.csv results.md

# ---------------------------------------------------------------- nginx
bench_workdir pipeline
bench_port
bench_nginx_conf
bench_nginx_start
note "nginx pid $ngx on CPU $server_cpu serving $url; generators on CPU $load_cpu"

# ---------------------------------------------------------------- runs
runs_csv="$out/runs.csv"
echo "round,tool,rc,ok,errors,duration_s,rps,cpu_user_s,cpu_sys_s,cpu_s,req_per_cpu_s,max_rss_kb" >"$runs_csv"

# Parses a run's output into "ok errors duration_s rps".
parse() {
  local tool=$1 f=$2
  case "$tool" in
    rackbench) bench_parse_rackbench "$f" ;;
    wrk) bench_parse_wrk "$f" ;;
  esac
}

run_one() {
  local round=$1 tool=$2 base="$out/raw/$2-round$1"
  local cmd ok=0 err=0 dur=0 wall user sys rss parsed
  case "$tool" in
    rackbench) cmd=("$RACKBENCH" load "$url" -c "$connections" -t 1 -d "${duration}s" --pipeline "$depth" --json) ;;
    wrk) cmd=(wrk -t1 -c"$connections" -d"${duration}s" -s "$lua" "$url" -- "$depth") ;;
  esac
  printf '\n# round %s: %s\n' "$round" "$tool" >>"$cmdlog"
  run_timed "$base.time" "$base.out" "$base.err" "${cmd[@]}"
  read -r wall user sys rss < <(tail -1 "$base.time") || true
  parsed=$(parse "$tool" "$base.out" || true)
  [ -z "$parsed" ] || read -r ok err dur _ <<<"$parsed"
  [ -n "$parsed" ] || note "$tool round $round: output not understood (exit $rc); see $base.out"
  awk -v r="$round" -v t="$tool" -v rc="$rc" -v ok="$ok" -v e="$err" -v d="$dur" -v u="$user" -v s="$sys" -v m="$rss" 'BEGIN {
    cpu = u + s; printf "%s,%s,%s,%d,%d,%.3f,%.0f,%.2f,%.2f,%.2f,%.0f,%d\n", r, t, rc, ok, e, d, (d > 0 ? ok / d : 0), u, s, cpu, (cpu > 0 ? ok / cpu : 0), m }' >>"$runs_csv"
  note "round $round: $tool: $(tail -1 "$runs_csv" | awk -F, '{ printf "%s req/s, %s req/cpu-s, errors %s", $7, $11, $5 }')"
}

printf '# warm-up\n' >>"$cmdlog"
run_timed "$out/raw/warmup.time" "$out/raw/warmup.out" "$out/raw/warmup.err" wrk -t1 -c"$connections" -d2s "$url"

for round in $(seq "$repeat"); do
  # Alternate which goes first, so neither always follows the other.
  if [ $((round % 2)) -eq 1 ]; then order=(rackbench wrk); else order=(wrk rackbench); fi
  for tool in "${order[@]}"; do run_one "$round" "$tool"; done
done

# ---------------------------------------------------------------- report
summary=$(awk -F, '
  NR == 1 { next }
  { k = $2; n[k]++; m = n[k]; rps[k, m] = $7; usr[k, m] = $8; sys[k, m] = $9; cpu[k, m] = $10; eff[k, m] = $11
    if ($5 > err[k]) err[k] = $5 }
  function median(a, k, m,   i, j, v, x) {
    for (i = 1; i <= m; i++) v[i] = a[k, i] + 0
    for (i = 2; i <= m; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    return (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }
  END { split("rackbench wrk", ks, " "); for (i = 1; i <= 2; i++) { k = ks[i]; m = n[k]; if (!m) continue
    printf "%s,%d,%.0f,%.2f,%.2f,%.2f,%.0f,%d\n", k, m, median(rps, k, m), median(usr, k, m), median(sys, k, m), median(cpu, k, m), median(eff, k, m), err[k] + 0 } }' "$runs_csv")
get() { awk -F, -v t="$1" -v f="$2" '$1 == t { print $f }' <<<"$summary"; }
wrk_eff=$(get wrk 7)
row() { printf '| %-24s | %5s | %8s | %10s | %9s | %6s | %9s | %9s | %6s |\n' "$@"; }
table=$(
  row tool runs 'req/s' 'cpu user s' 'cpu sys s' 'cpu s' 'req/cpu-s' 'vs wrk' errors
  echo "|--------------------------|------:|---------:|-----------:|----------:|-------:|----------:|----------:|-------:|"
  while IFS=, read -r t m rps usr sys cpu eff err; do
    label="rackbench --pipeline $depth"; [ "$t" = rackbench ] || label="wrk -s wrk-pipeline.lua"
    row "$label" "$m" "$rps" "$usr" "$sys" "$cpu" "$eff" "$(awk -v a="$eff" -v b="$wrk_eff" 'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }')" "$err"
  done <<<"$summary"
)
ratio=$(awk -v a="$(get rackbench 7)" -v b="$wrk_eff" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
verdict=$(awk -v r="$ratio" 'BEGIN { print (r >= 1.0 ? "PASS" : "MISS") }')

{
  echo "# Pipelining: rackbench --pipeline $depth vs wrk with a pipelining script"
  echo
  echo "$(date -u '+%F %T UTC'), host $(hostname), $(nproc) CPUs ($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)), kernel $(uname -r)."
  echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo "nginx $(nginx -v 2>&1 | sed 's/^nginx version: //') (1 worker, 13-byte file, keep-alive) on CPU $server_cpu; each generator on CPU $load_cpu,"
  echo "one thread, $connections connections, $depth requests per write, ${duration}s per run, $repeat interleaved rounds (the first tool alternates); medians."
  echo
  echo "$table"
  echo
  echo "- req/cpu-s: ok responses per generator CPU-second (user+sys from GNU time, the same for both)."
  echo
  echo "## Goal"
  echo
  echo "- $verdict: rackbench's requests per generator CPU-second at least wrk's (${ratio}x)."
  echo
  echo "Tools: $("$RACKBENCH" --version 2>&1 | head -1); $(wrk -v 2>&1 | head -1 | sed 's/ Copyright.*//') with bench/wrk-pipeline.lua."
  echo "Exact command lines: commands.txt. Per-run numbers: runs.csv. Raw outputs: raw/."
} >"$out/results.md"

echo
cat "$out/results.md"
note "wrote $out/{results.md,runs.csv,commands.txt,raw/}"
