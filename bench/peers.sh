#!/usr/bin/env bash
# rackbench against its peers (wrk, hey, ab, h2load, oha) on one local nginx.
#
# Starts a throwaway nginx (1 worker, 13-byte file, keep-alive without a
# request cap) pinned to one CPU, then runs every load generator pinned to
# another CPU against the same URL with the same connections and duration,
# one after another. For each it records requests/s and the generator's own
# CPU time (user+sys, from GNU time: the same method for every tool), and
# reports requests per generator CPU-second next to wrk's.
#
# Usage: bench/peers.sh [options]
#   --duration S        seconds per tool run (default 10)
#   --connections N     connections per tool (default 50)
#   --repeat N          runs per tool, interleaved A B C A B C; the report
#                       shows the median per tool (default 1)
#   --out DIR           output dir (default bench/runs/$(date +%F)-$(hostname))
#   --tools LIST        comma-separated subset of
#                       rackbench,wrk,hey,ab,h2load,oha (default: all),
#                       or rackbench-epoll (rackbench --io epoll, not in
#                       the default set)
#   --warmup S          seconds of wrk before the first tool, 0 = none (default 2)
#   --server-cpu N      CPU for nginx (default 1)
#   --load-cpu N        CPU for the generators (default 0)
#   --strace            also record `strace -c -f` of wrk (and rackbench) for
#                       3 s into raw/ (syscalls per request)
#   --install           install missing tools first (apt-get; oha via
#                       `cargo install --root bench/.tools`)
#   -h, --help
# Environment: RACKBENCH = rackbench binary (default target/release/rackbench).
# Writes OUT/peers.md, OUT/peers.csv (one row per tool, medians),
# OUT/runs.csv (one row per run), OUT/commands.txt and OUT/raw/.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib/nginx.sh
source "$here/lib/nginx.sh"
root=$(cd "$here/.." && pwd)
tools_root="$root/bench/.tools"
export PATH="$tools_root/bin:$PATH"

duration=10
connections=50
repeat=1
out=""
warmup=2
server_cpu=1
load_cpu=0
do_install=0
do_strace=0
all_tools=(rackbench wrk hey ab h2load oha)
tool_list=""
RACKBENCH=${RACKBENCH:-$root/target/release/rackbench}

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
die() { echo "peers: $*" >&2; exit 2; }
note() { echo "peers: $*" >&2; }
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
is_pos() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ]; }

while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=${2%s}; shift 2 ;;
    --duration=*) duration=${1#*=}; duration=${duration%s}; shift ;;
    --connections|-c) connections=$2; shift 2 ;;
    --connections=*) connections=${1#*=}; shift ;;
    --repeat) repeat=$2; shift 2 ;;
    --repeat=*) repeat=${1#*=}; shift ;;
    --out) out=$2; shift 2 ;;
    --out=*) out=${1#*=}; shift ;;
    --tools) tool_list=$2; shift 2 ;;
    --tools=*) tool_list=${1#*=}; shift ;;
    --warmup) warmup=${2%s}; shift 2 ;;
    --warmup=*) warmup=${1#*=}; warmup=${warmup%s}; shift ;;
    --server-cpu) server_cpu=$2; shift 2 ;;
    --server-cpu=*) server_cpu=${1#*=}; shift ;;
    --load-cpu) load_cpu=$2; shift 2 ;;
    --load-cpu=*) load_cpu=${1#*=}; shift ;;
    --strace) do_strace=1; shift ;;
    --install) do_install=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
is_pos "$duration" || die "--duration wants whole seconds >= 1, got '$duration'"
is_pos "$connections" || die "--connections wants an integer >= 1"
is_pos "$repeat" || die "--repeat wants an integer >= 1"
is_uint "$warmup" || die "--warmup wants whole seconds"
is_uint "$server_cpu" || die "--server-cpu wants a CPU number"
is_uint "$load_cpu" || die "--load-cpu wants a CPU number"

tools=()
if [ -n "$tool_list" ]; then
  IFS=, read -r -a tools <<<"$tool_list"
  for t in "${tools[@]}"; do
    [[ " ${all_tools[*]} rackbench-epoll " == *" $t "* ]] || die "unknown tool '$t' (known: ${all_tools[*]} rackbench-epoll)"
  done
else
  tools=("${all_tools[@]}")
fi

# ---------------------------------------------------------------- install
apt_install() {
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  # Another apt-get/dpkg (e.g. a background install) holds the lock: wait.
  local waited=0
  while pgrep -x apt-get >/dev/null || pgrep -x dpkg >/dev/null; do
    [ $waited -eq 0 ] && note "waiting for a running apt-get/dpkg to finish"
    waited=$((waited + 1)); sleep 2
    [ $waited -lt 900 ] || die "apt-get/dpkg still running after 30 min"
  done
  local pkgs=() cmd pkg
  while read -r cmd pkg; do
    command -v "$cmd" >/dev/null 2>&1 || pkgs+=("$pkg")
  done <<'EOF'
nginx nginx-light
wrk wrk
ab apache2-utils
hey hey
h2load nghttp2-client
taskset util-linux
curl curl
jq jq
strace strace
EOF
  [ -x /usr/bin/time ] || pkgs+=(time)
  if [ ${#pkgs[@]} -gt 0 ]; then
    note "apt-get install ${pkgs[*]}"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${pkgs[@]}" >&2 ||
      { note "apt-get install failed; trying after apt-get update"
        $sudo apt-get update -q >&2
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${pkgs[@]}" >&2; }
  fi
  if ! command -v oha >/dev/null 2>&1; then
    if command -v cargo >/dev/null 2>&1; then
      note "cargo install --root $tools_root oha --locked (takes a few minutes)"
      cargo install --root "$tools_root" oha --locked >&2 ||
        note "oha did not install; it will be skipped"
    else
      note "cargo is missing; oha will be skipped"
    fi
  fi
}
[ $do_install -eq 0 ] || apt_install

for c in nginx curl taskset awk; do
  command -v "$c" >/dev/null 2>&1 || die "$c is missing (run with --install)"
done
bench_check_pinning "run with --install, or apt-get install time"
[ "$server_cpu" != "$load_cpu" ] || note "warning: nginx and the generators share CPU $load_cpu"

# Which tools can run.
runnable=()
for t in "${tools[@]}"; do
  case "$t" in
    rackbench|rackbench-epoll)
      if [ ! -x "$RACKBENCH" ] || [ -d "$RACKBENCH" ]; then
        note "skipping rackbench: RACKBENCH=$RACKBENCH is not an executable (build it with 'make build')"
        continue
      fi
      command -v jq >/dev/null 2>&1 || { note "skipping rackbench: jq is missing (run with --install)"; continue; } ;;
    oha)
      command -v oha >/dev/null 2>&1 || { note "skipping oha: not installed (run with --install)"; continue; }
      command -v jq >/dev/null 2>&1 || { note "skipping oha: jq is missing (run with --install)"; continue; } ;;
    *)
      command -v "$t" >/dev/null 2>&1 || { note "skipping $t: not installed (run with --install)"; continue; } ;;
  esac
  runnable+=("$t")
done
[ ${#runnable[@]} -gt 0 ] || die "no load generator to run"

# ---------------------------------------------------------------- out dir
bench_out "$(hostname)" runs.csv peers.csv peers.md

# ---------------------------------------------------------------- nginx
bench_workdir peers

bench_port
bench_nginx_conf
bench_nginx_start
worker=$(pgrep -P "$ngx" | head -1)
[ -n "$worker" ] || die "no nginx worker found"
note "nginx pid $ngx (worker $worker) on CPU $server_cpu serving $url; generators on CPU $load_cpu"

clk_tck=$(getconf CLK_TCK)
# CPU ticks (user+sys) of nginx's worker so far.
server_ticks() {
  local s
  s=$(cat "/proc/$worker/stat" 2>/dev/null) || { echo 0; return; }
  s=${s##*) }
  awk '{ print $12 + $13 }' <<<"$s"
}

# ---------------------------------------------------------------- tools
# The command line of one tool, into the array `cmd`.
tool_cmd() {
  local d=$duration c=$connections
  case "$1" in
    rackbench) cmd=("$RACKBENCH" load "$url" -c "$c" -t 1 -d "${d}s" --json) ;;
    rackbench-epoll) cmd=("$RACKBENCH" load "$url" -c "$c" -t 1 -d "${d}s" --json --io epoll) ;;
    wrk) cmd=(wrk -t1 -c"$c" -d"${d}s" "$url") ;;
    hey) cmd=(hey -c "$c" -z "${d}s" -cpus 1 "$url") ;;
    # ab: -t implies -n 50000, so -n must come after -t to be time-bound.
    ab) cmd=(ab -k -c "$c" -t "$d" -n 100000000 "$url") ;;
    h2load) cmd=(h2load --h1 -t1 -c "$c" -m1 -D "${d}s" "$url") ;;
    oha) cmd=(oha -c "$c" -z "${d}s" --worker-threads 1 --no-tui --output-format json "$url") ;;
  esac
}

# Converts "2.02s", "850.12ms", "1.00m", "12us" to seconds.
to_seconds() {
  awk -v v="$1" 'BEGIN {
    n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
    if (u == "us") n /= 1e6; else if (u == "ms") n /= 1e3
    else if (u == "m") n *= 60; else if (u == "h") n *= 3600
    printf "%.6f", n }'
}

# Parses a tool's stdout into: ok errors duration_s rps_reported
# (prints nothing when the output is not understood).
parse_output() {
  local tool=$1 f=$2
  case "$tool" in
    rackbench|rackbench-epoll) bench_parse_rackbench "$f" ;;
    wrk) bench_parse_wrk "$f" ;;
    hey)
      awk '
        /^ *Total:/ { dur = $2 }
        /^ *Requests\/sec:/ { rps = $2 }
        /^Error distribution:/ { inerr = 1; next }
        inerr && /^ *\[[0-9]+\]/ { n = $1; gsub(/[\[\]]/, "", n); err += n; next }
        /^ *\[[0-9]+\][ \t]+[0-9]+ responses/ {
          code = $1; gsub(/[\[\]]/, "", code)
          if (code >= 200 && code < 400) ok += $2; else err += $2 }
        END { if (dur != "") printf "%d %d %s %s\n", ok, err, dur, rps }' "$f" ;;
    ab)
      awk '
        /^Complete requests:/ { done = $3 }
        /^Failed requests:/ { failed = $3 }
        /^Non-2xx responses:/ { non2xx = $3 }
        /^Time taken for tests:/ { dur = $5 }
        /^Requests per second:/ { rps = $4 }
        END { if (dur != "") { ok = done - failed - non2xx; if (ok < 0) ok = 0
                               printf "%d %d %s %s\n", ok, failed + non2xx, dur, rps } }' "$f" ;;
    h2load)
      local fin reqs
      fin=$(grep -E '^finished in ' "$f") || return 0
      reqs=$(grep -E '^requests: ' "$f") || return 0
      echo "$(awk '{gsub(/,/, ""); print $8, $10}' <<<"$reqs") $(to_seconds "$(awk '{sub(/,$/, "", $3); print $3}' <<<"$fin")") $(awk '{print $4}' <<<"$fin")" ;;
    oha)
      # In-flight requests cut at the deadline ("aborted due to deadline") are
      # neither ok nor errors, as with wrk and rackbench's "unfinished".
      jq -r '
        ([.statusCodeDistribution // {} | to_entries[] | select((.key | tonumber) >= 200 and (.key | tonumber) < 400) | .value] | add // 0) as $ok
        | ([.statusCodeDistribution // {} | to_entries[] | select((.key | tonumber) < 200 or (.key | tonumber) >= 400) | .value] | add // 0) as $bad
        | ([.errorDistribution // {} | to_entries[] | select(.key != "aborted due to deadline") | .value] | add // 0) as $err
        | [$ok, ($bad + $err), .summary.total, .summary.requestsPerSec] | map(tostring) | join(" ")' "$f" 2>/dev/null ;;
  esac
}

fmt() { awk -v v="$1" -v p="${2:-0}" 'BEGIN { if (v == "" || v == "-") print "-"; else printf "%.*f", p, v }'; }

runs_csv="$out/runs.csv"
echo "run,tool,status,ok_requests,errors,duration_s,rps,rps_reported,wall_s,cpu_user_s,cpu_sys_s,cpu_s,req_per_cpu_s,max_rss_kb,server_cpu_s" >"$runs_csv"

run_tool() {
  local tool=$1 run=$2 base="$out/raw/$1-run$2"
  local cmd=() t0 t1 parsed status ok err dur rps rps_rep wall user sys rss cpu eff srv
  tool_cmd "$tool"
  printf '\n# %s, run %s\n' "$tool" "$run" >>"$cmdlog"
  note "run $run/$repeat: $tool"
  t0=$(server_ticks)
  run_timed "$base.time" "$base.out" "$base.err" "${cmd[@]}"
  t1=$(server_ticks)
  srv=$(awk -v a="$t0" -v b="$t1" -v hz="$clk_tck" 'BEGIN { printf "%.2f", (b - a) / hz }')
  wall=0 user=0 sys=0 rss=0
  read -r wall user sys rss < <(tail -1 "$base.time" 2>/dev/null) || true
  parsed=$(parse_output "$tool" "$base.out" || true)
  status=ok
  if [ -z "$parsed" ]; then
    status="unparsed(rc=$rc)"; ok=0; err=0; dur=0; rps_rep=0
    note "$tool run $run: could not parse its output (exit $rc); see $base.out / $base.err"
  else
    read -r ok err dur rps_rep <<<"$parsed"
    [ "$rc" -eq 0 ] || status="exit=$rc"
    [ "$tool" != ab ] || [ "$((ok + err))" -lt 100000000 ] || note "ab hit -n before -t: raise -n"
  fi
  read -r rps cpu eff < <(awk -v ok="$ok" -v d="$dur" -v u="$user" -v s="$sys" 'BEGIN {
    c = u + s; printf "%.2f %.2f %.0f\n", (d > 0 ? ok / d : 0), c, (c > 0 ? ok / c : 0) }')
  echo "$run,$tool,$status,$ok,$err,$dur,$rps,$rps_rep,$wall,$user,$sys,$cpu,$eff,$rss,$srv" >>"$runs_csv"
  note "  $tool: $(fmt "$rps") req/s, cpu ${user}u+${sys}s, $(fmt "$eff") req/cpu-s, errors $err, nginx cpu ${srv}s"
}

# ---------------------------------------------------------------- run
if [ "$warmup" -gt 0 ]; then
  if command -v wrk >/dev/null 2>&1; then
    printf '# warm-up\n' >>"$cmdlog"
    note "warm-up: ${warmup}s of wrk"
    run_timed "$out/raw/warmup-wrk.time" "$out/raw/warmup-wrk.out" "$out/raw/warmup-wrk.err" \
      wrk -t1 -c"$connections" -d"${warmup}s" "$url"
  else
    note "no wrk: skipping the warm-up"
  fi
fi

for run in $(seq "$repeat"); do
  for tool in "${runnable[@]}"; do
    run_tool "$tool" "$run"
  done
done

if [ $do_strace -eq 1 ]; then
  if command -v strace >/dev/null 2>&1; then
    for tool in wrk rackbench; do
      [[ " ${runnable[*]} " == *" $tool "* ]] || continue
      saved=$duration; duration=3
      tool_cmd "$tool"; duration=$saved
      printf '\n# strace of %s\n' "$tool" >>"$cmdlog"
      note "strace -c -f: $tool for 3s"
      run_timed "$out/raw/strace-$tool.time" "$out/raw/strace-$tool.out" "$out/raw/strace-$tool.err" \
        strace -c -f -o "$out/raw/strace-$tool.txt" "${cmd[@]}"
      parsed=$(parse_output "$tool" "$out/raw/strace-$tool.out" || true)
      calls=$(awk '$NF == "total" { print $4 }' "$out/raw/strace-$tool.txt" 2>/dev/null || true)
      if [ -n "$parsed" ] && [ -n "$calls" ]; then
        read -r ok _ <<<"$parsed"
        awk -v t="$tool" -v c="$calls" -v ok="$ok" 'BEGIN {
          printf "%s under strace: %d syscalls for %d ok requests = %.2f syscalls/request\n", t, c, ok, (ok > 0 ? c / ok : 0) }' \
          | tee -a "$out/raw/strace-summary.txt" >&2
      fi
    done
  else
    note "strace is missing: skipping --strace (run with --install)"
  fi
fi

# ---------------------------------------------------------------- report
# Medians per tool over the runs (each metric's own median).
summary=$(awk -F, -v order="${runnable[*]}" '
  NR == 1 { next }
  $3 != "ok" { bad[$2]++; next }
  { n[$2]++; k = n[$2]
    rps[$2, k] = $7; usr[$2, k] = $10; sys[$2, k] = $11; cpu[$2, k] = $12; eff[$2, k] = $13
    err[$2, k] = $5; srv[$2, k] = $15; rss[$2, k] = $14 }
  function median(a, t, m,   i, j, v, x) {
    for (i = 1; i <= m; i++) v[i] = a[t, i] + 0
    for (i = 2; i <= m; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    return (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }
  END {
    split(order, tools, " ")
    for (i = 1; i in tools; i++) { t = tools[i]; m = n[t] + 0
      if (m == 0) { printf "%s,0,%d,-,-,-,-,-,-,-,-\n", t, bad[t] + 0; continue }
      printf "%s,%d,%d,%.0f,%.2f,%.2f,%.2f,%.0f,%.0f,%.2f,%.0f\n", t, m, bad[t] + 0,
        median(rps, t, m), median(usr, t, m), median(sys, t, m), median(cpu, t, m),
        median(eff, t, m), median(err, t, m), median(srv, t, m), median(rss, t, m) } }' "$runs_csv")

wrk_rps=$(awk -F, '$1 == "wrk" { print $4 }' <<<"$summary")
wrk_eff=$(awk -F, '$1 == "wrk" { print $8 }' <<<"$summary")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }

peers_csv="$out/peers.csv"
echo "tool,runs,failed_runs,rps,cpu_user_s,cpu_sys_s,cpu_s,req_per_cpu_s,rps_vs_wrk,req_per_cpu_s_vs_wrk,errors,server_cpu_s,max_rss_kb" >"$peers_csv"
row() { printf '| %-9s | %8s | %10s | %9s | %6s | %9s | %12s | %16s | %6s | %11s |\n' "$@"; }
table=$(
  row tool 'req/s' 'cpu user s' 'cpu sys s' 'cpu s' 'req/cpu-s' 'req/s vs wrk' 'req/cpu-s vs wrk' errors 'nginx cpu s'
  sep="|-----------|"
  for w in 8 10 9 6 9 12 16 6 11; do sep+="$(printf '%*s' "$((w + 1))" '' | tr ' ' -):|"; done
  echo "$sep"
  while IFS=, read -r t m bad rps usr sys cpu eff err srv rss; do
    r1=$(ratio "$rps" "$wrk_rps"); r2=$(ratio "$eff" "$wrk_eff")
    echo "$t,$m,$bad,$rps,$usr,$sys,$cpu,$eff,$r1,$r2,$err,$srv,$rss" >>"$peers_csv"
    if [ "$m" -gt 0 ]; then
      row "$t" "$rps" "$usr" "$sys" "$cpu" "$eff" "$r1" "$r2" "$err" "$srv"
    else
      row "$t" failed - - - - - - - -
    fi
  done <<<"$summary"
)

version_of() {
  case "$1" in
    rackbench|rackbench-epoll) "$RACKBENCH" --version 2>&1 | head -1 ;;
    wrk) wrk -v 2>&1 | head -1 | sed 's/ Copyright.*//' ;;
    hey) echo "hey $(dpkg-query -W -f='${Version}' hey 2>/dev/null || echo '?') (Debian package)" ;;
    ab) echo "$(ab -V 2>&1 | head -1 | sed 's/^This is //'), apache2-utils $(dpkg-query -W -f='${Version}' apache2-utils 2>/dev/null || echo '?')" ;;
    h2load) h2load --version 2>&1 | head -1 ;;
    oha) oha --version 2>&1 | head -1 ;;
  esac
}

{
  echo "# rackbench vs peers"
  echo
  echo "$(date -u '+%F %T UTC'), host $(hostname)."
  echo
  echo "nginx (1 worker, 13-byte file, keep-alive, access_log off) on CPU $server_cpu; each generator on CPU $load_cpu,"
  echo "one after another: $connections connections, ${duration}s, one thread where the tool allows."
  echo "Warm-up: ${warmup}s of wrk. Runs per tool: $repeat$([ "$repeat" -gt 1 ] && echo ' (interleaved; medians shown)')."
  echo
  echo "$table"
  echo
  echo "- req/s: 2xx/3xx responses ÷ the tool's own measured duration."
  echo "- cpu user/sys: the generator process's CPU seconds (all threads), from GNU time (wait4 rusage), same for every tool."
  echo "- req/cpu-s: ok responses per generator CPU-second, the efficiency number. ÷wrk: ratio to wrk's."
  echo "- nginx cpu: CPU seconds of nginx's worker during the run; near the duration means nginx, not the generator, was the limit."
  if [ -s "$out/raw/strace-summary.txt" ]; then
    echo
    echo "## strace -c -f (3 s, slowed by strace; see raw/strace-*.txt)"
    echo
    sed 's/^/- /' "$out/raw/strace-summary.txt"
  fi
  echo
  echo "## Machine"
  echo
  echo "- CPU: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo) ($(nproc) CPUs online)"
  echo "- Kernel: $(uname -srm)"
  # shellcheck disable=SC1091
  echo "- OS: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
  gov=$(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || true)
  [ -z "$gov" ] || echo "- CPU governor: $gov"
  echo "- nginx: $(nginx -v 2>&1 | sed 's/^nginx version: //')"
  echo
  echo "## Tools"
  echo
  for t in "${runnable[@]}"; do echo "- $t: $(version_of "$t")"; done
  echo
  echo "Exact command lines: commands.txt. Per-run numbers: runs.csv. Raw outputs: raw/."
} >"$out/peers.md"

echo
echo "$table"
echo
echo "peers: wrote $out/{peers.md,peers.csv,runs.csv,commands.txt,raw/}" >&2
