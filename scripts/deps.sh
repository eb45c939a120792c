#!/usr/bin/env bash
# Installs what rackbench needs on a Debian 12 machine, skipping what is
# already there. Usage: scripts/deps.sh [build|test|bench|run|cluster]...
# Runs apt-get (as root, or through sudo when it is available).
set -euo pipefail

want=("$@")
[ ${#want[@]} -gt 0 ] || want=(build)

apt_pkgs=()
want_vegeta=0
want_rbspy=0
need_cmd() { command -v "$1" >/dev/null 2>&1 || apt_pkgs+=("$2"); }

for w in "${want[@]}"; do
  case "$w" in
    build) ;;
    test|run)
      # The default plan (make run): Debian's six MRI servers, direct.
      need_cmd ruby ruby
      need_cmd puma puma
      need_cmd unicorn unicorn
      need_cmd thin thin
      need_cmd passenger passenger
      need_cmd rackup ruby-rack
      ruby -rwebrick -e 1 >/dev/null 2>&1 || apt_pkgs+=(ruby-webrick)
      need_cmd uwsgi uwsgi-core
      [ -f /usr/lib/uwsgi/plugins/rack_ruby31_plugin.so ] || apt_pkgs+=(uwsgi-plugin-rack-ruby3.1)
      ;;&
    test)
      # Everything the tests start besides: nginx, Rails, Chromium for
      # the HTML reports, the JRuby container's build, kubectl.
      need_cmd nginx nginx-light
      need_cmd curl curl
      ruby -e 'require "rails"; require "action_controller/railtie"' >/dev/null 2>&1 || apt_pkgs+=(ruby-railties)
      # The blog app (tests/blog.rs): Rails with ActiveRecord and both
      # drivers, and PostgreSQL (its binaries; rackbench starts its own).
      dpkg -s ruby-rails >/dev/null 2>&1 || apt_pkgs+=(ruby-rails)
      dpkg -s ruby-sqlite3 >/dev/null 2>&1 || apt_pkgs+=(ruby-sqlite3)
      dpkg -s ruby-pg >/dev/null 2>&1 || apt_pkgs+=(ruby-pg)
      ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || apt_pkgs+=(postgresql)
      need_cmd chromium chromium
      # The live page's test (tests/live_page.rs) drives Chromium through it.
      need_cmd chromedriver chromium-driver
      need_cmd java openjdk-17-jdk-headless
      need_cmd mvn maven
      # scripts/jruby-puma.sh: Puma's source via apt-get source, unpacked
      # by dpkg-source; nio4r's and rack's Ruby files from their packages.
      need_cmd dpkg-source dpkg-dev
      dpkg -s ruby-nio4r >/dev/null 2>&1 || apt_pkgs+=(ruby-nio4r)
      # rackbench k8s and tests/k8s.rs; Debian 12 ships kubectl 1.20 (tested, with 1.32)
      need_cmd kubectl kubernetes-client
      # Runtimes (tests/runtimes.rs): Debian release roots, jemalloc,
      # Puma's Java extension from its Debian source package.
      need_cmd mmdebstrap mmdebstrap
      [ -f /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 ] || apt_pkgs+=(libjemalloc2)
      need_cmd dpkg-source dpkg-dev
      need_cmd bundle ruby-bundler
      # The live endpoint (tests/metrics.rs): a real Prometheus scrapes
      # it, and Prometheus' Python client (Debian's python3) parses it.
      need_cmd prometheus prometheus
      /usr/bin/python3 -c 'import prometheus_client' >/dev/null 2>&1 || apt_pkgs+=(python3-prometheus-client)
      # The profiler (src/profile/, tests/profile.rs): rbspy, below.
      want_rbspy=1
      ;;
    run) ;;
    bench)
      need_cmd nginx nginx-light
      need_cmd curl curl
      need_cmd wrk wrk
      need_cmd ab apache2-utils
      need_cmd hey hey
      need_cmd h2load nghttp2-client
      need_cmd taskset util-linux
      need_cmd jq jq
      [ -x /usr/bin/time ] || apt_pkgs+=(time)
      # The open-loop peer (bench/openloop.sh), built with go below.
      want_vegeta=1
      ;;
    cluster)
      # scripts/cluster.sh: its own etcd and containerds (the packages'
      # services are not used), runc, the CNI loopback plugin,
      # certificates, the second node's network namespace. Go 1.24 or
      # newer builds Kubernetes (Debian 12's golang-go is too old).
      need_cmd etcd etcd-server
      need_cmd curl curl
      need_cmd containerd containerd
      need_cmd runc runc
      [ -x /usr/lib/cni/loopback ] || apt_pkgs+=(containernetworking-plugins)
      need_cmd openssl openssl
      need_cmd ip iproute2
      need_cmd nsenter util-linux
      need_cmd gcc gcc
      dpkg -s libc6-dev >/dev/null 2>&1 || apt_pkgs+=(libc6-dev)
      ;;
    *) echo "deps.sh: unknown set '$w' (use build, test, bench, run or cluster)" >&2; exit 2 ;;
  esac
done

if [ ${#apt_pkgs[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "deps: installing ${apt_pkgs[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${apt_pkgs[@]}" >/dev/null
  # apt-get does not fail for a package it installed only partly; check.
  for p in "${apt_pkgs[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || { echo "deps: $p did not install; run: apt-get install $p" >&2; exit 1; }
  done
fi

# vegeta: no Debian package of the pinned version; `go install` puts it in
# $(go env GOPATH)/bin (~/go/bin), where bench/openloop.sh looks for it.
if [ $want_vegeta -eq 1 ] && ! command -v vegeta >/dev/null 2>&1 && [ ! -x "$HOME/go/bin/vegeta" ]; then
  if command -v go >/dev/null 2>&1; then
    echo "deps: go install github.com/tsenart/vegeta/v12@v12.13.0" >&2
    go install github.com/tsenart/vegeta/v12@v12.13.0
  else
    echo "deps: vegeta (the open-loop peer of bench/openloop.sh) needs go: install Go 1.20+ (https://go.dev/dl/ or 'apt-get install golang'), then rerun, or skip bench/openloop.sh" >&2
    exit 1
  fi
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "deps: cargo is missing; install Rust with rustup (https://rustup.rs) or 'apt-get install cargo'" >&2
  exit 1
fi
if command -v rustup >/dev/null 2>&1; then
  for comp in clippy rustfmt; do
    rustup component list --installed 2>/dev/null | grep -q "^$comp" || rustup component add "$comp"
  done
fi

# rbspy (crates.io, MIT licence): the profiler's sampler, src/profile/.
# Its binary, not the library, keeps rackbench's own build small; pinned
# to the version src/profile/rbspy.rs names (VERSION). It builds with this
# Rust (1.85+) in a few minutes on 2 cores; installed only when missing.
RBSPY_VERSION=0.55.0
if [ $want_rbspy -eq 1 ] && ! command -v rbspy >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/rbspy" ]; then
  echo "deps: cargo install rbspy --version $RBSPY_VERSION --locked" >&2
  cargo install rbspy --version "$RBSPY_VERSION" --locked
fi
