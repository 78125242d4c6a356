#!/usr/bin/env bash
# ctest smoke test for bench_schedulers and bench_search: tiny runs must exit 0 and print a
# row for every scheduler and every searcher+scheduler pair. No timing or quality
# assertions: the figures are only checked to be there.
set -euo pipefail
schedulers=${1:?usage: search_smoke.sh PATH/TO/bench_schedulers PATH/TO/bench_search}
search=${2:?usage: search_smoke.sh PATH/TO/bench_schedulers PATH/TO/bench_search}
out=$("$schedulers" 1000)
printf '%s\n' "$out"
for name in fifo asha asha_promotion hyperband pbt median_stopping; do
  grep -Eq "^$name +1000 +[0-9.]+$" <<<"$out" || { echo "FAIL: no bench_schedulers row for $name" >&2; exit 1; }
done
out=$("$search" 8 1 30)
printf '%s\n' "$out"
for fn in hartmann6 branin; do
  for pair in random\\+fifo random\\+asha random\\+hyperband bohb\\+hyperband tpe\\+fifo; do
    grep -Eq "^$fn +$pair +([0-9]+|-) +[01]/1 +-?[0-9.]+ +-?[0-9.]+ +[0-9]+ +[0-9.]+$" <<<"$out" \
      || { echo "FAIL: no bench_search row for $fn $pair" >&2; exit 1; }
  done
done
echo "PASS: bench_schedulers and bench_search printed every row"
