#!/bin/sh
# rackbench's jruby-jetty adapter: JRuby and jruby-rack in an embedded Jetty,
# every jar from Maven Central (ruby/servers/jruby-jetty/pom.xml), fetched
# and compiled into a cache on first use.
#
#   scripts/jruby-jetty.sh build     fetch the jars, compile the launcher (skips when up to date)
#   scripts/jruby-jetty.sh version   the versions in the pom (downloads nothing)
#   scripts/jruby-jetty.sh run --host H --port P --app FILE.ru [--min-runtimes N]
#       [--max-runtimes N] [--threads N] [--heap 768m] [-- extra JVM flags]
#                                    build if needed, then exec the JVM in the foreground
#   scripts/jruby-jetty.sh path      print the cache directory
#
# Cache: $RACKBENCH_CACHE/jruby-jetty, default
# ${XDG_CACHE_HOME:-$HOME/.cache}/rackbench/jruby-jetty (lib/ the jars,
# classes/ the launcher). Maven keeps its own copy in ~/.m2. Remove the
# directory to force a fresh build.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
home=$(dirname "$here")
src="$home/ruby/servers/jruby-jetty"
pom="$src/pom.xml"
java_src="$src/src/main/java/rackbench/Launcher.java"
cache="${RACKBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rackbench}/jruby-jetty"
fix="apt-get install openjdk-17-jdk-headless maven"

die() {
    echo "jruby-jetty: $*" >&2
    exit 1
}

need() {
    for exe in "$@"; do
        command -v "$exe" >/dev/null 2>&1 ||
            die "'$exe' is not on PATH; install Java 17 and Maven ($fix)"
    done
}

# The version a property in the pom names.
pom_version() {
    sed -n "s:.*<$1>\\(.*\\)</$1>.*:\\1:p" "$pom" | head -n 1
}

stamp_of() {
    cat "$@" | cksum | cut -d ' ' -f 1
}

build() {
    need java
    lib_stamp=$(stamp_of "$pom")
    cls_stamp=$(stamp_of "$pom" "$java_src")
    if [ "$(cat "$cache/lib.stamp" 2>/dev/null)" = "$lib_stamp" ] &&
        [ "$(cat "$cache/classes.stamp" 2>/dev/null)" = "$cls_stamp" ]; then
        return 0
    fi
    mkdir -p "$cache"
    # One build at a time (trials may start in parallel): the second waits
    # for the lock, then finds everything up to date. The lock's descriptor
    # is closed again before the JVM starts.
    (
        if command -v flock >/dev/null 2>&1; then flock 9; fi
        build_locked
    ) 9>"$cache/build.lock"
}

build_locked() {
    if [ "$(cat "$cache/lib.stamp" 2>/dev/null)" != "$lib_stamp" ]; then
        need mvn
        echo "jruby-jetty: fetching jars from Maven Central into $cache/lib (about 36 MB, once)" >&2
        rm -rf "$cache/lib.tmp" "$cache/lib.stamp"
        # Maven's log goes to a file, shown only when it fails.
        if ! mvn -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies \
            -DincludeScope=runtime -DoutputDirectory="$cache/lib.tmp" >"$cache/mvn.log" 2>&1; then
            grep -E '^\[ERROR\] [^ ]' "$cache/mvn.log" | head -n 3 >&2
            die "mvn could not fetch the jars (is Maven Central reachable?); full log: $cache/mvn.log"
        fi
        rm -rf "${cache:?}/lib"
        mv "$cache/lib.tmp" "$cache/lib"
        echo "$lib_stamp" >"$cache/lib.stamp"
    fi
    if [ "$(cat "$cache/classes.stamp" 2>/dev/null)" != "$cls_stamp" ]; then
        need javac
        rm -rf "$cache/classes.tmp" "$cache/classes.stamp"
        mkdir -p "$cache/classes.tmp"
        javac --release 11 -nowarn -d "$cache/classes.tmp" -cp "$cache/lib/*" "$java_src" >&2 ||
            die "javac could not compile $java_src"
        rm -rf "${cache:?}/classes"
        mv "$cache/classes.tmp" "$cache/classes"
        echo "$cls_stamp" >"$cache/classes.stamp"
    fi
}

version() {
    need java
    built=""
    [ -f "$cache/lib.stamp" ] || built=" (not fetched yet: $0 build)"
    echo "jruby-complete $(pom_version jruby.version) / jruby-rack $(pom_version jruby-rack.version) / jetty $(pom_version jetty.version)$built"
}

run() {
    host=127.0.0.1 port="" app="" min=1 max=1 threads=16 heap=768m
    while [ $# -gt 0 ]; do
        case "$1" in
            --) shift; break ;;
            --host | --port | --app | --min-runtimes | --max-runtimes | --threads | --heap)
                [ $# -ge 2 ] || die "$1 needs a value"
                case "$1" in
                    --host) host=$2 ;;
                    --port) port=$2 ;;
                    --app) app=$2 ;;
                    --min-runtimes) min=$2 ;;
                    --max-runtimes) max=$2 ;;
                    --threads) threads=$2 ;;
                    --heap) heap=$2 ;;
                esac
                shift 2 ;;
            *) die "unknown option '$1' (see the top of $0)" ;;
        esac
    done
    [ -n "$port" ] || die "run needs --port"
    [ -n "$app" ] || die "run needs --app FILE.ru"
    [ -f "$app" ] || die "no rackup file at $app"
    build
    # Remaining arguments are JVM flags, placed after the defaults so they win.
    exec java -Xmx"$heap" -Xss2m "$@" \
        -cp "$cache/lib/*:$cache/classes" rackbench.Launcher \
        --host "$host" --port "$port" --app "$app" \
        --min-runtimes "$min" --max-runtimes "$max" --threads "$threads"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
    build) build; echo "jruby-jetty: ready in $cache" >&2 ;;
    version) version ;;
    run) run "$@" ;;
    path) echo "$cache" ;;
    *) die "usage: $0 build | version | run --host H --port P --app FILE.ru [...] | path" ;;
esac
