#!/usr/bin/env bash
# ctest smoke test for bench_recording: a tiny run must exit 0 and print every figure.
# No timing assertions: the figures are only checked to be there.
set -euo pipefail
bin=${1:?usage: recording_smoke.sh PATH/TO/bench_recording}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$("$bin" --quick)
printf '%s\n' "$out"
for figure in 'driver path \(Controller\+Recorder\+ResultsWriter\) +[0-9]+' \
              'bare HDF5 append, batch [0-9]+ rows \+ H5Fflush +[0-9]+' \
              'ratio driver path / bare +[0-9.]+' \
              'Result pack \+ unpack +[0-9]+ ns' \
              'Result send-to-self \+ try_receive \+ unpack +[0-9]+ ns'; do
  grep -Eq "$figure" <<<"$out" || { echo "FAIL: no figure matching /$figure/" >&2; exit 1; }
done
echo "PASS: bench_recording --quick printed every figure"
