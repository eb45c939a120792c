#!/usr/bin/env bash
# Replay's guarantees, measured (issue 16): a record-v1 schedule at exactly
# 2,000 req/s, replayed at --speed 1 against the test server: the share of
# sends within 1 ms of their recorded offset (goal: 99%), and that every
# recorded request was sent, and answered, once.
#
#   bench/replay.sh OUTDIR        (SECS=25 RATE=2000 ROUNDS=3 by default)
#
# The record file is synthesized in the documented format
# (docs/RECORD_FORMAT.md): SECS*RATE GETs to distinct targets, 1e6/RATE µs
# apart. The server is `rackbench serve-test` on 127.0.0.1, stopped at the
# end; it prints how many requests it answered.
#
# Each round also runs `rackbench load --rate RATE -n SECS*RATE` against a
# fresh server right after the replay: the engine's fixed-rate open loop
# under the same noise, so a shortfall can be told apart as the machine's
# (both miss alike) or the replay's (only it misses).
set -euo pipefail
OUT=${1:?usage: bench/replay.sh OUTDIR}
SECS=${SECS:-25}
RATE=${RATE:-2000}
ROUNDS=${ROUNDS:-3}
BIN=${BIN:-target/release/rackbench}
mkdir -p "$OUT"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

python3 - "$OUT/record.jsonl" "$SECS" "$RATE" <<'PY'
import json, sys
path, secs, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "w") as f:
    f.write(json.dumps({"format": "rackbench/record-v1", "rackbench_version": "synthetic",
                        "started_unix_ms": 0, "dropped_headers": []}) + "\n")
    for i in range(secs * rate):
        f.write(json.dumps({"seq": i + 1, "t_us": i * 1_000_000 // rate, "method": "GET",
                            "target": f"/r/{i}", "version": "HTTP/1.1",
                            "headers": [["host", "recorded"], ["accept", "*/*"]],
                            "body_b64": "", "body_bytes": 0}) + "\n")
PY
N=$((SECS * RATE))

for round in $(seq 1 "$ROUNDS"); do
  "$BIN" serve-test --listen 127.0.0.1:18300 >/dev/null 2>"$OUT/server-$round.json" & S=$!
  PIDS+=($S)
  sleep 0.5
  "$BIN" replay "$OUT/record.jsonl" http://127.0.0.1:18300/ --speed 1 -c 32 --json \
    >"$OUT/replay-$round.json" 2>"$OUT/replay-$round.err"
  kill -INT $S; wait $S || true
  "$BIN" serve-test --listen 127.0.0.1:18300 >/dev/null 2>"$OUT/rate-server-$round.json" & S=$!
  PIDS+=($S)
  sleep 0.5
  "$BIN" load http://127.0.0.1:18300/ --rate "$RATE" -n "$N" -c 32 --json \
    >"$OUT/rate-$round.json" 2>"$OUT/rate-$round.err"
  kill -INT $S; wait $S || true
  python3 - "$OUT/replay-$round.json" "$OUT/server-$round.json" "$N" "$round" <<'PY' | tee -a "$OUT/table.md"
import json, sys
doc, srv, n, rnd = json.load(open(sys.argv[1])), json.loads(open(sys.argv[2]).read().strip().splitlines()[-1]), int(sys.argv[3]), sys.argv[4]
s = doc["schedule"]
if rnd == "1":
    print("| round | recorded | sent | answered at server | ok | within 1 ms | late > 1 ms | max lag µs | p50 µs | p99 µs |")
    print("|---|---|---|---|---|---|---|---|---|---|")
print(f"| {rnd} | {n} | {s['sends']} | {srv['answered']} | {doc['requests']['ok']} | "
      f"{s['within_1ms_share']*100:.3f}% | {s['late_sends']} | {s['max_lag_us']} | "
      f"{doc['latency_us']['p50']} | {doc['latency_us']['p99']} |")
PY
done
python3 - "$OUT" "$ROUNDS" "$N" <<'PY' | tee -a "$OUT/table.md"
import json, sys
out, rounds, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
print()
print("Same rounds, `rackbench load --rate` (fixed-rate open loop) right after each replay:")
print()
print("| round | sent | answered at server | within 1 ms | late > 1 ms | max lag µs |")
print("|---|---|---|---|---|---|")
for r in range(1, rounds + 1):
    d = json.load(open(f"{out}/rate-{r}.json"))
    srv = json.loads(open(f"{out}/rate-server-{r}.json").read().strip().splitlines()[-1])
    s = d["schedule"]
    print(f"| {r} | {s['sends']} | {srv['answered']} | {s['within_1ms_share']*100:.3f}% | {s['late_sends']} | {s['max_lag_us']} |")
PY
