#!/usr/bin/env python3
"""A generated nginx access log (combined format) with the shapes real Rails
apps have, for bench/real-traffic.sh (issue 43).

Usage: bench/nginx-log.py LINES > access.log

Seeded (the same LINES give the same file), one hour from
28/Nov/2026:10:00:00 +0000, requests spread evenly over it. Routes, by
share of lines:
  40%  GET /api/posts/ID.json              ID 1..5000
  12%  GET /posts/ID/comments.xml          ID 1..5000
   8%  GET /reports/2026-11-DD.csv         28 dates
  10%  GET /users/UUID                     2000 UUIDs
   8%  GET /posts/ID-some-title-words      3000 slugs
   4%  GET /downloads/SHA1.zip             500 hex digests
   5%  GET /search?q=WORD&page=N           N 1..20
   4%  POST /posts/ID/comments (302)
   3%  GET /
   4%  GET /api/v1/orders/ID.json          ID 1..200000
   2%  GET /wiki/Topic_K                   20000 pages: the long tail of
                                           rare shapes a cap folds
404 for one request in fifty.
"""
import random
import sys
import time
import uuid

lines = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
rng = random.Random(43)
words = ["ruby", "rails", "puma", "unicorn", "nginx", "cache", "queue", "deploy", "json", "report"]
uuids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(2000)]
sha1s = ["%040x" % rng.getrandbits(160) for _ in range(500)]
slugs = ["%d-%s" % (rng.randint(1, 5000), "-".join(rng.choice(words) for _ in range(3))) for _ in range(3000)]
ua = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"
start = 1795860000  # 28/Nov/2026:10:00:00 +0000
routes = [
    (40, lambda: ("GET", "/api/posts/%d.json" % rng.randint(1, 5000))),
    (12, lambda: ("GET", "/posts/%d/comments.xml" % rng.randint(1, 5000))),
    (8, lambda: ("GET", "/reports/2026-11-%02d.csv" % rng.randint(1, 28))),
    (10, lambda: ("GET", "/users/" + rng.choice(uuids))),
    (8, lambda: ("GET", "/posts/" + rng.choice(slugs))),
    (4, lambda: ("GET", "/downloads/%s.zip" % rng.choice(sha1s))),
    (5, lambda: ("GET", "/search?q=%s&page=%d" % (rng.choice(words), rng.randint(1, 20)))),
    (4, lambda: ("POST", "/posts/%d/comments" % rng.randint(1, 5000))),
    (3, lambda: ("GET", "/")),
    (4, lambda: ("GET", "/api/v1/orders/%d.json" % rng.randint(1, 200000))),
    (2, lambda: ("GET", "/wiki/Topic_%d" % rng.randint(1, 20000))),
]
cumulative = []
total = 0
for weight, make in routes:
    total += weight
    cumulative.append((total, make))
out = sys.stdout
buf = []
for i in range(lines):
    t = start + i * 3600 // lines
    stamp = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(t))
    u = rng.random() * total
    make = next(m for c, m in cumulative if u < c)
    method, target = make()
    status = 302 if method == "POST" else (404 if rng.random() < 0.02 else 200)
    buf.append('10.0.%d.%d - - [%s] "%s %s HTTP/1.1" %d %d "-" "%s"\n'
               % (i % 256, (i // 256) % 256, stamp, method, target, status, rng.randint(200, 20000), ua))
    if len(buf) >= 10000:
        out.write("".join(buf))
        buf.clear()
out.write("".join(buf))
