#!/usr/bin/env bash
# Ten thousand connections: rackbench and wrk at -c 10000 against one local
# nginx, beside their own figures at -c 50.
#
# Starts a throwaway nginx (1 worker pinned to one CPU, 13-byte file,
# keep-alive without a request cap; worker_connections, worker_rlimit_nofile
# and the listen backlog raised by this script, and this shell's open-files
# soft limit raised to the hard limit, so the user raises nothing). Then, in
# interleaved rounds (A B C D A B C D ...), runs each generator pinned to
# another CPU with one thread: rackbench -c LOW, rackbench -c HIGH, wrk -c
# LOW, wrk -c HIGH. For each run it records ok responses, errors, the
# generator's CPU (user+sys from GNU time, connects and teardown included)
# and its peak RSS, and the TCP segments sent on this machine during the
# run (/proc/net/snmp's OutSegs: on loopback every segment, either way, is
# sent once here) per request, and the time the generator's CPU spent in
# softirq (/proc/stat: the network stack's receive and timer work, which
# the kernel charges to whichever task is running on that CPU, mostly the
# generator), and reports the medians.
#
# Goals (issue 17): rackbench -c HIGH runs with 0 errors; its requests per
# generator CPU-second at HIGH is >= 0.8x its own at LOW; its peak RSS at
# HIGH is under 64 MiB. wrk is shown beside it, judged by nothing.
#
# With --rate R, a third tool, rackbench-rate: the open loop at R requests
# per second over LOW and over HIGH connections. Below the server's
# capacity it sends on the connection freed last, so at HIGH almost all of
# them sit idle with keep-alive (what a real server faces), where the
# closed loop keeps every connection queued at the server.
#
# Usage: bench/connections.sh [options]
#   --duration S     seconds per run (default 10)
#   --repeat N       rounds (default 3)
#   --high N         the many connections (default 10000)
#   --low N          the few connections (default 50)
#   --tools LIST     rackbench,wrk (default: both)
#   --rate R         also run rackbench --rate R at LOW and HIGH (tool rackbench-rate)
#   --compare BIN    also run another rackbench build, BIN, closed loop at LOW
#                    and HIGH in the same rounds (tool rackbench-b): one
#                    engine change measured side by side
#   --server-cpu N   CPU for nginx (default 1)
#   --load-cpu N     CPU for the generators (default 0)
#   --out DIR        output dir (default bench/runs/$(date +%F)-connections)
#   -h, --help
# Environment: RACKBENCH = rackbench binary (default target/release/rackbench).
# Writes OUT/results.md (the table and PASS/MISS per goal), OUT/runs.csv,
# OUT/commands.txt and OUT/raw/.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib/nginx.sh
source "$here/lib/nginx.sh"
root=$(cd "$here/.." && pwd)
duration=10
repeat=3
high=10000
low=50
tool_list="rackbench,wrk"
rate=""
compare=""
server_cpu=1
load_cpu=0
out=""
RACKBENCH=${RACKBENCH:-$root/target/release/rackbench}

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
die() { echo "connections: $*" >&2; exit 2; }
note() { echo "connections: $*" >&2; }
is_pos() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ]; }

while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=${2%s}; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --high) high=$2; shift 2 ;;
    --low) low=$2; shift 2 ;;
    --tools) tool_list=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --compare) compare=$2; shift 2 ;;
    --server-cpu) server_cpu=$2; shift 2 ;;
    --load-cpu) load_cpu=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
for v in duration repeat high low; do is_pos "${!v}" || die "--$v wants an integer >= 1, got '${!v}'"; done
[[ $server_cpu =~ ^[0-9]+$ && $load_cpu =~ ^[0-9]+$ ]] || die "--server-cpu/--load-cpu want CPU numbers"
IFS=, read -r -a tools <<<"$tool_list"
for t in "${tools[@]}"; do [[ $t == rackbench || $t == wrk ]] || die "unknown tool '$t' (known: rackbench, wrk)"; done
if [ -n "$rate" ]; then
  is_pos "$rate" || die "--rate wants an integer >= 1 (requests per second), got '$rate'"
  tools+=(rackbench-rate)
fi
if [ -n "$compare" ]; then
  [ -x "$compare" ] || die "--compare wants a rackbench executable, got '$compare'"
  tools+=(rackbench-b)
fi

for c in nginx curl taskset awk jq; do
  command -v "$c" >/dev/null 2>&1 || die "$c is missing (scripts/deps.sh bench)"
done
[[ " ${tools[*]} " != *" wrk "* ]] || command -v wrk >/dev/null 2>&1 || die "wrk is missing (scripts/deps.sh bench, or --tools rackbench)"
[[ " ${tools[*]} " != *" rackbench "* ]] || [ -x "$RACKBENCH" ] || die "RACKBENCH=$RACKBENCH is not an executable (make build)"
bench_check_pinning "apt-get install time"

# This shell's soft open-files limit up to the hard limit: nginx and wrk
# inherit it (rackbench raises its own). HIGH connections need HIGH
# descriptors in the generator and as many again in nginx.
need=$((high + 1024))
hard=$(ulimit -Hn)
[ "$hard" = unlimited ] || [ "$hard" -ge "$need" ] ||
  die "-c $high needs $need open files but the hard limit is $hard: raise it (ulimit -Hn $need as root, LimitNOFILE=$need under systemd) or use --high $((hard - 1024))"
ulimit -Sn "$hard"
somaxconn=$(cat /proc/sys/net/core/somaxconn 2>/dev/null || echo 4096)
backlog=$((somaxconn < 65535 ? somaxconn : 65535))

bench_out connections runs.csv results.md

# ---------------------------------------------------------------- nginx
bench_workdir connections
bench_port
bench_nginx_conf "$((high + 1024))" "$((2 * high + 1024))" "$backlog"
printf '# ulimit -Sn %s (this shell, inherited by nginx and wrk)\n' "$hard" >>"$cmdlog"
bench_nginx_start
note "nginx pid $ngx on CPU $server_cpu serving $url (backlog $backlog); generators on CPU $load_cpu"

# ---------------------------------------------------------------- runs
runs_csv="$out/runs.csv"
echo "round,tool,connections,rc,ok,errors,duration_s,rps,cpu_user_s,cpu_sys_s,cpu_s,req_per_cpu_s,max_rss_kb,opened,never_answered,tcp_segments,segments_per_req,cpu_us_per_segment,softirq_s,softirq_us_per_req" >"$runs_csv"

# TCP segments this network namespace has sent so far.
tcp_out_segs() {
  awk '/^Tcp:/ { if (!col) { for (i = 1; i <= NF; i++) if ($i == "OutSegs") col = i } else { print $col; exit } }' /proc/net/snmp
}

# Seconds the generator's CPU has spent in softirq so far (/proc/stat's
# seventh field of its cpuN line, in clock ticks).
hz=$(getconf CLK_TCK)
softirq_s() {
  awk -v cpu="cpu$load_cpu" -v hz="$hz" '$1 == cpu { printf "%.2f", $8 / hz; exit }' /proc/stat
}

# Whether the kernel accounts softirq time apart from tasks: its config in
# /boot or /proc/config.gz says.
irq_time_accounting() {
  local cfg
  cfg=$( (cat "/boot/config-$(uname -r)" || zcat /proc/config.gz) 2>/dev/null | grep -E '^(# )?CONFIG_IRQ_TIME_ACCOUNTING[= ]' || true)
  case "$cfg" in
    CONFIG_IRQ_TIME_ACCOUNTING=y) echo on ;;
    "# CONFIG_IRQ_TIME_ACCOUNTING is not set") echo off ;;
    *) echo unknown ;;
  esac
}

# Parses a run's output into "ok errors duration_s rps".
parse() {
  local tool=$1 f=$2
  case "$tool" in
    rackbench|rackbench-rate|rackbench-b) bench_parse_rackbench "$f" ;;
    wrk) bench_parse_wrk "$f" ;;
  esac
}

run_one() {
  local round=$1 tool=$2 c=$3 base="$out/raw/$2-c$3-round$1"
  local cmd ok=0 err=0 dur=0 wall user sys rss parsed
  case "$tool" in
    rackbench) cmd=("$RACKBENCH" load "$url" -c "$c" -t 1 -d "${duration}s" --json) ;;
    rackbench-rate) cmd=("$RACKBENCH" load "$url" --rate "$rate" -c "$c" -t 1 -d "${duration}s" --json) ;;
    rackbench-b) cmd=("$compare" load "$url" -c "$c" -t 1 -d "${duration}s" --json) ;;
    wrk) cmd=(wrk -t1 -c"$c" -d"${duration}s" "$url") ;;
  esac
  printf '\n# round %s: %s -c %s\n' "$round" "$tool" "$c" >>"$cmdlog"
  local segs0 segs si0 si
  segs0=$(tcp_out_segs)
  si0=$(softirq_s)
  run_timed "$base.time" "$base.out" "$base.err" "${cmd[@]}"
  segs=$(($(tcp_out_segs) - segs0))
  si=$(awk -v a="$(softirq_s)" -v b="$si0" 'BEGIN { printf "%.2f", a - b }')
  read -r wall user sys rss < <(tail -1 "$base.time") || true
  parsed=$(parse "$tool" "$base.out" || true)
  [ -z "$parsed" ] || read -r ok err dur _ <<<"$parsed"
  [ -n "$parsed" ] || note "$tool -c $c round $round: output not understood (exit $rc); see $base.out"
  # rackbench counts the connections it opened and those never answered.
  oc="-,-"
  [[ $tool != rackbench* ]] || oc=$(jq -r '"\(.connections.opened),\(.connections.never_answered)"' "$base.out" 2>/dev/null || echo "0,0")
  awk -v oc="$oc" -v r="$round" -v t="$tool" -v c="$c" -v rc="$rc" -v ok="$ok" -v e="$err" -v d="$dur" -v u="$user" -v s="$sys" -v m="$rss" -v g="$segs" -v si="$si" 'BEGIN {
    cpu = u + s; printf "%s,%s,%s,%s,%d,%d,%.3f,%.0f,%.2f,%.2f,%.2f,%.0f,%d,%s,%d,%.2f,%.2f,%.2f,%.2f\n", r, t, c, rc, ok, e, d, (d > 0 ? ok / d : 0), u, s, cpu, (cpu > 0 ? ok / cpu : 0), m, oc, g, (ok > 0 ? g / ok : 0), (g > 0 ? cpu * 1e6 / g : 0), si, (ok > 0 ? si * 1e6 / ok : 0) }' >>"$runs_csv"
  note "round $round: $tool -c $c: $(tail -1 "$runs_csv" | awk -F, '{ printf "%s req/s, %s req/cpu-s, errors %s, rss %.1f MiB", $8, $12, $6, $13 / 1024 }')"
}

warm=(wrk -t1 -c"$low" -d2s "$url")
command -v wrk >/dev/null 2>&1 || warm=("$RACKBENCH" load "$url" -c "$low" -d 2s)
printf '# warm-up\n' >>"$cmdlog"
run_timed "$out/raw/warmup.time" "$out/raw/warmup.out" "$out/raw/warmup.err" "${warm[@]}"

for round in $(seq "$repeat"); do
  for tool in "${tools[@]}"; do
    for c in "$low" "$high"; do
      run_one "$round" "$tool" "$c"
    done
  done
done

# ---------------------------------------------------------------- report
# Medians per (tool, connections); errors: the largest of any run.
summary=$(awk -F, '
  NR == 1 { next }
  { k = $2 "," $3; n[k]++; m = n[k]; rps[k, m] = $8; eff[k, m] = $12; cpu[k, m] = $11; rss[k, m] = $13; spr[k, m] = $17; cps[k, m] = $18
    usr[k, m] = ($5 > 0 ? $9 * 1e6 / $5 : 0); sy[k, m] = ($5 > 0 ? $10 * 1e6 / $5 : 0); si[k, m] = $20
    if ($6 > err[k]) err[k] = $6; if ($4 != 0) bad[k]++; order[k] = ++seen[k] == 1 ? ++nk : order[k]; key[order[k]] = k }
  function median(a, k, m,   i, j, v, x) {
    for (i = 1; i <= m; i++) v[i] = a[k, i] + 0
    for (i = 2; i <= m; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    return (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }
  END { for (i = 1; i <= nk; i++) { k = key[i]; m = n[k]
    printf "%s,%d,%d,%.0f,%.2f,%.0f,%d,%.1f,%.2f,%.2f,%.2f,%.2f,%.2f\n", k, m, bad[k] + 0, median(rps, k, m), median(cpu, k, m), median(eff, k, m), err[k] + 0, median(rss, k, m) / 1024, median(spr, k, m), median(cps, k, m), median(usr, k, m), median(sy, k, m), median(si, k, m) } }' "$runs_csv")

row() { printf '| %-14s | %11s | %5s | %8s | %6s | %9s | %14s | %10s | %13s | %12s | %14s | %11s | %10s | %14s |\n' "$@"; }
get() { awk -F, -v t="$1" -v c="$2" -v f="$3" '$1 == t && $2 == c { print $f }' <<<"$summary"; }
table=$(
  row tool connections runs 'req/s' 'cpu s' 'req/cpu-s' 'vs own at low' 'max errors' 'peak RSS MiB' 'segments/req' 'cpu us/segment' 'user us/req' 'sys us/req' 'softirq us/req'
  echo "|----------------|------------:|------:|---------:|-------:|----------:|---------------:|-----------:|--------------:|-------------:|---------------:|------------:|-----------:|---------------:|"
  while IFS=, read -r t c m bad rps cpu eff err rss spr cps usr sy si; do
    base=$(get "$t" "$low" 7)
    rel=$(awk -v a="$eff" -v b="$base" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')
    row "$t" "$c" "$m" "$rps" "$cpu" "$eff" "$rel" "$err" "$rss" "$spr" "$cps" "$usr" "$sy" "$si"
  done <<<"$summary"
)

verdict() { if [ "$1" = 1 ]; then echo PASS; else echo MISS; fi; }
goals=""
if [[ " ${tools[*]} " == *" rackbench "* ]]; then
  e=$(get rackbench "$high" 8); eff_h=$(get rackbench "$high" 7); eff_l=$(get rackbench "$low" 7); rss=$(get rackbench "$high" 9)
  ratio=$(awk -v a="$eff_h" -v b="$eff_l" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
  opened=$(awk -F, -v c="$high" '$2 == "rackbench" && $3 == c { if (min == "" || $14 < min) min = $14 } END { print min + 0 }' "$runs_csv")
  unanswered=$(awk -F, -v c="$high" '$2 == "rackbench" && $3 == c { if ($15 > max) max = $15 } END { print max + 0 }' "$runs_csv")
  goals+="- $(verdict "$([ "$e" = 0 ] && [ "$opened" = "$high" ] && [ "$unanswered" = 0 ] && echo 1)"): rackbench -c $high runs with 0 errors, every connection opened and answered (largest error count of any round: $e; fewest connections opened: $opened; most never answered: $unanswered)."$'\n'
  goals+="- $(verdict "$(awk -v r="$ratio" 'BEGIN { print (r >= 0.8) }')"): requests per generator CPU-second at -c $high >= 0.8x its own at -c $low (median $eff_h vs $eff_l: ${ratio}x)."$'\n'
  spr_h=$(get rackbench "$high" 10); spr_l=$(get rackbench "$low" 10); cps_h=$(get rackbench "$high" 11); cps_l=$(get rackbench "$low" 11)
  goals+="- (not a goal; what the ratio above is made of) TCP segments per request: $spr_h at -c $high, $spr_l at -c $low; the generator's CPU per segment: $cps_h us at -c $high, $cps_l us at -c $low ($(awk -v a="$cps_l" -v b="$cps_h" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')x as many segments per CPU-second)."$'\n'
  goals+="- $(verdict "$(awk -v r="$rss" 'BEGIN { print (r < 64) }')"): peak RSS at -c $high under 64 MiB (median $rss MiB, GNU time's max RSS)."$'\n'
fi
if [ -n "$rate" ]; then
  eff_h=$(get rackbench-rate "$high" 7); eff_l=$(get rackbench-rate "$low" 7)
  spr_h=$(get rackbench-rate "$high" 10); spr_l=$(get rackbench-rate "$low" 10)
  goals+="- (not a goal) the open loop at $rate req/s, its connections mostly idle with keep-alive: requests per generator CPU-second at -c $high $(awk -v a="$eff_h" -v b="$eff_l" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')x its own at -c $low (median $eff_h vs $eff_l; $spr_h vs $spr_l TCP segments per request)."$'\n'
fi

{
  echo "# Ten thousand connections"
  echo
  echo "$(date -u '+%F %T UTC'), host $(hostname), $(nproc) CPUs ($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)), kernel $(uname -r)."
  echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo "nginx $(nginx -v 2>&1 | sed 's/^nginx version: //') (1 worker, worker_connections $((high + 1024)), worker_rlimit_nofile $((2 * high + 1024)), listen backlog $backlog, 13-byte file, keep-alive) on CPU $server_cpu;"
  echo "each generator on CPU $load_cpu with one thread, ${duration}s per run, $repeat interleaved rounds (${tools[*]}, each at -c $low then -c $high); medians."
  [ -z "$rate" ] || echo "rackbench-rate: rackbench --rate $rate (the open loop), same connections."
  [ -z "$compare" ] || echo "rackbench-b: $compare (another build), closed loop, same connections; rackbench is $RACKBENCH."
  echo
  echo "$table"
  echo
  echo "- req/cpu-s: ok responses per generator CPU-second (user+sys of the whole process from GNU time: opening and closing every connection included)."
  echo "- peak RSS: GNU time's maximum resident set size of the generator."
  echo "- segments/req: TCP segments sent on this machine during the run (/proc/net/snmp OutSegs; on loopback each segment, either"
  echo "  way, is sent once here; other traffic on the machine counts too) per ok response; cpu us/segment: the generator's CPU per segment."
  echo "- user/sys us/req: the generator's user and system CPU per ok response (GNU time); softirq us/req: the time CPU $load_cpu spent in"
  echo "  softirq during the run (/proc/stat) per ok response. Without IRQ time accounting (this kernel: $(irq_time_accounting)) a softirq tick is charged to the task it"
  echo "  interrupted, so most of it is inside the generator's sys figure: the network stack's work for it, not the engine's."
  echo
  echo "## Goals"
  echo
  printf '%s' "$goals"
  echo
  echo "Tools: $("$RACKBENCH" --version 2>&1 | head -1); $(wrk -v 2>&1 | head -1 | sed 's/ Copyright.*//')."
  echo "Exact command lines: commands.txt. Per-run numbers: runs.csv. Raw outputs: raw/."
} >"$out/results.md"

echo
cat "$out/results.md"
note "wrote $out/{results.md,runs.csv,commands.txt,raw/}"
