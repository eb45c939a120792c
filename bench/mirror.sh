#!/usr/bin/env bash
# The mirror's guarantees, measured (issue 16): added latency on the primary
# path at 2,000 req/s against direct, and the primary path with a dead,
# hung or resetting shadow, with the mirror's peak RSS (VmHWM).
#
#   bench/mirror.sh OUTDIR        (DUR=60s RATE=2000 by default)
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
mkdir -p "$OUT"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

P=127.0.0.1:18101 OK=127.0.0.1:18102 RST=127.0.0.1:18103 HUNG=127.0.0.1:18104 DEAD=127.0.0.1:18105
MIRROR=127.0.0.1:18100

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
  "$BIN" mirror --listen $MIRROR --primary "http://$P" --shadow "$1=http://$2" --out "$OUT/$1" \
    2>"$OUT/$1.mirror.log" & local m=$!
  sleep 1
  load "http://$MIRROR/" "$1"
  grep -E 'VmHWM|VmRSS' /proc/$m/status >"$OUT/$1.rss"
  kill -INT $m; wait $m || true
}

# Direct and through the mirror, back to back, twice each (ABAB), so drift
# on a shared machine shows as a difference between the pairs.
for round in 1 2; do
  load "http://$P/" "direct-$round"
  run_case "healthy-$round" $OK
done
run_case dead $DEAD
run_case hung $HUNG
run_case reset $RST

python3 - "$OUT" <<'EOF'
import json, sys, os, glob
out = sys.argv[1]
def lat(name):
    d = json.load(open(f"{out}/{name}.load.json"))
    return d["latency_us"], d["errors"], d["requests"]
rows = []
for name in ["direct-1", "healthy-1", "direct-2", "healthy-2", "dead", "hung", "reset"]:
    l, e, r = lat(name)
    errs = sum(v for v in e.values() if isinstance(v, int)) if isinstance(e, dict) else e
    rss = ""
    if os.path.exists(f"{out}/{name}.rss"):
        rss = open(f"{out}/{name}.rss").read().split()[1:3]
        rss = " ".join(rss)
    shadow = ""
    mj = f"{out}/{name}/mirror.json"
    if os.path.exists(mj):
        m = json.load(open(mj)); s = m["shadows"][0]
        shadow = f"mirrored {m['mirrored']} sent {s['sent']} answered {s['answered']} dropped {s['dropped']} timeouts {s['timeouts']} errors {s['errors']} in_flight {s['in_flight']}; primary errors {m['primary']['errors']}"
        if s["paired"].get("median_us") is not None:
            shadow += f"; paired median {s['paired']['median_us']:+.0f} µs [{s['paired'].get('ci95_low_us')}, {s['paired'].get('ci95_high_us')}]"
    rows.append(f"| {name} | {r.get('ok', r) if isinstance(r, dict) else r} | {errs} | {l['p50']} | {l['p90']} | {l['p99']} | {l['max']} | {rss} | {shadow} |")
print("| case | ok | load errors | p50 µs | p90 µs | p99 µs | max µs | mirror RSS | mirror counts |")
print("|---|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
EOF
