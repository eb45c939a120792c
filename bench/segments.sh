#!/usr/bin/env bash
# 1, 2 and 4 local segments (`rackbench load --segment I/N --start-at T`)
# against one throwaway nginx, merged with `rackbench merge`, beside
# nginx's own count of the requests it answered (its access log).
#
# Usage: bench/segments.sh [--out DIR] [--duration SECS] [--rate RPS]
#                          [--connections C] [--segments "1 2 4"]
#   RACKBENCH=path/to/rackbench (default target/release/rackbench)
#
# Each segment count runs twice: a closed loop with -c C split between the
# segments, and an open loop at --rate RPS split between them. For each:
# the merged figures, the sum of the segments' OK responses, nginx's access
# log lines for the same interval, and (open loop) how many requests
# shared their millisecond in nginx's log with another: interleaved
# segments keep that near what one generator at the whole rate gives;
# segments in step would put N in each.
#
# Load goes to 127.0.0.1 only; nginx is stopped at the end, whatever happens.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
RACKBENCH=${RACKBENCH:-$root/target/release/rackbench}
RACKBENCH=$(cd "$(dirname "$RACKBENCH")" && pwd)/$(basename "$RACKBENCH")
out=""
secs=5
rate=400
conns=8
counts="1 2 4"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --duration) secs=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --connections) conns=$2; shift 2 ;;
    --segments) counts=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
note() { echo "segments.sh: $*" >&2; }
die() { note "error: $*"; exit 1; }
for c in nginx curl jq awk; do
  command -v "$c" >/dev/null 2>&1 || die "$c is missing (apt-get install $c)"
done
[ -x "$RACKBENCH" ] || die "RACKBENCH=$RACKBENCH is not an executable (build it with 'make build')"

[ -n "$out" ] || out="$root/bench/runs/$(date +%F)-segments"
mkdir -p "$out/raw"
out=$(cd "$out" && pwd)
rm -f "$out"/raw/* "$out/commands.txt" "$out/results.csv"
cmdlog="$out/commands.txt"

# ---------------------------------------------------------------- nginx
dir=$(mktemp -d /tmp/rackbench-segments.XXXXXX)
chmod 755 "$dir"
ngx=""
pids=()
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  if [ -n "$ngx" ]; then
    kill -TERM -- "-$ngx" 2>/dev/null || true
    wait "$ngx" 2>/dev/null || true
    kill -KILL -- "-$ngx" 2>/dev/null || true
  fi
  rm -rf "$dir"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port=""
for _ in $(seq 100); do
  p=$((20000 + RANDOM % 20000))
  if port_free "$p"; then port=$p; break; fi
done
[ -n "$port" ] || die "no free port found between 20000 and 40000"

printf 'hello world!\n' >"$dir/hello.txt"
cat >"$dir/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 8192; }
http {
  # One line per answered request: arrival time (ms) and status.
  log_format arrivals '\$msec \$request_time \$status';
  access_log $dir/access.log arrivals;
  client_body_temp_path $dir/tmp-body;
  proxy_temp_path $dir/tmp-proxy;
  fastcgi_temp_path $dir/tmp-fastcgi;
  uwsgi_temp_path $dir/tmp-uwsgi;
  scgi_temp_path $dir/tmp-scgi;
  default_type text/plain;
  keepalive_requests 1000000000;
  keepalive_timeout 300s;
  server {
    listen 127.0.0.1:$port;
    root $dir;
  }
}
CONF
cp "$dir/nginx.conf" "$out/raw/nginx.conf"
ngx_cmd=(nginx -c "$dir/nginx.conf")
printf '# nginx (own process group via setsid)\nsetsid %s\n' "$(printf '%q ' "${ngx_cmd[@]}")" >>"$cmdlog"
setsid "${ngx_cmd[@]}" </dev/null >"$dir/nginx.out" 2>&1 &
ngx=$!
url="http://127.0.0.1:$port/hello.txt"
up=0
for _ in $(seq 200); do
  if curl -fsS -o /dev/null "$url" 2>/dev/null; then up=1; break; fi
  kill -0 "$ngx" 2>/dev/null || { cat "$dir/nginx.out" "$dir/error.log" >&2 || true; die "nginx exited at start"; }
  sleep 0.05
done
[ $up -eq 1 ] || die "nginx did not answer on $url"
note "nginx pid $ngx serving $url"

# Lines of the access log with an arrival ($msec less $request_time) in
# [from, to) (unix seconds), and how many of them share their millisecond.
log_count() {
  awk -v from="$1" -v to="$2" '
    { t = $1 - $2; if (t >= from && t < to) { n++; if ($3 == 200) ok++; ms[sprintf("%.3f", t)]++ } }
    END { shared = 0; for (m in ms) if (ms[m] > 1) shared += ms[m];
          printf "%d %d %d\n", n, ok, shared }' "$dir/access.log"
}

echo "mode,segments,connections,rate_rps,merged_ok,segments_ok_sum,merged_rps,p50_us,p99_us,p999_us,errors,late_ms_max,nginx_lines,nginx_200,nginx_shared_ms" >"$out/results.csv"

run_one() {
  local mode=$1 n=$2
  local start
  start=$(awk -v now="$(date +%s.%N)" 'BEGIN { printf "%.3f", now + 3 }')
  local args=("$url" -c "$conns" -d "${secs}s" --start-at "$start")
  [ "$mode" = open ] && args+=(--rate "$rate")
  local files=()
  pids=()
  for i in $(seq 0 $((n - 1))); do
    local f="$out/raw/$mode-n$n-seg$i.json"
    files+=("$f")
    printf '%q ' "$RACKBENCH" load "${args[@]}" --segment "$i/$n" --json >>"$cmdlog"
    printf '> %s &\n' "raw/$(basename "$f")" >>"$cmdlog"
    "$RACKBENCH" load "${args[@]}" --segment "$i/$n" --json >"$f" 2>"$f.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || die "a segment failed: $(cat "$out"/raw/*.err)"; done
  pids=()
  echo "wait" >>"$cmdlog"
  local merged="$out/raw/$mode-n$n-merged.json"
  printf '%q ' "$RACKBENCH" merge "${files[@]#"$out"/}" --json >>"$cmdlog"
  printf '> raw/%s\n' "$(basename "$merged")" >>"$cmdlog"
  # Relative names, as in commands.txt (they land in the merged `segments`).
  (cd "$out" && "$RACKBENCH" merge "${files[@]#"$out"/}" --json >"$merged")
  (cd "$out" && "$RACKBENCH" merge "${files[@]#"$out"/}" >"$out/raw/$mode-n$n-merged.txt")
  sleep 0.5  # nginx writes its log as each request ends
  local to
  to=$(awk -v s="$start" -v d="$secs" 'BEGIN { printf "%.3f", s + d }')
  read -r lines ok200 shared < <(log_count "$start" "$to")
  local seg_sum
  seg_sum=$(jq -s 'map(.requests.ok) | add' "${files[@]}")
  jq -r --arg mode "$mode" --argjson n "$n" --argjson seg "$seg_sum" \
    --argjson lines "$lines" --argjson ok200 "$ok200" --argjson shared "$shared" \
    '[$mode, $n, .config.connections, (.config.rate_rps // ""), .requests.ok, $seg,
      (.throughput_rps | floor), .latency_us.p50, .latency_us.p99, .latency_us.p999,
      (.errors | add), ([.segments[].late_ms] | max), $lines, $ok200, $shared] | @csv' \
    "$merged" >>"$out/results.csv"
  note "$mode, $n segment(s): $(tail -1 "$out/results.csv")"
}

for mode in closed open; do
  for n in $counts; do run_one "$mode" "$n"; done
done

{
  echo "# Segments against one nginx ($(date -u +%F))"
  echo
  echo "1, 2 and 4 \`rackbench load --segment I/N\` processes on this machine, all"
  echo "started at one \`--start-at\` (3 s ahead), against one nginx (1 worker,"
  echo "13-byte file, keep-alive, access log on: \`\$msec \$request_time \$status\`), then"
  echo "\`rackbench merge\`. Closed loop: -c $conns split between the segments; open"
  echo "loop: --rate $rate split between them. ${secs} s counted window each, no warm-up."
  echo "Commands: commands.txt; documents: raw/."
  echo
  echo "| mode | segments | merged ok | sum of segments' ok | nginx lines (200) in the window | merged req/s | p50 µs | p99 µs | p99.9 µs | errors | latest start ms | requests sharing a ms |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
  tail -n +2 "$out/results.csv" | tr -d '"' | awk -F, '{ printf "| %s | %s | %s | %s | %s (%s) | %s | %s | %s | %s | %s | %.1f | %s |\n", $1, $2, $5, $6, $13, $14, $7, $8, $9, $10, $11, $12, ($1 == "open" ? $15 : "-") }'
  echo
  echo "- merged ok: \`rackbench merge\`'s requests.ok (counted requests with an OK"
  echo "  answer); it equals the segments' sum by construction. nginx lines: its"
  echo "  access-log lines whose arrival (\$msec - \$request_time, ms resolution) falls"
  echo "  in [start-at, start-at + ${secs} s): the server's own count. The two differ by"
  echo "  the requests in flight at the end and by the log's millisecond rounding at"
  echo "  the window's edges."
  echo "- latency: read off the merged histograms (every sample), never averaged."
  echo "- requests sharing a ms (open loop): requests whose arrival in nginx's log"
  echo "  shares its millisecond with another. At $rate req/s one request falls due"
  echo "  every $(awk -v r="$rate" 'BEGIN { printf "%.2f", 1000 / r }') ms, so one generator shares few; segments in step"
  echo "  would send N at once and share nearly all (N > 1)."
  echo "- Open loop p99: latency from each request's scheduled send, so a"
  echo "  generator or server stalled by the busy machine shows in it."
  echo "- The machine (2 cores) was busy with other jobs (compiles) during the run:"
  echo "  nginx and every segment shared those cores with them, so the absolute"
  echo "  figures are noisy; the counts are what this run is for."
  echo
  echo "- rackbench: $("$RACKBENCH" --version)"
  echo "- nginx: $(nginx -v 2>&1 | sed 's/^nginx version: //')"
  echo "- kernel: $(uname -r); CPUs: $(nproc)"
} >"$out/results.md"
note "wrote $out/results.md"
