#!/usr/bin/env bash
# Usage: scripts/golden-outputs.sh BIN OUT: the outputs a refactoring must
# keep byte-identical (issue 26): diff -r two OUTs from two builds. They are
# reports rebuilt from committed results directories, a sweep's and a
# comparison's analysis, and every plan's dry run.
set -uo pipefail
bin=$(realpath "$1"); out=$2; root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out"; mkdir -p "$out/dirs"
for d in 2026-11-23-vm/laas-2010 2026-11-23-sweep-puma-workers/run3-quiet/results 2026-11-26-aa-spread/run1 2026-11-26-aa-spread/run2; do
  name=$(echo "$d" | tr / _)
  cp -r "$root/bench/runs/$d" "$out/dirs/$name"
  # `report` rewrites the committed reports from the records
  "$bin" report "$out/dirs/$name" > "$out/$name.report.txt" 2>&1; echo "exit $?" >> "$out/$name.report.txt"
done
"$bin" sweep --analyse "$out/dirs/2026-11-23-sweep-puma-workers_run3-quiet_results" --json > "$out/sweep.json" 2>&1; echo "exit $?" >> "$out/sweep.json"
"$bin" sweep --analyse "$out/dirs/2026-11-23-sweep-puma-workers_run3-quiet_results" > "$out/sweep.txt" 2>&1; echo "exit $?" >> "$out/sweep.txt"
"$bin" compare "$out/dirs/2026-11-26-aa-spread_run1" "$out/dirs/2026-11-26-aa-spread_run2" --json > "$out/compare.json" 2>&1; echo "exit $?" >> "$out/compare.json"
"$bin" compare "$out/dirs/2026-11-26-aa-spread_run1" "$out/dirs/2026-11-26-aa-spread_run2" > "$out/compare.txt" 2>&1; echo "exit $?" >> "$out/compare.txt"
"$bin" run --dry-run --seed 1 > "$out/plan-default.txt" 2>&1
for p in "$root"/plans/*.toml; do
  "$bin" run "$p" --dry-run --seed 1 > "$out/plan-$(basename "$p" .toml).txt" 2>&1
done
# results dirs: keep only the rebuilt reports
find "$out/dirs" -path '*/trials' -prune -o -path '*/work' -prune -o -type f \( -name 'report.*' -o -name 'trials.csv' -o -name 'summary.json' -o -name '*.html' -o -name 'compare.json' -o -name 'sweep.json' \) -print > "$out/files.txt"
grep -rlF "$out" "$out" | xargs -r sed -i "s|$out|OUT|g"
