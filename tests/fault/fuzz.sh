#!/usr/bin/env bash
# Fuzzes the results-file reader (and the report formats) with libFuzzer for SECONDS
# (default 300) on one core. Needs the clang build (see tests/fault/README.md):
#   CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -DRANKTUNE_FUZZ=ON -DRANKTUNE_BUILD_BENCHMARKS=OFF
#   cmake --build build-fuzz --target fuzz_results_reader
# and a normal ranktune binary to write the seeds (RANKTUNE, default build-fault, then build).
# Seeds: real results files from `ranktune simulate`, an old-format copy (make_seeds.py), and
# the regression corpus. Crashes land in $FUZZ_WORK/artifacts; keep each one, gzipped, in
# tests/fault/corpus/ once the reader refuses it cleanly.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-300}
FUZZER=${FUZZER:-build-fuzz/tests/fault/fuzz_results_reader}
RANKTUNE=${RANKTUNE:-$( [[ -x build-fault/apps/ranktune ]] && echo build-fault/apps/ranktune || echo build/apps/ranktune )}
work=${FUZZ_WORK:-/tmp/ranktune-fuzz}
mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"
for n in 1 3; do
  [[ -s "$work/seeds/sim$n.h5" ]] || "$RANKTUNE" simulate tests/data/quickstart_branin.toml --workers 2 \
    --set experiment.num_samples=$n --results "$work/seeds/sim$n.h5" > /dev/null
done
[[ -s "$work/seeds/old-format.h5" ]] || /usr/bin/python3 tests/fault/make_seeds.py "$work/seeds/sim3.h5" "$work/seeds/old-format.h5"
for f in tests/fault/corpus/*.gz; do
  [[ -e "$f" ]] && gzip -dc "$f" > "$work/seeds/$(basename "$f" .gz)"
done
# detect_leaks=0: HDF5 keeps free lists that look like leaks; a real leak shows up as RSS
# growth and hits -rss_limit_mb instead.
ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
  "$FUZZER" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" "$work/seeds"
