#!/bin/sh
# rackbench's jruby runtime: a bin directory in which `puma` runs on JRuby.
# JRuby is jruby-complete from Maven Central (the jar scripts/jruby-jetty.sh
# fetches, one download shared); Puma's Ruby files and the Java sources of
# its HTTP parser come from Debian's puma source package (apt-get source,
# from a sources list of this script's own), the parser compiled here with
# javac into lib/puma/puma_http11.jar; nio4r and rack are copied from the
# host's ruby-nio4r and ruby-rack packages (pure Ruby; nio4r's C extension
# does not load on JRuby, so the launchers set NIO4R_PURE=true).
#
#   scripts/jruby-puma.sh build     build (skips when up to date); the last line
#                                   of stdout is the bin directory's absolute path
#   scripts/jruby-puma.sh path      print the bin directory (builds nothing)
#   scripts/jruby-puma.sh version   e.g. "jruby 9.4.15.0 / puma 5.6.5" (downloads nothing)
#
# The bin directory holds ruby and jruby (JRuby itself), puma and rackup.
# Each works from any directory, passes its arguments through and execs
# java, so the PID a caller starts is the JVM's. Environment at run time:
#   RACKBENCH_JRUBY_HEAP        the JVM's -Xmx (default 768m)
#   RACKBENCH_JRUBY_JVM_FLAGS   more JVM flags, split on spaces (default none)
#   RACKBENCH_JRUBY_PUMA_NODELAY=0  Puma exactly as it ships (see below)
# The puma launcher first loads ruby/servers/jruby-puma/tcp_nodelay.rb:
# TCP_NODELAY on each accepted socket, as JRuby ignores Puma's TCP_CORK
# (without it every keep-alive response waits ~40 ms for a delayed ACK).
# Puma runs in single mode only: cluster mode (--workers N>0) needs fork,
# which JRuby lacks, and Puma itself refuses it ("worker mode not supported
# on jruby on this platform").
#
# Needs: Java 17 (JDK: javac, jar), apt-get and dpkg-source (dpkg-dev), the
# packages ruby-nio4r and ruby-rack, and, for the JRuby jar, Maven (through
# scripts/jruby-jetty.sh). The mirror has to serve bookworm's source
# packages (Sources of `bookworm main`; set RACKBENCH_DEBIAN_MIRROR for
# another one). Cache: $RACKBENCH_CACHE/jruby-puma, default
# ${XDG_CACHE_HOME:-$HOME/.cache}/rackbench/jruby-puma (apt/ the source list
# and download, src/ the unpacked source, gems/ the Ruby files, bin/ the
# launchers). Remove the directory to force a fresh build.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
home=$(dirname "$here")
self="$here/jruby-puma.sh"
pom="$home/ruby/servers/jruby-jetty/pom.xml"
nodelay="$home/ruby/servers/jruby-puma/tcp_nodelay.rb"
cache="${RACKBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rackbench}/jruby-puma"
mirror="${RACKBENCH_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# Debian 12's puma; the source package must carry this upstream version.
puma_version=5.6.5
fix="apt-get install openjdk-17-jdk-headless maven dpkg-dev ruby-nio4r ruby-rack"

die() {
    echo "jruby-puma: $*" >&2
    exit 1
}

need() {
    for exe in "$@"; do
        command -v "$exe" >/dev/null 2>&1 ||
            die "'$exe' is not on PATH; install the JDK, Maven and dpkg-dev ($fix)"
    done
}

# The version a property in the pom names.
pom_version() {
    sed -n "s:.*<$1>\\(.*\\)</$1>.*:\\1:p" "$pom" | head -n 1
}

# The installed version of a Debian package, empty when it is not installed.
deb_version() {
    dpkg-query -W -f '${Status} ${Version}\n' "$1" 2>/dev/null |
        sed -n 's/^install ok installed //p'
}

# The directory holding FILE (a path ending as given) in a Debian package.
deb_dir_of() {
    dir=$(dpkg -L "$1" 2>/dev/null | grep "/$2\$" | head -n 1)
    [ -n "$dir" ] || die "package $1 has no $2; reinstall it (apt-get install --reinstall $1)"
    dirname "$dir"
}

java_path() {
    if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
        echo "$JAVA_HOME/bin/java"
    else
        command -v java
    fi
}

build() {
    need java dpkg-query
    case "$cache" in
        *"'"*) die "the cache path $cache holds a quote, which the launchers cannot; set RACKBENCH_CACHE" ;;
    esac
    jruby_version=$(pom_version jruby.version)
    for p in ruby-nio4r ruby-rack; do
        [ -n "$(deb_version "$p")" ] || die "package $p is not installed (apt-get install $p)"
    done
    # Everything the launchers bake in: rebuild when any of it changes.
    stamp=$({
        cat "$self" "$pom" "$nodelay"
        deb_version ruby-nio4r
        deb_version ruby-rack
        java_path
        echo "$cache"
    } | cksum | cut -d ' ' -f 1)
    if [ "$(cat "$cache/bin.stamp" 2>/dev/null)" = "$stamp" ]; then
        return 0
    fi
    mkdir -p "$cache"
    # One build at a time (trials may start in parallel): the second waits
    # for the lock, then finds everything up to date.
    (
        if command -v flock >/dev/null 2>&1; then flock 9; fi
        build_locked
    ) 9>"$cache/build.lock"
}

build_locked() {
    [ "$(cat "$cache/bin.stamp" 2>/dev/null)" != "$stamp" ] || return 0
    rm -f "$cache/bin.stamp"
    fetch_jruby
    fetch_puma_source
    build_gems
    write_launchers
    echo "$stamp" >"$cache/bin.stamp"
}

# jruby-complete, linked from jruby-jetty's cache (built there when missing).
fetch_jruby() {
    jar="$cache/lib/jruby-complete-$jruby_version.jar"
    [ -f "$jar" ] && return 0
    jetty_jar="$("$here/jruby-jetty.sh" path)/lib/jruby-complete-$jruby_version.jar"
    if [ ! -f "$jetty_jar" ]; then
        "$here/jruby-jetty.sh" build >&2 || die "scripts/jruby-jetty.sh build failed; it fetches the JRuby jar"
    fi
    [ -f "$jetty_jar" ] || die "no $jetty_jar after scripts/jruby-jetty.sh build; remove its cache and retry"
    rm -rf "$cache/lib"
    mkdir -p "$cache/lib"
    ln "$jetty_jar" "$jar" 2>/dev/null || cp "$jetty_jar" "$jar"
}

# Debian's puma source, unpacked with its patches into src/ (once per version).
fetch_puma_source() {
    [ "$(cat "$cache/src.stamp" 2>/dev/null)" = "$puma_version" ] && return 0
    need apt-get dpkg-source
    apt="$cache/apt"
    rm -rf "$apt" "$cache/src" "$cache/src.tmp" "$cache/src.stamp"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/dl"
    key=/usr/share/keyrings/debian-archive-keyring.gpg
    signed=""
    [ -f "$key" ] && signed="[signed-by=$key] "
    echo "deb-src $signed$mirror bookworm main" >"$apt/sources.list"
    sandbox=""
    [ "$(id -u)" -ne 0 ] || sandbox="-o APT::Sandbox::User=root"
    # shellcheck disable=SC2086 # $sandbox is one option or none
    set -- -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
        -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" $sandbox
    echo "jruby-puma: fetching Debian's puma source from $mirror into $apt (about 10 MB of lists, once)" >&2
    apt-get "$@" update >"$apt/apt.log" 2>&1 ||
        die "apt-get update on $apt/sources.list failed (is $mirror reachable?); log: $apt/apt.log"
    (cd "$apt/dl" && apt-get "$@" source --download-only puma) >>"$apt/apt.log" 2>&1 || {
        grep '^E:' "$apt/apt.log" | head -n 3 >&2
        die "apt-get source puma failed: the mirror must serve bookworm's puma source (set RACKBENCH_DEBIAN_MIRROR); log: $apt/apt.log"
    }
    dsc=$(ls "$apt/dl"/puma_*.dsc 2>/dev/null | head -n 1)
    [ -n "$dsc" ] || die "apt-get source left no puma_*.dsc in $apt/dl; log: $apt/apt.log"
    dpkg-source --no-copy -x "$dsc" "$cache/src.tmp" >>"$apt/apt.log" 2>&1 ||
        die "dpkg-source -x $dsc failed (apt-get install dpkg-dev); log: $apt/apt.log"
    got=$(sed -n 's/.*PUMA_VERSION = VERSION = "\(.*\)".*/\1/p' "$cache/src.tmp/lib/puma/const.rb")
    [ "$got" = "$puma_version" ] ||
        die "$dsc is puma '$got', not $puma_version; point RACKBENCH_DEBIAN_MIRROR at a bookworm mirror"
    basename "$dsc" .dsc >"$cache/src.tmp/DEBIAN-SOURCE"
    mv "$cache/src.tmp" "$cache/src"
    echo "$puma_version" >"$cache/src.stamp"
}

# gems/: Puma's lib and bin with the compiled parser, nio4r's and rack's.
build_gems() {
    need javac jar
    src="$cache/src"
    gems="$cache/gems.tmp"
    rm -rf "$gems" "$cache/classes.tmp"
    mkdir -p "$gems/puma" "$gems/nio4r" "$gems/rack" "$gems/rackbench" "$cache/classes.tmp"
    cp "$nodelay" "$gems/rackbench/"
    cp -R "$src/lib" "$src/bin" "$gems/puma/"
    # The no_ssl/ variant of PumaHttp11Service is for builds without MiniSSL.
    # shellcheck disable=SC2046 # file names from the source tree, no spaces
    javac --release 11 -nowarn -d "$cache/classes.tmp" -cp "$jar" \
        $(find "$src/ext/puma_http11" -name '*.java' ! -path '*/no_ssl/*') >&2 ||
        die "javac could not compile Puma's Java extension in $src/ext/puma_http11"
    # `require 'puma/puma_http11'` loads this jar, then its puma.PumaHttp11Service.
    jar cf "$gems/puma/lib/puma/puma_http11.jar" -C "$cache/classes.tmp" . ||
        die "jar could not package $cache/classes.tmp"
    rm -rf "$cache/classes.tmp"
    cp -R "$(deb_dir_of ruby-nio4r nio.rb)" "$gems/nio4r/lib"
    rack_lib=$(deb_dir_of ruby-rack rack.rb)
    cp -R "$rack_lib" "$gems/rack/lib"
    [ ! -d "$rack_lib/../bin" ] || cp -R "$rack_lib/../bin" "$gems/rack/bin"
    rm -rf "$cache/gems"
    mv "$gems" "$cache/gems"
}

# bin/: the launchers, every path in them absolute.
write_launchers() {
    java=$(java_path)
    bin="$cache/bin"
    gems="$cache/gems"
    rm -rf "$bin.tmp"
    mkdir -p "$bin.tmp"
    cat >"$bin.tmp/jruby" <<EOF
#!/bin/sh
# JRuby $jruby_version with Puma $puma_version, nio4r and rack on the load path.
# Written by scripts/jruby-puma.sh build; RACKBENCH_JRUBY_HEAP sets -Xmx
# (default 768m), RACKBENCH_JRUBY_JVM_FLAGS adds JVM flags.
NIO4R_PURE=true
export NIO4R_PURE
# shellcheck disable=SC2086 # the flags are split on purpose
exec '$java' -Xmx"\${RACKBENCH_JRUBY_HEAP:-768m}" -Xss2m \${RACKBENCH_JRUBY_JVM_FLAGS:-} \\
    -jar '$jar' \\
    -I '$gems/puma/lib' -I '$gems/nio4r/lib' -I '$gems/rack/lib' "\$@"
EOF
    cp "$bin.tmp/jruby" "$bin.tmp/ruby"
    launcher puma "-r$gems/rackbench/tcp_nodelay.rb" "$gems/puma/bin/puma"
    [ ! -f "$gems/rack/bin/rackup" ] || launcher rackup "$gems/rack/bin/rackup"
    chmod 755 "$bin.tmp"/*
    rm -rf "$bin"
    mv "$bin.tmp" "$bin"
}

# launcher NAME ARG...: bin/NAME runs bin/jruby with ARG... before its own.
launcher() {
    name=$1
    shift
    args=""
    for arg in "$@"; do args="$args '$arg'"; done
    cat >"$bin.tmp/$name" <<EOF
#!/bin/sh
# $name on JRuby; written by scripts/jruby-puma.sh build.
exec '$bin/jruby'$args "\$@"
EOF
}

version() {
    [ -f "$cache/bin.stamp" ] || echo "jruby-puma: not built yet ($0 build)" >&2
    echo "jruby $(pom_version jruby.version) / puma $puma_version"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
    build)
        build
        echo "jruby-puma: ready: puma $puma_version on jruby $(pom_version jruby.version)" >&2
        echo "$cache/bin"
        ;;
    version) version ;;
    path) echo "$cache/bin" ;;
    *) die "usage: $0 build | path | version" ;;
esac
