#!/usr/bin/env bash
# The mirror's guarantees, measured (issue 16): added latency on the primary
# path at 2,000 req/s against direct with one healthy shadow, and the
# primary path with a dead, hung or resetting shadow, with the mirror's peak
# RSS (VmHWM) and its counts. Prints a Markdown table and a PASS/MISS line
# per guarantee on stdout (exit status 0 either way: a MISS is a finding).
#
#   bench/mirror.sh OUTDIR        (DUR=60s RATE=2000 by default)
#   TABLE_ONLY=1 bench/mirror.sh OUTDIR   (the table again from OUTDIR's files)
#
# Runs interleave direct and mirror (D H D H D dead D hung D reset D), so
# each mirror case is compared with the mean of the direct runs on either
# side of it: drift on a shared machine shows in the direct runs instead
# of in the difference. MIRROR_ARGS adds flags to every mirror run (e.g.
# "--shadow-send arrival" to measure the other send time).
#
# Everything listens on 127.0.0.1 and is stopped at the end. The primary
# and healthy shadow are `rackbench serve-test`; the hung shadow is a
# python socket that accepts and never answers; the resetting shadow is
# serve-test --reset-every 1; the dead shadow is a port nobody listens on.
set -euo pipefail
OUT=${1:?usage: bench/mirror.sh OUTDIR}
DUR=${DUR:-60s}
RATE=${RATE:-2000}
BIN=${BIN:-target/release/rackbench}
MIRROR_ARGS=${MIRROR_ARGS:-}
mkdir -p "$OUT"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

P=127.0.0.1:18101 OK=127.0.0.1:18102 RST=127.0.0.1:18103 HUNG=127.0.0.1:18104 DEAD=127.0.0.1:18105
MIRROR=127.0.0.1:18100

if [ -z "${TABLE_ONLY:-}" ]; then
  "$BIN" serve-test --listen $P >/dev/null 2>&1 & PIDS+=($!)
  "$BIN" serve-test --listen $OK >/dev/null 2>&1 & PIDS+=($!)
  "$BIN" serve-test --listen $RST --reset-every 1 >/dev/null 2>&1 & PIDS+=($!)
  python3 -c '
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 18104)); s.listen(4096)
held = []
while True:
    c, _ = s.accept(); held.append(c)   # accept, read nothing, never answer
  ' & PIDS+=($!)
  sleep 1

  load() { # URL NAME
    "$BIN" load "$1" --rate "$RATE" -d "$DUR" -c 64 --json >"$OUT/$2.load.json" 2>"$OUT/$2.load.err"
  }

  run_case() { # NAME SHADOW_ADDR
    # shellcheck disable=SC2086
    "$BIN" mirror --listen $MIRROR --primary "http://$P" --shadow "$1=http://$2" --out "$OUT/$1" \
      $MIRROR_ARGS 2>"$OUT/$1.mirror.log" & local m=$!
    sleep 1
    load "http://$MIRROR/" "$1"
    grep -E 'VmHWM|VmRSS' /proc/$m/status >"$OUT/$1.rss"
    kill -INT $m; wait $m || true
  }

  n=1
  direct() { load "http://$P/" "direct-$n"; n=$((n + 1)); }
  direct; run_case healthy-1 $OK
  direct; run_case healthy-2 $OK
  direct; run_case dead $DEAD
  direct; run_case hung $HUNG
  direct; run_case reset $RST
  direct
fi

python3 - "$OUT" <<'EOF'
import json, sys, os
out = sys.argv[1]
ORDER = ["direct-1", "healthy-1", "direct-2", "healthy-2", "direct-3", "dead",
         "direct-4", "hung", "direct-5", "reset", "direct-6"]
def load(name):
    d = json.load(open(f"{out}/{name}.load.json"))
    errs = sum(v for v in d["errors"].values() if isinstance(v, int))
    return d["latency_us"], errs, d["requests"]["ok"], d["requests"]["total"]
docs = {n: load(n) for n in ORDER}
print("| case | ok | load errors | p50 µs | p90 µs | p99 µs | added p50 µs | added p90 µs | added p99 µs | mirror VmHWM | mirror counts |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
verdicts = []
def verdict(ok, what):
    verdicts.append(("PASS" if ok else "MISS") + ": " + what)
added = {}
for i, name in enumerate(ORDER):
    l, errs, ok, total = docs[name]
    if name.startswith("direct"):
        print(f"| {name} | {ok} | {errs} | {l['p50']} | {l['p90']} | {l['p99']} | | | | | |")
        continue
    before, after = docs[ORDER[i - 1]][0], docs[ORDER[i + 1]][0]
    a50 = l["p50"] - (before["p50"] + after["p50"]) / 2
    a90 = l["p90"] - (before["p90"] + after["p90"]) / 2
    a99 = l["p99"] - (before["p99"] + after["p99"]) / 2
    rss_kib = 0
    for line in open(f"{out}/{name}.rss"):
        if line.startswith("VmHWM"):
            rss_kib = int(line.split()[1])
    m = json.load(open(f"{out}/{name}/mirror.json")); s = m["shadows"][0]
    counts = (f"mirrored {m['mirrored']}: sent {s['sent']} + dropped {s['dropped']}"
              f" (backed off {s.get('backed_off', 0)}, {s.get('backoffs', 0)} back-offs);"
              f" answered {s['answered']} timeouts {s['timeouts']} errors {s['errors']}"
              f" in flight {s['in_flight']}; primary errors {m['primary']['errors']}")
    if s["paired"].get("median_us") is not None:
        counts += f"; paired median {s['paired']['median_us']:+.0f} µs"
    print(f"| {name} | {ok} | {errs} | {l['p50']} | {l['p90']} | {l['p99']} | {a50:+.0f} | {a90:+.0f} | {a99:+.0f} | {rss_kib / 1024:.1f} MiB | {counts} |")
    accounted = s["sent"] + s["dropped"] == m["mirrored"] == m["requests"]
    if name.startswith("healthy"):
        verdict(a50 <= 100, f"{name}: added p50 {a50:+.0f} µs (goal <= 100)")
        verdict(a99 <= 300, f"{name}: added p99 {a99:+.0f} µs (goal <= 300)")
    else:
        # Requests the generator could not send on time (busy machine) are
        # not errors; failed requests are.
        verdict(errs == 0 and m["primary"]["errors"] == 0,
                f"{name} shadow: 0 client and primary errors ({errs} load errors, {ok} of {total} ok, {m['primary']['errors']} primary errors)")
        verdict(a99 <= 300, f"{name} shadow: primary p99 added {a99:+.0f} µs (goal <= 300)")
        verdict(rss_kib < 100 * 1024, f"{name} shadow: mirror VmHWM {rss_kib / 1024:.1f} MiB (goal < 100 MiB)")
        verdict(accounted, f"{name} shadow: every copy counted (sent {s['sent']} + dropped {s['dropped']} = {s['sent'] + s['dropped']}, requests {m['requests']})")
print()
for v in verdicts:
    print(f"- {v}")
EOF
