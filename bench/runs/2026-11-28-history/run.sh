#!/bin/sh
# The committed history (README.md beside it): twelve runs of one small
# study, hello on puma, six with one worker (plan-w1.toml) and six with
# two (plan-w2.toml), then `rackbench history` over them. Run from the
# repository's root, so each run records its git commit:
#
#   sh bench/runs/2026-11-28-history/run.sh
#
# RACKBENCH names the binary (default: target/release/rackbench).
set -eu
here=bench/runs/2026-11-28-history
rb=${RACKBENCH:-target/release/rackbench}
uptime > "$here/uptime-before.txt"
for i in 01 02 03 04 05 06 07 08 09 10 11 12; do
  plan=plan-w1.toml
  [ "$i" -gt 06 ] && plan=plan-w2.toml
  "$rb" run "$here/$plan" --no-pin --out "$here/runs/$i"
  # The server logs and the per-run reports (rebuilt by `rackbench report`)
  # are not kept.
  rm -rf "$here/runs/$i/work" "$here/runs/$i"/report.* "$here/runs/$i/trials.csv"
done
uptime > "$here/uptime-after.txt"
"$rb" history "$here/runs" --markdown --html "$here/history.html" > "$here/history.md"
"$rb" history "$here/runs" --json > "$here/history.json"
"$rb" history "$here/runs" --baseline "$here/runs/01" --markdown > "$here/history-vs-01.md"
# The gate a nightly job would run: the newest run against the run before
# it (no regression: exit 0), and against the first (two workers are
# faster, so a fall in throughput never crosses the line: exit 0).
"$rb" history "$here/runs" --fail-if 'throughput<-5%'
"$rb" history "$here/runs" --baseline "$here/runs/01" --fail-if 'throughput<-5%'
