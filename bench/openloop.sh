#!/usr/bin/env bash
# The open loop's cost: rackbench --rate R beside vegeta attack -rate R and
# beside rackbench's own closed loop running at about R, against one local
# nginx.
#
# Starts a throwaway nginx (1 worker pinned to one CPU, 13-byte file,
# keep-alive without a request cap, as bench/peers.sh does). Then:
#   1. the closed loop's maximum here: rackbench -c 50 for a few seconds;
#   2. the rates R: by default two, --fraction of that maximum (default
#      0.6: a rate nginx sustains with room to spare) and --peer-rate
#      (default 5000: one a single-core vegeta sustains; on the 2-core VM
#      it fell behind at 10,000), or the ones given with --rates;
#   3. "the closed loop at the same request rate": the closed loop's rate
#      is set by its connections, not by a flag, so the script tries
#      1, 2, 3, 4, 6, 8, 12, 16, 24, 32 connections and keeps, per R, the
#      fewest whose closed-loop rate reached R (at a low R even one
#      connection runs faster: then that one), else the fastest tried;
#   4. per R, interleaved rounds (the order rotates each round) of:
#      rackbench --rate R -c 50 (open loop, each request sent at its due
#      time), the same with --slack (requests due within the slack sent
#      together), vegeta attack -rate R (its own connections and workers),
#      and rackbench closed with the count from 3; each pinned to another
#      CPU, one thread (vegeta: GOMAXPROCS follows the pinning).
#   5. the closed loop at exactly the open loop's rate: against nginx the
#      closed loop's rate is set by its connections and runs faster than
#      R, which favours it (a busier server batches more responses per
#      wake-up). So, against `rackbench serve-test --delay D` (a server
#      whose service time paces the closed loop: -c C makes about C/D
#      requests per second), per C of --paced-connections: a calibration
#      run of the closed loop gives its rate r; then interleaved rounds of
#      the closed loop -c C and the open loop --rate r -c 50 (without and
#      with --slack), all against that server.
# For each run: ok responses, errors, achieved rate and the generator's CPU
# (user+sys from GNU time, the same method for all three); medians.
#
# Goals (issue 17), per R: the open loop's generator CPU per request within
# 1.15x of the closed loop's at the same rate (step 5; step 4's unequal
# rates are shown too), and at most half of vegeta's; each judged on the median of the per-round ratios (the three
# run back to back in a round), vegeta's only over the rounds where it kept
# up (95% of R answered, no errors).
#
# Usage: bench/openloop.sh [options]
#   --duration S     seconds per run (default 10)
#   --repeat N       rounds (default 3)
#   --rates LIST     comma-separated requests per second (default: the two
#                    of step 2)
#   --fraction F     share of the closed loop's max for the first R (0.6)
#   --peer-rate R    the second default R (default 5000)
#   --connections N  the open loop's connections (default 50)
#   --paced-connections LIST  step 5's closed-loop connections (default 2,8)
#   --paced-delay D  step 5's service time (default 1ms)
#   --slack D        the open loop's second arm's --slack (default 2ms;
#                    0 leaves that arm out)
#   --server-cpu N   CPU for nginx (default 1)
#   --load-cpu N     CPU for the generators (default 0)
#   --out DIR        output dir (default bench/runs/$(date +%F)-openloop)
#   -h, --help
# Environment: RACKBENCH = rackbench binary (default target/release/rackbench);
# VEGETA = vegeta binary (default: vegeta on PATH, else ~/go/bin/vegeta;
# scripts/deps.sh bench installs it).
# Writes OUT/results.md (the table and PASS/MISS per goal), OUT/runs.csv,
# OUT/commands.txt and OUT/raw/.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib/nginx.sh
source "$here/lib/nginx.sh"
root=$(cd "$here/.." && pwd)
duration=10
repeat=3
rates=""
fraction=0.6
peer_rate=5000
connections=50
paced_connections=2,8
paced_delay=1ms
slack=2ms
server_cpu=1
load_cpu=0
out=""
RACKBENCH=${RACKBENCH:-$root/target/release/rackbench}
VEGETA=${VEGETA:-$(command -v vegeta || echo "$HOME/go/bin/vegeta")}

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
die() { echo "openloop: $*" >&2; exit 2; }
note() { echo "openloop: $*" >&2; }
is_pos() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ]; }

while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=${2%s}; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --rates|--rate) rates=$2; shift 2 ;;
    --peer-rate) peer_rate=$2; shift 2 ;;
    --fraction) fraction=$2; shift 2 ;;
    --connections|-c) connections=$2; shift 2 ;;
    --paced-connections) paced_connections=$2; shift 2 ;;
    --paced-delay) paced_delay=$2; shift 2 ;;
    --slack) slack=$2; shift 2 ;;
    --server-cpu) server_cpu=$2; shift 2 ;;
    --load-cpu) load_cpu=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
for v in duration repeat connections; do is_pos "${!v}" || die "--$v wants an integer >= 1, got '${!v}'"; done
is_pos "$peer_rate" || die "--peer-rate wants whole requests per second >= 1, got '$peer_rate'"
if [ -n "$rates" ]; then
  IFS=, read -r -a rate_list <<<"$rates"
  for r in "${rate_list[@]}"; do is_pos "$r" || die "--rates wants whole requests per second >= 1, got '$r'"; done
fi
IFS=, read -r -a paced_list <<<"$paced_connections"
for c in "${paced_list[@]}"; do is_pos "$c" || die "--paced-connections wants connection counts >= 1, got '$c'"; done
[[ $paced_delay =~ ^[0-9]+(us|ms)$ ]] || die "--paced-delay wants a time such as 1ms or 500us, got '$paced_delay'"
[[ $slack =~ ^(0|[0-9]+(us|ms))$ ]] || die "--slack wants a time such as 1ms or 500us, or 0, got '$slack'"
awk -v f="$fraction" 'BEGIN { exit !(f > 0 && f <= 1) }' || die "--fraction wants a number in (0, 1], got '$fraction'"
[[ $server_cpu =~ ^[0-9]+$ && $load_cpu =~ ^[0-9]+$ ]] || die "--server-cpu/--load-cpu want CPU numbers"
for c in nginx curl taskset awk jq; do
  command -v "$c" >/dev/null 2>&1 || die "$c is missing (scripts/deps.sh bench)"
done
[ -x "$RACKBENCH" ] || die "RACKBENCH=$RACKBENCH is not an executable (make build)"
[ -x "$VEGETA" ] || die "vegeta is missing: scripts/deps.sh bench (go install github.com/tsenart/vegeta/v12@v12.13.0), or set VEGETA"
bench_check_pinning "apt-get install time"

bench_out openloop runs.csv results.md

# ---------------------------------------------------------------- nginx
bench_workdir openloop
bench_port
bench_nginx_conf
bench_nginx_start
note "nginx pid $ngx on CPU $server_cpu serving $url; generators on CPU $load_cpu"

# ---------------------------------------------------------------- runs
# A closed-loop rackbench run of S seconds with C connections; prints its rate.
closed_rate() {
  local c=$1 s=$2 base="$out/raw/calibrate-c$1"
  printf '\n# calibration: closed loop, %s connections\n' "$c" >>"$cmdlog"
  run_timed "$base.time" "$base.out" "$base.err" "$RACKBENCH" load "$url" -c "$c" -t 1 -d "${s}s" --json
  jq -r '.throughput_rps | floor' "$base.out" 2>/dev/null || echo 0
}

printf '# warm-up\n' >>"$cmdlog"
run_timed "$out/raw/warmup.time" "$out/raw/warmup.out" "$out/raw/warmup.err" "$RACKBENCH" load "$url" -c 50 -d 2s

max=$(closed_rate 50 5)
[ "$max" -gt 0 ] || die "the closed loop's calibration run answered nothing; see $out/raw/calibrate-c50.*"
if [ -z "$rates" ]; then
  auto=$(awk -v m="$max" -v f="$fraction" 'BEGIN { printf "%d", m * f / 100 + 0.5 }')
  rate_list=($((auto * 100)) "$peer_rate")
  rate_how="${rate_list[0]} = $fraction x the closed loop's $max req/s at -c 50, rounded; $peer_rate = --peer-rate, one a single-core vegeta sustains"
else
  rate_how="given with --rates (the closed loop's max: $max req/s at -c 50)"
fi
note "closed loop max $max req/s; rates ${rate_list[*]}"

# Closed-loop rates by connection count, measured once.
declare -A cal
for c in 1 2 3 4 6 8 12 16 24 32; do
  cal[$c]=$(closed_rate "$c" 3)
  note "calibration: closed loop -c $c: ${cal[$c]} req/s"
  top=1
  for r in "${rate_list[@]}"; do [ "${cal[$c]}" -ge "$r" ] || top=0; done
  [ $top -eq 0 ] || break
done
# The closed loop "at" rate $1: the fewest calibrated connections whose
# rate reached it (fewer would run slower), else the fastest count tried.
# Not "the nearest": on a busy machine one 3-second run can come out far
# too slow, and nearest would then pick a count that runs at twice R.
nearest_c() {
  local c best="" top=-1
  for c in 1 2 3 4 6 8 12 16 24 32; do
    [ -n "${cal[$c]:-}" ] || continue
    if [ "${cal[$c]}" -ge "$1" ]; then echo "$c"; return; fi
    if [ "${cal[$c]}" -gt "$top" ]; then top=${cal[$c]}; best=$c; fi
  done
  echo "$best"
}

runs_csv="$out/runs.csv"
echo "rate,round,tool,connections,rc,ok,errors,duration_s,rps,cpu_user_s,cpu_sys_s,cpu_s,cpu_us_per_req,max_rss_kb,p50_us" >"$runs_csv"

# Parses a run's output into "ok errors duration_s".
parse() {
  local tool=$1 f=$2
  case "$tool" in
    open|sopen|closed|popen|psopen|pclosed) bench_parse_rackbench "$f" ;;
    vegeta)
      # vegeta's duration: its attack's (the sending), as rackbench's is its
      # window; the wait for the last responses after it is left out.
      jq -r '(.status_codes // {}) as $s
        | ([$s | to_entries[] | select((.key | tonumber) >= 200 and (.key | tonumber) < 400) | .value] | add // 0) as $ok
        | "\($ok) \(.requests - $ok) \(.duration / 1e9)"' "$f" 2>/dev/null ;;
  esac
}

run_one() {
  local rate=$1 round=$2 tool=$3 c=$4 base="$out/raw/r$1-$3-round$2"
  local ok=0 err=0 dur=0 wall user sys rss parsed
  printf '\n# rate %s, round %s: %s\n' "$rate" "$round" "$tool" >>"$cmdlog"
  case "$tool" in
    open) run_timed "$base.time" "$base.out" "$base.err" \
      "$RACKBENCH" load "$url" --rate "$rate" -c "$c" -t 1 -d "${duration}s" --json ;;
    sopen) run_timed "$base.time" "$base.out" "$base.err" \
      "$RACKBENCH" load "$url" --rate "$rate" --slack "$slack" -c "$c" -t 1 -d "${duration}s" --json ;;
    closed) run_timed "$base.time" "$base.out" "$base.err" \
      "$RACKBENCH" load "$url" -c "$c" -t 1 -d "${duration}s" --json ;;
    popen) run_timed "$base.time" "$base.out" "$base.err" \
      "$RACKBENCH" load "$purl" --rate "$rate" -c "$c" -t 1 -d "${duration}s" --json ;;
    psopen) run_timed "$base.time" "$base.out" "$base.err" \
      "$RACKBENCH" load "$purl" --rate "$rate" --slack "$slack" -c "$c" -t 1 -d "${duration}s" --json ;;
    pclosed) run_timed "$base.time" "$base.out" "$base.err" \
      "$RACKBENCH" load "$purl" -c "$c" -t 1 -d "${duration}s" --json ;;
    vegeta) bench_run_vegeta "$base" "$rate" ;;
  esac
  read -r wall user sys rss < <(tail -1 "$base.time") || true
  parsed=$(parse "$tool" "$base.out" || true)
  [ -z "$parsed" ] || read -r ok err dur _ <<<"$parsed"
  [ -n "$parsed" ] || note "$tool round $round: output not understood (exit $rc); see $base.out"
  # The median latency, from the schedule for both open loops (vegeta's
  # from its send: it sends on time or falls behind).
  if [ "$tool" = vegeta ]; then
    p50=$(jq -r '.latencies["50th"] / 1000 | floor' "$base.out" 2>/dev/null || echo 0)
  else
    p50=$(jq -r '.latency_us.p50' "$base.out" 2>/dev/null || echo 0)
  fi
  awk -v R="$rate" -v r="$round" -v t="$tool" -v c="$c" -v rc="$rc" -v ok="$ok" -v e="$err" -v d="$dur" -v u="$user" -v s="$sys" -v m="$rss" -v p="${p50:-0}" 'BEGIN {
    cpu = u + s; printf "%s,%s,%s,%s,%s,%d,%d,%.3f,%.0f,%.2f,%.2f,%.2f,%.2f,%d,%d\n", R, r, t, c, rc, ok, e, d, (d > 0 ? ok / d : 0), u, s, cpu, (ok > 0 ? cpu * 1e6 / ok : 0), m, p }' >>"$runs_csv"
  note "rate $rate round $round: $tool: $(tail -1 "$runs_csv" | awk -F, '{ printf "%s req/s, %s us cpu/req, errors %s", $9, $13, $7 }')"
}

tools=(open vegeta closed)
paced_tools=(popen pclosed)
if [ "$slack" != 0 ]; then
  tools=(open sopen vegeta closed)
  paced_tools=(popen psopen pclosed)
fi
declare -A closed_c
for rate in "${rate_list[@]}"; do
  closed_c[$rate]=$(nearest_c "$rate")
  note "rate $rate: the closed loop at about that rate: -c ${closed_c[$rate]}"
  for round in $(seq "$repeat"); do
    # Rotate the order so that no tool always runs first or last.
    k=$(( (round - 1) % ${#tools[@]} ))
    for j in "${!tools[@]}"; do
      t=${tools[$(( (j + k) % ${#tools[@]} ))]}
      case "$t" in open|sopen) c=$connections ;; closed) c=${closed_c[$rate]} ;; vegeta) c=- ;; esac
      run_one "$rate" "$round" "$t" "$c"
    done
  done
done

# ---------------------------------------------------------------- paced
# Step 5: the closed loop at exactly the open loop's rate, against a server
# whose service time sets the closed loop's rate.
printf '\n# the paced server\n' >>"$cmdlog"
bench_serve_test "$out/raw/paced-server" "$paced_delay"
purl=$serve_url
paced_rates=()
for c in "${paced_list[@]}"; do
  base="$out/raw/paced-calibrate-c$c"
  printf '\n# paced calibration: closed loop, %s connections\n' "$c" >>"$cmdlog"
  run_timed "$base.time" "$base.out" "$base.err" "$RACKBENCH" load "$purl" -c "$c" -t 1 -d 3s --json
  r=$(jq -r '.throughput_rps | floor' "$base.out" 2>/dev/null || echo 0)
  [ "$r" -gt 0 ] || die "the paced calibration at -c $c answered nothing; see $base.*"
  paced_rates+=("$r")
  note "paced: closed loop -c $c against serve-test --delay $paced_delay: $r req/s"
  for round in $(seq "$repeat"); do
    k=$(( (round - 1) % ${#paced_tools[@]} ))
    for j in "${!paced_tools[@]}"; do
      t=${paced_tools[$(( (j + k) % ${#paced_tools[@]} ))]}
      case "$t" in popen|psopen) pc=$connections ;; pclosed) pc=$c ;; esac
      run_one "$r" "$round" "$t" "$pc"
    done
  done
done
bench_stop_serve_test

# ---------------------------------------------------------------- report
summary=$(awk -F, '
  NR == 1 { next }
  { k = $1 "," $3; n[k]++; m = n[k]; rps[k, m] = $9; usr[k, m] = $10; sys[k, m] = $11; cpu[k, m] = $12; per[k, m] = $13; p50[k, m] = $15
    if ($7 > err[k]) err[k] = $7; conn[k] = $4; if (!(k in seen)) { seen[k] = 1; keys[++nk] = k } }
  function median(a, k, m,   i, j, v, x) {
    for (i = 1; i <= m; i++) v[i] = a[k, i] + 0
    for (i = 2; i <= m; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    return (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }
  END { for (i = 1; i <= nk; i++) { k = keys[i]; m = n[k]
    printf "%s,%s,%d,%.0f,%.2f,%.2f,%.2f,%.2f,%d,%d\n", k, conn[k], m, median(rps, k, m), median(usr, k, m), median(sys, k, m), median(cpu, k, m), median(per, k, m), err[k] + 0, median(p50, k, m) } }' "$runs_csv")
# get RATE TOOL FIELD (fields: 1 rate, 2 tool, 3 connections, 4 runs, 5 rps,
# 6 user, 7 sys, 8 cpu, 9 us/req, 10 max errors, 11 p50 us)
get() { awk -F, -v r="$1" -v t="$2" -v f="$3" '$1 == r && $2 == t { print $f }' <<<"$summary"; }
row() { printf '| %8s | %-38s | %5s | %8s | %10s | %9s | %6s | %10s | %9s | %10s | %8s |\n' "$@"; }
table=$(
  row rate generator runs 'req/s' 'cpu user s' 'cpu sys s' 'cpu s' 'cpu us/req' 'vs closed' 'max errors' 'p50 us'
  echo "|---------:|----------------------------------------|------:|---------:|-----------:|----------:|-------:|-----------:|----------:|-----------:|---------:|"
  for rate in "${rate_list[@]}"; do
    closed_per=$(get "$rate" closed 9)
    for t in open sopen closed vegeta; do
      IFS=, read -r _ _ c m rps usr sys cpu per err p50 <<<"$(awk -F, -v r="$rate" -v t="$t" '$1 == r && $2 == t' <<<"$summary")"
      [ -n "$m" ] || continue
      case "$t" in
        open) label="rackbench --rate $rate -c $c" ;;
        sopen) label="rackbench --rate $rate --slack $slack" ;;
        closed) label="rackbench closed loop -c $c" ;;
        vegeta) label="vegeta attack -rate $rate" ;;
      esac
      row "$rate" "$label" "$m" "$rps" "$usr" "$sys" "$cpu" "$per" "$(awk -v a="$per" -v b="$closed_per" 'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }')" "$err" "$p50"
    done
  done
)
paced_table=$(
  row rate generator runs 'req/s' 'cpu user s' 'cpu sys s' 'cpu s' 'cpu us/req' 'vs closed' 'max errors' 'p50 us'
  echo "|---------:|----------------------------------------|------:|---------:|-----------:|----------:|-------:|-----------:|----------:|-----------:|---------:|"
  for rate in "${paced_rates[@]}"; do
    closed_per=$(get "$rate" pclosed 9)
    for t in popen psopen pclosed; do
      IFS=, read -r _ _ c m rps usr sys cpu per err p50 <<<"$(awk -F, -v r="$rate" -v t="$t" '$1 == r && $2 == t' <<<"$summary")"
      [ -n "$m" ] || continue
      case "$t" in
        popen) label="rackbench --rate $rate -c $c" ;;
        psopen) label="rackbench --rate $rate --slack $slack" ;;
        pclosed) label="rackbench closed loop -c $c" ;;
      esac
      row "$rate" "$label" "$m" "$rps" "$usr" "$sys" "$cpu" "$per" "$(awk -v a="$per" -v b="$closed_per" 'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }')" "$err" "$p50"
    done
  done
)
# Per round (paired: the three ran back to back), for rate $1: the open
# loop's CPU per request over the closed loop's ("closed") or over
# vegeta's where vegeta kept up ("vegeta"); prints "list median". $3: the
# open loop's tool name (default open; popen for the paced runs).
per_round() {
  awk -F, -v R="$1" -v vs="$2" -v num="${3:-open}" '
    NR == 1 || $1 != R { next }
    { per[$2, $3] = $13; rps[$2, $3] = $9; err[$2, $3] = $7; rounds[$2] = 1 }
    END {
      n = 0
      for (r in rounds) order[++k] = r + 0
      for (i = 2; i <= k; i++) { x = order[i]; for (j = i - 1; j >= 1 && order[j] > x; j--) order[j + 1] = order[j]; order[j + 1] = x }
      for (i = 1; i <= k; i++) { r = order[i]
        if (per[r, vs] + 0 <= 0 || per[r, num] + 0 <= 0) continue
        if (vs == "vegeta" && !(rps[r, "vegeta"] >= 0.95 * R && err[r, "vegeta"] == 0)) continue
        v[++n] = per[r, num] / per[r, vs]; list = list (n > 1 ? ", " : "") sprintf("%.2f", v[n]) }
      if (n == 0) { print "- -"; exit }
      for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
      m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
      printf "%s %.2f\n", list, m }' "$runs_csv"
}
# The open loop's arm by its tool name, for the goals' lines.
arm_name() {
  case "$1" in
    open|popen) echo "each request at its due time" ;;
    sopen|psopen) echo "--slack $slack" ;;
  esac
}
goals=""
for rate in "${rate_list[@]}"; do
  open_per=$(get "$rate" open 9); closed_per=$(get "$rate" closed 9); veg_per=$(get "$rate" vegeta 9)
  r1=$(awk -v a="$open_per" -v b="$closed_per" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
  pr=$(per_round "$rate" closed)
  goals+="- (not the goal's comparison: unequal rates) at $rate req/s against nginx: the open loop's CPU per request over the closed loop's at -c $(get "$rate" closed 3) ($(get "$rate" closed 5) req/s), per round: ${pr% *}, median ${pr##* }x (the medians' ratio: ${r1}x, $open_per vs $closed_per us)."$'\n'
  for arm in open sopen; do
    [ -n "$(get "$rate" "$arm" 9)" ] || continue
    pv=$(per_round "$rate" vegeta "$arm")
    if [ "${pv##* }" != "-" ]; then
      v2=$(awk -v r="${pv##* }" 'BEGIN { print (r > 0 && r <= 0.5 ? "PASS" : "MISS") }')
      goals+="- $v2 at $rate req/s, $(arm_name "$arm"): the open loop's CPU per request at most half of vegeta's, in the rounds where vegeta kept up (95% of R answered, no errors): ${pv% *}, median ${pv##* }x (all rounds' medians: $(get "$rate" "$arm" 9) vs $veg_per us)."$'\n'
    else
      goals+="- n/a at $rate req/s, $(arm_name "$arm"): vegeta kept up in no round (median $(get "$rate" vegeta 5) ok req/s, up to $(get "$rate" vegeta 10) errors a run), so its CPU per request is not comparable."$'\n'
    fi
  done
done

for rate in "${paced_rates[@]}"; do
  for arm in popen psopen; do
    [ -n "$(get "$rate" "$arm" 9)" ] || continue
    pr=$(per_round "$rate" pclosed "$arm")
    # Judged on the paired rounds' median: a busy machine drifts between rounds.
    v1=$(awk -v r="${pr##* }" 'BEGIN { print (r > 0 && r <= 1.15 ? "PASS" : "MISS") }')
    goals+="- $v1 at $rate req/s (paced server), $(arm_name "$arm"): the open loop's CPU per request within 1.15x of the closed loop's at the same rate (-c $(get "$rate" pclosed 3), $(get "$rate" pclosed 5) req/s), per round: ${pr% *}, median ${pr##* }x ($(get "$rate" "$arm" 9) vs $(get "$rate" pclosed 9) us, medians)."$'\n'
  done
done

{
  echo "# The open loop's cost: rackbench --rate beside vegeta and the closed loop"
  echo
  echo "$(date -u '+%F %T UTC'), host $(hostname), $(nproc) CPUs ($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)), kernel $(uname -r)."
  echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo "nginx $(nginx -v 2>&1 | sed 's/^nginx version: //') (1 worker, 13-byte file, keep-alive) on CPU $server_cpu; each generator on CPU $load_cpu, one thread"
  echo "(vegeta: GOMAXPROCS follows the pinning), ${duration}s per run, $repeat interleaved rounds per rate (the order rotates); medians."
  echo
  echo "Rates: $rate_how."
  echo "The closed loop \"at the same request rate\": its rate follows from its connections, so per rate the fewest"
  echo "connections whose closed-loop rate reached it in 3-second calibration runs (raw/calibrate-c*.out), else the"
  echo "fastest count tried; at a rate below the one-connection rate, one connection, which then runs faster than R."
  echo "Calibration: $(for c in 1 2 3 4 6 8 12 16 24 32; do [ -z "${cal[$c]:-}" ] || printf -- '-c %s %s req/s; ' "$c" "${cal[$c]}"; done)"
  echo
  echo "$table"
  echo
  echo "The closed loop at exactly the open loop's rate (step 5): both against \`rackbench serve-test --delay $paced_delay\`"
  echo "on CPU $server_cpu (a server whose service time paces the closed loop), the open loop at the closed loop's"
  echo "calibrated rate; $repeat rounds, alternating which runs first:"
  echo
  echo "$paced_table"
  echo
  echo "- cpu us/req: the generator's CPU (user+sys of the whole process from GNU time, the same for all three) per ok response."
  echo "- vegeta's req/s: ok responses over its attack's duration (the sending; the wait for the last responses after it left out)."
  echo "- p50 us: median latency; rackbench's open loops from each request's due time (with --slack, the wait up to the"
  echo "  slack is in it), the closed loop's and vegeta's from the send."
  echo
  echo "## Goals"
  echo
  printf '%s' "$goals"
  echo
  echo "Tools: $("$RACKBENCH" --version 2>&1 | head -1); vegeta v12.13.0 ($("$VEGETA" -version 2>&1 | awk '/Runtime/ { print $2 }'))."
  echo "Exact command lines: commands.txt. Per-run numbers: runs.csv. Raw outputs: raw/."
} >"$out/results.md"

echo
cat "$out/results.md"
note "wrote $out/{results.md,runs.csv,commands.txt,raw/}"
