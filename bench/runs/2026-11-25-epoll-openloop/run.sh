#!/usr/bin/env bash
# The open loop on epoll, before and after it sleeps to each due time
# instead of waking for every response: two builds side by side against one
# nginx (bench/lib/nginx.sh: 1 worker on CPU 1, 13-byte file), each run
# pinned to CPU 0 under GNU time, `--io epoll --rate R -c 50 -t 1 -d 10s`,
# interleaved rounds with the order swapped every round.
# Usage: run.sh BASE_BIN NEW_BIN ROUNDS "RATE ..." OUT
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
# shellcheck source=bench/lib/nginx.sh
source "$root/bench/lib/nginx.sh"
base=$1 new=$2 rounds=$3 rates=$4 out=$5
server_cpu=1 load_cpu=0
die() { echo "epoll-openloop: $*" >&2; exit 2; }
note() { echo "epoll-openloop: $*" >&2; }
bench_check_pinning "apt-get install time"
bench_out epoll-openloop runs.csv
bench_workdir epoll-openloop
bench_port
bench_nginx_conf
bench_nginx_start
echo "rate,round,build,rc,ok,errors,duration_s,cpu_user_s,cpu_sys_s,cpu_us_per_req,wakeups_per_req,p50_us,late_sends" >"$out/runs.csv"
for r in $(seq "$rounds"); do
  for rate in $rates; do
    order=(base new); [ $((r % 2)) -eq 0 ] && order=(new base)
    for b in "${order[@]}"; do
      bin=$base; [ "$b" = new ] && bin=$new
      f="$out/raw/r$rate-$b-round$r"
      printf '\n# rate %s, round %s: %s\n' "$rate" "$r" "$b" >>"$cmdlog"
      run_timed "$f.time" "$f.out" "$f.err" "$bin" load "$url" --io epoll --rate "$rate" -c 50 -t 1 -d 10s --json
      read -r _ user sys _ < <(tail -1 "$f.time")
      jq -r --arg rate "$rate" --arg r "$r" --arg b "$b" --arg rc "$rc" --arg u "$user" --arg s "$sys" \
        '[$rate, $r, $b, $rc, .requests.ok, ([.errors[]] | add), .duration_s, $u, $s,
          ((($u | tonumber) + ($s | tonumber)) * 1e6 / .requests.ok | floor),
          (.generator.wakeups / .requests.ok * 100 | floor / 100), .latency_us.p50, .schedule.late_sends] | map(tostring) | join(",")' \
        "$f.out" >>"$out/runs.csv"
      note "$(tail -1 "$out/runs.csv")"
    done
  done
done
