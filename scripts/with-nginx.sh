#!/usr/bin/env bash
# Starts a throwaway nginx (1 worker, serving a 13-byte file) on a free
# loopback port, runs the given command with $URL set to that file, and
# stops nginx by its process group whatever happens.
# Usage: scripts/with-nginx.sh [--cpu N] -- COMMAND...
set -euo pipefail

cpu=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) cpu="$2"; shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: $0 [--cpu N] -- COMMAND..." >&2; exit 2; }
command -v nginx >/dev/null || { echo "nginx is missing: run 'scripts/deps.sh run' (or apt-get install nginx-light)" >&2; exit 1; }

dir=$(mktemp -d /tmp/rackbench-nginx.XXXXXX)
chmod 755 "$dir"  # nginx workers run as nobody when started by root
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill -TERM -- "-$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port=""
for _ in $(seq 50); do
  p=$((20000 + RANDOM % 20000))
  if port_free "$p"; then port=$p; break; fi
done
[ -n "$port" ] || { echo "no free port found between 20000 and 40000" >&2; exit 1; }

printf 'hello world!\n' > "$dir/hello.txt"
cat > "$dir/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path $dir/tmp-body;
  proxy_temp_path $dir/tmp-proxy;
  fastcgi_temp_path $dir/tmp-fastcgi;
  uwsgi_temp_path $dir/tmp-uwsgi;
  scgi_temp_path $dir/tmp-scgi;
  keepalive_requests 100000000;
  keepalive_timeout 120s;
  server { listen 127.0.0.1:$port; root $dir; }
}
CONF

pin=()
[ -z "$cpu" ] || pin=(taskset -c "$cpu")
setsid "${pin[@]}" nginx -c "$dir/nginx.conf" &
pid=$!

url="http://127.0.0.1:$port/hello.txt"
for _ in $(seq 100); do
  if curl -fsS -o /dev/null "$url" 2>/dev/null; then break; fi
  kill -0 "$pid" 2>/dev/null || { echo "nginx exited at start:" >&2; cat "$dir/error.log" >&2; exit 1; }
  sleep 0.05
done
curl -fsS -o /dev/null "$url" || { echo "nginx did not answer on $url" >&2; exit 1; }

export URL="$url"
"$@"
