# Shared by bench/peers.sh, connections.sh, pipeline.sh and openloop.sh (sourced):
# a throwaway nginx on 127.0.0.1 pinned to one CPU, and generator runs
# pinned to another under GNU time. The caller defines die, note, out,
# cmdlog, server_cpu and load_cpu, and writes "$dir/nginx.conf" (listening
# on "$port", serving "$dir") between bench_workdir/bench_port and
# bench_nginx_start.

# A temporary directory for nginx ($dir) and the traps that stop nginx
# and any generator still running, by process group, on every exit (and
# the process groups the caller lists in $bench_pgids).
bench_workdir() { # NAME
  dir=$(mktemp -d "/tmp/rackbench-$1.XXXXXX")
  chmod 755 "$dir"  # nginx's worker runs as nobody when started by root
  ngx=""
  cur=""
  trap bench_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

bench_cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$cur" ]; then kill -TERM -- "-$cur" 2>/dev/null || true; wait "$cur" 2>/dev/null || true; fi
  # Other servers the caller started in their own process groups.
  local g
  for g in ${bench_pgids:-}; do
    kill -TERM -- "-$g" 2>/dev/null || true
    wait "$g" 2>/dev/null || true
  done
  if [ -n "$ngx" ]; then
    kill -TERM -- "-$ngx" 2>/dev/null || true
    wait "$ngx" 2>/dev/null || true
    kill -KILL -- "-$ngx" 2>/dev/null || true
  fi
  rm -rf "$dir"
  exit "$rc"
}

# A free port between 20000 and 40000 ($port) and nginx's file ($dir/hello.txt).
bench_port() {
  port=""
  local p
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
  done
  [ -n "$port" ] || die "no free port found between 20000 and 40000"
  printf 'hello world!\n' >"$dir/hello.txt"
}

# Starts nginx with "$dir/nginx.conf" in its own process group ($ngx),
# waits until $url answers with the file, and logs the command.
bench_nginx_start() {
  cp "$dir/nginx.conf" "$out/raw/nginx.conf"
  local ngx_cmd=(taskset -c "$server_cpu" nginx -c "$dir/nginx.conf")
  printf '# nginx (own process group via setsid)\nsetsid %s\n' "$(printf '%q ' "${ngx_cmd[@]}")" >>"$cmdlog"
  # A background job of a non-interactive shell is no group leader, so setsid
  # does not fork: $! is nginx's master and the id of its new process group.
  setsid "${ngx_cmd[@]}" </dev/null >"$dir/nginx.out" 2>&1 &
  ngx=$!
  url="http://127.0.0.1:$port/hello.txt"
  local up=0
  for _ in $(seq 200); do
    if curl -fsS -o /dev/null "$url" 2>/dev/null; then up=1; break; fi
    kill -0 "$ngx" 2>/dev/null || { cat "$dir/nginx.out" "$dir/error.log" >&2 2>/dev/null || true; die "nginx exited at start"; }
    sleep 0.05
  done
  [ $up -eq 1 ] || die "nginx did not answer on $url"
  [ "$(ps -o pgid= -p "$ngx" | tr -d ' ')" = "$ngx" ] || die "nginx is not in its own process group"
  [ "$(curl -fsS "$url")" = "hello world!" ] || die "nginx serves the wrong body"
}

# Runs CMD... pinned to $load_cpu under GNU time ("wall user sys maxrss_kb"
# into TIMEFILE) in its own process group; its exit status in $rc.
run_timed() { # TIMEFILE STDOUT STDERR CMD...
  local timef=$1 stdout=$2 stderr=$3; shift 3
  local full=(/usr/bin/time -o "$timef" -f '%e %U %S %M' taskset -c "$load_cpu" "$@")
  printf '%s\n' "$(printf '%q ' "${full[@]}")" >>"$cmdlog"
  setsid "${full[@]}" </dev/null >"$stdout" 2>"$stderr" &
  cur=$!
  rc=0
  wait "$cur" || rc=$?
  cur=""
}
