# Shared by bench/peers.sh, connections.sh, pipeline.sh, openloop.sh and
# truth.sh (sourced): the output directory, the pinning checks, a throwaway
# nginx on 127.0.0.1 pinned to one CPU (or rackbench's test server),
# generator runs pinned to another under GNU time (vegeta's too), and the
# parsing of rackbench's and wrk's output. The caller defines die, note,
# root, out, server_cpu and load_cpu, and writes "$dir/nginx.conf"
# (bench_nginx_conf, listening on "$port", serving "$dir") between
# bench_workdir/bench_port and bench_nginx_start.

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

# `rackbench serve-test --delay DELAY` ($RACKBENCH) in its own process
# group, pinned to $server_cpu and stopped on exit with the others in
# $bench_pgids; its address in BASE.url, the JSON it prints at exit (its
# own service time) in BASE.server.json. Sets srv (its pid) and serve_url.
bench_serve_test() { # BASE DELAY
  local cmd=(taskset -c "$server_cpu" "$RACKBENCH" serve-test --delay "$2")
  printf '# test server (own process group via setsid; its JSON at exit on stderr)\nsetsid %s\n' "$(printf '%q ' "${cmd[@]}")" >>"$cmdlog"
  setsid "${cmd[@]}" >"$1.url" 2>"$1.server.json" &
  srv=$!
  bench_pgids="${bench_pgids:-} $srv"
  serve_url=""
  for _ in $(seq 100); do
    serve_url=$(head -1 "$1.url" 2>/dev/null || true)
    [ -z "$serve_url" ] || break
    sleep 0.05
  done
  [ -n "$serve_url" ] || die "rackbench serve-test printed no address; see $1.server.json"
}

# Stops the test server bench_serve_test started last (its JSON is then
# complete).
bench_stop_serve_test() {
  kill -TERM -- "-$srv" 2>/dev/null || true
  wait "$srv" 2>/dev/null || true
  bench_pgids=${bench_pgids// $srv/}
  srv=""
}

# vegeta attack -rate RATE for $duration seconds on $url ($VEGETA), timed
# and pinned as run_timed does; its JSON report in BASE.out, made
# afterwards, outside the timed run.
bench_run_vegeta() { # BASE RATE
  local base=$1 rate=$2
  echo "GET $url" >"$base.targets"
  printf '# targets file %s holds: GET %s\n' "$base.targets" "$url" >>"$cmdlog"
  run_timed "$base.time" "$base.attack.out" "$base.err" \
    "$VEGETA" attack -targets "$base.targets" -rate "$rate" -duration "${duration}s" -keepalive=true -output "$base.bin"
  printf '%q report -type=json %q\n' "$VEGETA" "$base.bin" >>"$cmdlog"
  "$VEGETA" report -type=json "$base.bin" >"$base.out" 2>>"$base.err" || true
  rm -f "$base.bin" "$base.targets" "$base.attack.out"
}

# The output directory: --out, else bench/runs/<date>-SUFFIX; raw/ and the
# FILES a run writes are emptied first. Sets out and cmdlog.
bench_out() { # SUFFIX FILE...
  local suffix=$1 f
  shift
  [ -n "$out" ] || out="$root/bench/runs/$(date +%F)-$suffix"
  mkdir -p "$out/raw"
  out=$(cd "$out" && pwd)
  rm -f "$out"/raw/*
  for f in commands.txt "$@"; do rm -f "${out:?}/$f"; done
  cmdlog="$out/commands.txt"
}

# GNU time is there and both CPUs can be pinned to; HINT says how to get
# GNU time.
bench_check_pinning() { # HINT
  [ -x /usr/bin/time ] || die "GNU time (/usr/bin/time) is missing ($1)"
  local cpu
  for cpu in "$server_cpu" "$load_cpu"; do
    taskset -c "$cpu" true 2>/dev/null || die "cannot pin to CPU $cpu (CPUs allowed: $(taskset -pc $$ | sed 's/.*: //'))"
  done
}

# Writes "$dir/nginx.conf": one worker, no access log, keep-alive without a
# request cap, serving "$dir" on 127.0.0.1:$port. Optional: worker
# connections (default 8192), worker_rlimit_nofile and the listen backlog
# (default: nginx's own).
bench_nginx_conf() { # [CONNECTIONS [RLIMIT_NOFILE [BACKLOG]]]
  local conns=${1:-8192} rlimit=${2:-} backlog=${3:-}
  {
    echo "worker_processes 1;"
    [ -z "$rlimit" ] || echo "worker_rlimit_nofile $rlimit;"
    cat <<CONF
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections $conns; }
http {
  access_log off;
  client_body_temp_path $dir/tmp-body;
  proxy_temp_path $dir/tmp-proxy;
  fastcgi_temp_path $dir/tmp-fastcgi;
  uwsgi_temp_path $dir/tmp-uwsgi;
  scgi_temp_path $dir/tmp-scgi;
  default_type text/plain;
  keepalive_requests 1000000000;
  keepalive_timeout 300s;
  server {
    listen 127.0.0.1:$port${backlog:+ backlog=$backlog};
    root $dir;
  }
}
CONF
  } >"$dir/nginx.conf"
}

# A rackbench --json document as "ok errors duration_s rps" (nothing when
# it is not one).
bench_parse_rackbench() { # FILE
  jq -r '[.requests.ok, ([.errors[]] | add // 0), .duration_s, .throughput_rps] | map(tostring) | join(" ")' "$1" 2>/dev/null
}

# wrk's output as "ok errors duration_s rps" (nothing when it is not
# wrk's): non-2xx/3xx answers and socket errors are errors; the duration
# is responses / Requests/sec (the exact runtime: "in 2.00s" is rounded),
# that rounded figure only when no rate was printed.
bench_parse_wrk() { # FILE
  local line reqs dur rps non2xx sock
  line=$(grep -E '^ *[0-9]+ requests in ' "$1") || return 0
  reqs=$(awk '{print $1}' <<<"$line")
  dur=$(awk '{sub(/,$/, "", $4); print $4}' <<<"$line")
  rps=$(awk '/^Requests\/sec:/ {print $2}' "$1")
  non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$1")
  sock=$(awk '/Socket errors:/ { gsub(/,/, ""); print $4 + $6 + $8 + $10 }' "$1")
  awk -v n="$reqs" -v r="$rps" -v d="$dur" -v b="${non2xx:-0}" -v s="${sock:-0}" 'BEGIN {
    if (r > 0) dur = n / r
    else { dur = d + 0; u = d; sub(/^[0-9.]+/, "", u)
      if (u == "us") dur /= 1e6; else if (u == "ms") dur /= 1e3
      else if (u == "m") dur *= 60; else if (u == "h") dur *= 3600 }
    printf "%d %d %.6f %s\n", n - b, b + s, dur, r }'
}
