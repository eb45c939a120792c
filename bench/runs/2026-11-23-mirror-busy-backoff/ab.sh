#!/usr/bin/env bash
# ab.sh BIN OUT ROUNDS -- [mirror args...]: direct vs mirror with one healthy
# shadow, alternating, ROUNDS pairs of DUR (8s) at 2,000 req/s; prints the
# added p50/p99 per pair. Ports 18200-18202 on 127.0.0.1.
set -uo pipefail
BIN=$1; OUT=$2; ROUNDS=$3; shift 4
DUR=${DUR:-8s}
mkdir -p $OUT
P=127.0.0.1:18201 OK=127.0.0.1:18202 M=127.0.0.1:18200
$BIN serve-test --listen $P >/dev/null 2>&1 & p1=$!
$BIN serve-test --listen $OK ${SHADOW_ARGS:-} >/dev/null 2>&1 & p2=$!
sleep 0.5
for r in $(seq $ROUNDS); do
  $BIN load http://$P/ --rate 2000 -d $DUR -c 64 --json > $OUT/d$r.json 2>/dev/null
  $BIN mirror --listen $M --primary http://$P --shadow s=http://${SHADOW:-$OK} "$@" 2>$OUT/m$r.log & m=$!
  sleep 0.5
  $BIN load http://$M/ --rate 2000 -d $DUR -c 64 --json > $OUT/m$r.json 2>/dev/null
  kill -INT $m; wait $m
done
kill $p1 $p2; wait 2>/dev/null
python3 - $OUT $ROUNDS <<'PY'
import json,sys
o,n=sys.argv[1],int(sys.argv[2])
for r in range(1,n+1):
  d=json.load(open(f"{o}/d{r}.json"))["latency_us"]; m=json.load(open(f"{o}/m{r}.json"))["latency_us"]
  print(f"round {r}: direct p50 {d['p50']} p99 {d['p99']} | mirror p50 {m['p50']} p99 {m['p99']} | added p50 {m['p50']-d['p50']:+} p99 {m['p99']-d['p99']:+}")
PY
