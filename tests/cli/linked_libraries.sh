#!/usr/bin/env bash
# HDF5, libarchive and OpenBLAS are linked as usual (issue 28): `ldd` shows them, and the
# dynamic linker picks them up where a site points it, as with any linked library. A copy of
# the binary's libhdf5 in a folder on LD_LIBRARY_PATH is the one a real run maps: the
# loader's own trace (LD_DEBUG=libs) shows its initialiser called from that folder, and the
# run writes a results file that reports as usual.
source "$(dirname "$0")/../mpi/lib.sh"

deps=$(ldd "$RANKTUNE")
for lib in libhdf5 libarchive libopenblas; do
  grep -q "^[[:space:]]*$lib" <<<"$deps" || fail "ldd $RANKTUNE lists no $lib: $deps"
done

# The libhdf5 the binary maps, by its SONAME, copied into a folder of ours.
line=$(grep -m1 "^[[:space:]]*libhdf5" <<<"$deps")
soname=$(awk '{print $1}' <<<"$line")
real=$(awk '{print $3}' <<<"$line")
[[ -f $real ]] || fail "cannot find the file of $soname in: $line"
site=$WORK/site-hdf5
mkdir -p "$site"
cp -L "$real" "$site/$soname"

grep -q "$site/$soname" <<<"$(LD_LIBRARY_PATH=$site ldd "$RANKTUNE")" ||
  fail "with LD_LIBRARY_PATH=$site, ldd does not resolve $soname there"

# A real experiment (simulated in virtual time, so no mpirun is needed) under that path.
LD_LIBRARY_PATH=$site LD_DEBUG=libs LD_DEBUG_OUTPUT=$WORK/ld \
  "$RANKTUNE" simulate "$SRC/tests/data/quickstart_branin.toml" --workers 2 --results "$WORK/s.h5" \
  --set experiment.num_samples=4 > "$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt"; fail "simulate failed"; }
grep -qh "calling init: $site/$soname" "$WORK"/ld.* ||
  fail "the run did not initialise $site/$soname: $(grep -h 'calling init: .*libhdf5' "$WORK"/ld.* | head -2)"
"$RANKTUNE" report "$WORK/s.h5" --format csv > "$WORK/report.csv" || fail "report failed"
(( $(wc -l < "$WORK/report.csv") == 5 )) || fail "expected 4 trials in the report: $(cat "$WORK/report.csv")"
echo "ok: ldd lists libhdf5, libarchive and libopenblas; a libhdf5 on LD_LIBRARY_PATH is the one a run maps"
