#!/usr/bin/env bash
# Paired rounds for issue 17's engine work: one nginx (1 worker, 13-byte
# file) pinned to CPU 1; each generator pinned to CPU 0, one after another,
# in interleaved rounds. CPU of each generator from GNU time (user+sys).
# Usage: run.sh OUTDIR ROUNDS SECONDS "name=cmd-with-URL ..." (URL is
# replaced by nginx's URL; cmds separated by ';').
set -euo pipefail
out=$1 rounds=$2 secs=$3 specs=$4
mkdir -p "$out/raw"
dir=$(mktemp -d /tmp/uring2-bench.XXXXXX); chmod 755 "$dir"
port=$((20000 + RANDOM % 20000))
printf 'hello world!\n' >"$dir/hello.txt"
cat >"$dir/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path $dir/tb; proxy_temp_path $dir/tp; fastcgi_temp_path $dir/tf;
  uwsgi_temp_path $dir/tu; scgi_temp_path $dir/ts;
  default_type text/plain;
  keepalive_requests 1000000000;
  keepalive_timeout 300s;
  server { listen 127.0.0.1:$port; root $dir; }
}
CONF
setsid taskset -c 1 nginx -c "$dir/nginx.conf" </dev/null >"$dir/nginx.out" 2>&1 &
ngx=$!
trap 'kill -TERM -- -$ngx 2>/dev/null; wait $ngx 2>/dev/null; rm -rf "$dir"' EXIT
url="http://127.0.0.1:$port/hello.txt"
for _ in $(seq 100); do curl -fsS -o /dev/null "$url" 2>/dev/null && break; sleep 0.05; done
echo "round,name,ok,secs,rps,cpu_user,cpu_sys,req_per_cpu_s" >"$out/runs.csv"
IFS=';' read -r -a items <<<"$specs"
taskset -c 0 wrk -t1 -c50 -d2s "$url" >/dev/null
for r in $(seq "$rounds"); do
  for item in "${items[@]}"; do
    name=${item%%=*}; cmd=${item#*=}; cmd=${cmd//URL/$url}; cmd=${cmd//SECS/$secs}
    base="$out/raw/$name-r$r"
    echo "$cmd" >"$base.cmd"
    # shellcheck disable=SC2086
    /usr/bin/time -o "$base.time" -f '%U %S' taskset -c 0 $cmd >"$base.out" 2>"$base.err" || true
    read -r u sy <"$base.time" || true
    if [[ $name == wrk* ]]; then
      ok=$(awk '/requests in/ {print $1}' "$base.out")
      rps=$(awk '/^Requests\/sec/ {print $2}' "$base.out")
      d=$(awk -v n="$ok" -v r="$rps" 'BEGIN{printf "%.3f", n/r}')
    else
      read -r ok d < <(jq -r '"\(.requests.ok) \(.duration_s)"' "$base.out")
      rps=$(awk -v n="$ok" -v d="$d" 'BEGIN{printf "%.0f", n/d}')
    fi
    eff=$(awk -v n="$ok" -v u="$u" -v s="$sy" 'BEGIN{printf "%.0f", n/(u+s)}')
    echo "$r,$name,$ok,$d,$rps,$u,$sy,$eff" | tee -a "$out/runs.csv"
  done
done
