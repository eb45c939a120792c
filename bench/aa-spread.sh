#!/usr/bin/env bash
# The A/A spread (issue 25): bench/aa/puma-hello.toml (puma hello, five
# repeats of 10 s) through `rackbench run`, then per results directory the
# 95% interval half-width (Student t, 4 degrees of freedom) of throughput
# and of the server's CPU per request, the throughput of each repeat in
# run order, the generator's system CPU per request and the disturbance
# record. Usage: bench/aa-spread.sh [OUT_DIR] [BIN...]: each binary in
# turn (default: $RACKBENCH or target/release/rackbench), a minute apart
# so that one run's TIME_WAIT sockets are gone before the next.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/bench/runs/$(date -u +%F)-aa-spread}
shift || true
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=("${RACKBENCH:-$root/target/release/rackbench}")
mkdir -p "$out"
i=0
for bin in "${bins[@]}"; do
  i=$((i + 1))
  [ $i -gt 1 ] && sleep 65
  res="$out/run$i"
  rm -rf "$res"
  echo "run$i: $bin run bench/aa/puma-hello.toml --out $res" | tee -a "$out/commands.txt"
  "$bin" run "$root/bench/aa/puma-hello.toml" --out "$res" > "$out/run$i.log" 2>&1
  python3 - "$res" <<'PY' | tee -a "$out/spread.txt"
import glob, json, statistics as st, sys
d = sys.argv[1]
t4 = 2.776  # Student t, 97.5%, 4 degrees of freedom (five repeats)
def hw(xs):
    return 100 * t4 * st.stdev(xs) / len(xs) ** 0.5 / st.mean(xs)
tp, cpu, sysreq, dist = [], [], [], []
for f in sorted(glob.glob(d + "/trials/*.json")):
    t = json.load(open(f))["trial"]
    L = t["load"]
    tp.append(L["throughput_rps"])
    cpu.append(t["server_metrics"]["cpu_ms_per_request"] * 1000)
    sysreq.append(L["generator"]["cpu_sys_s"] / L["requests"]["total"] * 1e6)
    ds = t.get("disturbance") or {}
    dist.append((ds.get("steal_share", 0), ds.get("foreign_cpu_share", 0), ds.get("disturbed", False)))
print(f"{d}: throughput ±{hw(tp):.1f}% ({', '.join(f'{x:.0f}' for x in tp)} req/s in run order); "
      f"server CPU per request ±{hw(cpu):.1f}% ({', '.join(f'{x:.1f}' for x in cpu)} us); "
      f"generator system CPU per request {', '.join(f'{x:.1f}' for x in sysreq)} us; "
      f"steal max {max(s for s, _, _ in dist):.3f}, foreign CPU max {max(f for _, f, _ in dist):.3f}, "
      f"disturbed {sum(1 for *_, x in dist if x)} of {len(dist)}")
PY
done
