import json, glob, sys, collections
d = sys.argv[1]
rows = collections.defaultdict(list)
for f in sorted(glob.glob(d + "/trials/*.json")):
    t = json.load(open(f))
    r = t.get("trial")
    if not r: continue
    load = r["load"]; fa = load.get("fairness") or {}
    ver = (r.get("runtime") or {}).get("server_version") or r["server"]["version"]
    c = t["planned"]["shape"]["connections"]
    lat = load["latency_us"]
    rows[(ver, c)].append((load["throughput_rps"], lat.get("p50"), lat.get("mean"), fa.get("connections_answered"), fa.get("connections_starved"), fa.get("jain_index"), fa.get("top10_share")))
print("| Puma | connections | Little's law: rps / mean | throughput (rps) | p50 | mean | connections answered | starved | Jain index | busiest 10% took |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (ver, c), rs in sorted(rows.items()):
    fmt = lambda xs, f: " / ".join(f(x) for x in xs)
    law = f"{min(100, c/0.2):.0f} / {max(0.2, c/100):.2f} s"
    print(f"| {ver} | {c} | {law} | {fmt([r[0] for r in rs], lambda x: f'{x:.1f}')} | {fmt([r[1] for r in rs], lambda x: f'{x/1e6:.3f} s' if x else '-')} | {fmt([r[2] for r in rs], lambda x: f'{x/1e6:.3f} s' if x else '-')} | {fmt([r[3] for r in rs], str)} | {fmt([r[4] for r in rs], str)} | {fmt([r[5] for r in rs], lambda x: f'{x:.2f}' if x is not None else '-')} | {fmt([r[6] for r in rs], lambda x: f'{x*100:.0f}%' if x is not None else '-')} |")
