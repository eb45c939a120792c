#!/usr/bin/env bash
# Truth check on every loop: rackbench's median latency beside a peer's
# against a server whose own service time is known, `rackbench serve-test
# --delay D` (a thread per connection that sleeps D per request and prints
# its own p50 at exit; a fresh one for every run, pinned to its own CPU).
#
# Loops, each against wrk, the issue's reference, or the server's own time:
#   closed-uring   rackbench -c C --io io_uring       beside wrk -c C
#   closed-epoll   rackbench -c C --io epoll          beside wrk -c C
#   pipeline       rackbench -c C --pipeline P        beside the server's
#                  own service time: each connection's P requests are
#                  served one after another, so the k-th answer of a batch
#                  comes k service times after the batch's write (wrk's
#                  pipelining is no peer here: it records one latency per
#                  batch and prints percentiles of 0 us)
#   open-uring     rackbench --rate R -c 50 --io io_uring  beside wrk -c C
#   open-epoll     rackbench --rate R -c 50 --io epoll     beside wrk -c C
#   open-slack     rackbench --rate R -c 50 --slack S      beside wrk -c C
# The server has no queue, so every loop, closed or open, at whatever
# rate, should see one service time plus the wire. vegeta -rate R, the
# open-loop peer, is shown beside the open loops but not judged: pinned to
# one CPU its own Go runtime adds to its figures, by a varying amount.
#
# The rules, on the medians over the rounds:
#   agree:  |rackbench p50 - wrk p50| <= 2% of wrk's + 200 us
#   pipeline: the median request is the batch's (P/2)-th or (P/2+1)-th,
#           so the p50 lies between P/2 and P/2+1 times the server's own
#           p50 in the same run, +- 2% + 200 us
#   slack:  an open loop with slack S sends each request at the next point
#           of a grid one S apart, and its latency still counts from the
#           due time, so its p50 must lie about S/2 above wrk's (its due
#           times, R*S >= 4 to a grid step, wait between S/4 and 3S/4 at
#           the median): within [S/4, 3S/4] above wrk's, +- 2% + 200 us
#   floor:  no rackbench p50 below the test server's own p50 in its run.
#
# Usage: bench/truth.sh [--delay 1ms] [--connections 10] [--pipeline 16]
#          [--rate 2000] [--slack 2ms] [--duration 10] [--repeat 3]
#          [--server-cpu 1] [--load-cpu 0] [--out DIR]
# Needs wrk, vegeta (scripts/deps.sh bench), jq, taskset, GNU time.
# Writes OUT/truth.md (the table and each rule's verdict), OUT/runs.csv,
# OUT/commands.txt and OUT/raw/.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib/nginx.sh
source "$here/lib/nginx.sh"
root=$(cd "$here/.." && pwd)
delay=1ms
connections=10
pipeline=16
rate=2000
slack=2ms
duration=10
repeat=3
server_cpu=1
load_cpu=0
out=""
RACKBENCH=${RACKBENCH:-$root/target/release/rackbench}
VEGETA=${VEGETA:-$(command -v vegeta || echo "$HOME/go/bin/vegeta")}

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
die() { echo "truth: $*" >&2; exit 2; }
note() { echo "truth: $*" >&2; }
is_pos() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ]; }
us_of() { # 2ms / 500us -> microseconds
  case "$1" in *ms) echo $(( ${1%ms} * 1000 )) ;; *us) echo "${1%us}" ;; esac
}

while [ $# -gt 0 ]; do
  case "$1" in
    --delay) delay=$2; shift 2 ;;
    --connections|-c) connections=$2; shift 2 ;;
    --pipeline) pipeline=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --slack) slack=$2; shift 2 ;;
    --duration) duration=${2%s}; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --server-cpu) server_cpu=$2; shift 2 ;;
    --load-cpu) load_cpu=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
for v in connections pipeline rate duration repeat; do is_pos "${!v}" || die "--$v wants an integer >= 1, got '${!v}'"; done
[[ $delay =~ ^[0-9]+(us|ms)$ ]] || die "--delay wants a time such as 1ms or 500us, got '$delay'"
[[ $slack =~ ^[0-9]+(us|ms)$ ]] || die "--slack wants a time such as 2ms or 500us, got '$slack'"
slack_us=$(us_of "$slack")
# R*S due times to a grid step: fewer than 4 and the median wait is no
# longer near S/2 (one due time per step waits wherever it falls).
[ $(( rate * slack_us )) -ge 4000000 ] || die "--rate x --slack must be at least 4 requests per grid step (e.g. --rate 2000 --slack 2ms), got $rate x $slack"
[[ $server_cpu =~ ^[0-9]+$ && $load_cpu =~ ^[0-9]+$ ]] || die "--server-cpu/--load-cpu want CPU numbers"
for c in wrk jq taskset awk; do
  command -v "$c" >/dev/null 2>&1 || die "$c is missing (scripts/deps.sh bench)"
done
[ -x "$RACKBENCH" ] || die "RACKBENCH=$RACKBENCH is not an executable (make build)"
[ -x "$VEGETA" ] || die "vegeta is missing: scripts/deps.sh bench (go install github.com/tsenart/vegeta/v12@v12.13.0), or set VEGETA"
bench_check_pinning "apt-get install time"

bench_out truth runs.csv truth.md
bench_workdir truth
bench_pgids=""

# wrk --latency prints "50%  1.10ms".
wrk_p50() {
  awk '$1=="50%" {v=$2; if (v ~ /us$/) {sub(/us$/,"",v); print int(v)} else if (v ~ /ms$/) {sub(/ms$/,"",v); print int(v*1000)} else if (v ~ /s$/) {sub(/s$/,"",v); print int(v*1000000)}}' "$1"
}

runs_csv="$out/runs.csv"
echo "round,tool,rc,ok,errors,p50_us,server_p50_us" >"$runs_csv"

run_one() { # ROUND TOOL
  local round=$1 tool=$2 base="$out/raw/$2-round$1" p50="" ok=0 err=0 parsed
  printf '\n# round %s: %s\n' "$round" "$tool" >>"$cmdlog"
  bench_serve_test "$base" "$delay"
  url=$serve_url
  case "$tool" in
    closed-uring) run_timed "$base.time" "$base.out" "$base.err" \
      "$RACKBENCH" load "$url" -c "$connections" -t 1 --io io_uring -d "${duration}s" --json ;;
    closed-epoll) run_timed "$base.time" "$base.out" "$base.err" \
      "$RACKBENCH" load "$url" -c "$connections" -t 1 --io epoll -d "${duration}s" --json ;;
    pipeline) run_timed "$base.time" "$base.out" "$base.err" \
      "$RACKBENCH" load "$url" -c "$connections" -t 1 --pipeline "$pipeline" -d "${duration}s" --json ;;
    open-uring) run_timed "$base.time" "$base.out" "$base.err" \
      "$RACKBENCH" load "$url" --rate "$rate" -c 50 -t 1 --io io_uring -d "${duration}s" --json ;;
    open-epoll) run_timed "$base.time" "$base.out" "$base.err" \
      "$RACKBENCH" load "$url" --rate "$rate" -c 50 -t 1 --io epoll -d "${duration}s" --json ;;
    open-slack) run_timed "$base.time" "$base.out" "$base.err" \
      "$RACKBENCH" load "$url" --rate "$rate" --slack "$slack" -c 50 -t 1 -d "${duration}s" --json ;;
    wrk) run_timed "$base.time" "$base.out" "$base.err" \
      wrk -t1 -c"$connections" -d"${duration}s" --latency "$url" ;;
    vegeta) bench_run_vegeta "$base" "$rate" ;;
  esac
  bench_stop_serve_test
  case "$tool" in
    wrk)
      p50=$(wrk_p50 "$base.out")
      parsed=$(bench_parse_wrk "$base.out" || true) ;;
    vegeta)
      p50=$(jq -r '.latencies["50th"] / 1000 | floor' "$base.out" 2>/dev/null || true)
      parsed=$(jq -r '(.status_codes // {}) as $s | ([$s | to_entries[] | select((.key | tonumber) < 400) | .value] | add // 0) as $ok | "\($ok) \(.requests - $ok)"' "$base.out" 2>/dev/null || true) ;;
    *)
      p50=$(jq -r '.latency_us.p50' "$base.out" 2>/dev/null || true)
      parsed=$(bench_parse_rackbench "$base.out" || true) ;;
  esac
  [ -z "$parsed" ] || read -r ok err _ <<<"$parsed"
  [ -n "$p50" ] && [ "$p50" != null ] || { note "$tool round $round: no p50 (exit $rc); see $base.out and $base.err"; p50=0; }
  local own
  own=$(jq -r '.service_p50_us // 0' "$base.server.json" 2>/dev/null || echo 0)
  echo "$round,$tool,$rc,$ok,$err,$p50,$own" >>"$runs_csv"
  note "round $round: $tool p50 $p50 us (server's own $own us), ok $ok, errors $err"
}

tools=(closed-uring closed-epoll pipeline open-uring open-epoll open-slack wrk vegeta)
for round in $(seq "$repeat"); do
  # Rotate the order so that no tool always runs first or last.
  k=$(( (round - 1) % ${#tools[@]} ))
  for j in "${!tools[@]}"; do
    run_one "$round" "${tools[$(( (j + k) % ${#tools[@]} ))]}"
  done
done

awk -F, -v d="$delay" -v c="$connections" -v P="$pipeline" -v R="$rate" -v S="$slack" -v s_us="$slack_us" -v n="$repeat" '
function median(tool, own,    k, m, i, j, t, a) {
  m = 0
  for (k = 1; k <= n; k++) if ((tool, k) in p) a[++m] = (own ? o[tool, k] : p[tool, k])
  for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
  if (m == 0) return 0
  return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
function rounds(tool, own,    k, s) {
  s = ""
  for (k = 1; k <= n; k++) s = s ((tool, k) in p ? (own ? o[tool, k] : p[tool, k]) : "-") (k < n ? ", " : "")
  return s
}
function agree(tool, peer, shown_only,    rb, pe, tol, diff) {
  rb = median(tool); pe = median(peer); tol = pe * 0.02 + 200
  diff = rb - pe
  printf "| %s | %s | %d (%s) | %s | %d | %+d | +-%d | %s |\n", tool, rounds(tool), rb, peer, rounds(peer), pe, diff, tol, (diff <= tol && -diff <= tol) ? "agree" : (shown_only ? "apart" : "DISAGREE")
  if (!(diff <= tol && -diff <= tol) && !shown_only) bad++
}
function pipeline_rule(tool,    rb, own, tol, lo, hi) {
  rb = median(tool); own = median(tool, 1); tol = rb * 0.02 + 200
  lo = P / 2 * own - tol; hi = (P / 2 + 1) * own + tol
  printf "| %s | %s | %d (%d x own) | %s | %d | %+d | %d..%d | %s |\n", tool, rounds(tool), rb, P / 2, rounds(tool, 1), own, rb - P / 2 * own, lo - P / 2 * own, hi - P / 2 * own, (rb >= lo && rb <= hi) ? "agree" : "DISAGREE"
  if (!(rb >= lo && rb <= hi)) bad++
}
function slack_rule(tool, peer,    rb, pe, tol, diff, lo, hi) {
  rb = median(tool); pe = median(peer); tol = pe * 0.02 + 200
  diff = rb - pe; lo = s_us / 4 - tol; hi = 3 * s_us / 4 + tol
  printf "| %s | %s | %d (%s) | %s | %d | %+d | %d..%d | %s |\n", tool, rounds(tool), rb, peer, rounds(peer), pe, diff, lo, hi, (diff >= lo && diff <= hi) ? "agree" : "DISAGREE"
  if (!(diff >= lo && diff <= hi)) bad++
}
NR > 1 {
  p[$2, $1] = $6; o[$2, $1] = $7
  if ($2 !~ /^(wrk|wrk-pipeline|vegeta)$/) { below += ($6 < $7); if ($6 < $7) lows = lows " " $2 " round " $1 " (" $6 " < " $7 ")"; runs++ }
  errs += $5; if ($6 == 0) missing++
}
END {
  printf "# Truth check on every loop\n\n"
  printf "The test server sleeps %s per request (a thread per connection: no queue); %d rounds, each run on a fresh server.\n", d, n
  printf "Closed loops and pipelining: %d connections (pipeline depth %d); open loops: %d req/s over 50 connections (vegeta: its own), slack %s.\n\n", c, P, R, S
  printf "| loop | p50 by round, us | median (against) | reference by round | reference median | difference | allowed | verdict |\n|---|---|---|---|---|---|---|---|\n"
  agree("closed-uring", "wrk"); agree("closed-epoll", "wrk"); pipeline_rule("pipeline")
  agree("open-uring", "wrk"); agree("open-epoll", "wrk"); slack_rule("open-slack", "wrk")
  printf "\nShown, not judged: vegeta, the open-loop peer, at the same rate (its Go runtime, pinned to one CPU, adds to its figures):\n\n"
  printf "| loop | p50 by round, us | median (against) | reference by round | reference median | difference | allowed | verdict |\n|---|---|---|---|---|---|---|---|\n"
  agree("vegeta", "wrk", 1); agree("open-uring", "vegeta", 1); agree("open-epoll", "vegeta", 1)
  printf "\nrackbench p50 never below the test server'"'"'s own p50 in the same run: %s (%d runs)\n", (below == 0 ? "yes" : "NO:" lows), runs
  printf "Errors over all runs: %d; runs without a p50: %d\n", errs, missing
  printf "\nVerdict: %s\n", (bad == 0 && below == 0 && missing == 0 ? "every loop agrees" : "SOME LOOP DISAGREES")
}' "$runs_csv" | tee "$out/truth.md"
