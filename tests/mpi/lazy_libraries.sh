#!/usr/bin/env bash
# HDF5, libarchive and OpenBLAS are opened on first use (io/hdf5_api.h, io/archive_api.h,
# train/blas.h): the binary does not link them, and while a run's workers run synthetic
# trials, only rank 0 (the writer of the results file) has HDF5 mapped and no worker has
# any of the three. Then the run ends as usual, every trial with its result.
source "$(dirname "$0")/lib.sh"

needed=$(readelf -d "$RANKTUNE" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for lib in libhdf5 libarchive libopenblas libcurl; do
  if grep -q "^$lib" <<<"$needed"; then fail "$RANKTUNE links $lib: $(tr '\n' ' ' <<<"$needed")"; fi
done

trace=$WORK/trace.txt
RANKTUNE_TRACE=trials mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/configs/quickstart.toml" --results "$WORK/r.h5" \
    --set experiment.num_samples=2 --set stop.max_t=1 --set trainable.seconds_per_step=3 \
    > "$WORK/out.txt" 2> "$trace" &
launcher=$!
wait_for_rank0 "$WORK/r.h5" "$launcher" > /dev/null
# Both workers are inside their 3 s trial once each has said "Start in".
for _ in $(seq 100); do
  (( $(grep -c " worker: Start in " "$trace" || true) >= 2 )) && break
  sleep 0.1
done
(( $(grep -c " worker: Start in " "$trace" || true) >= 2 )) || { kill "$launcher"; cat "$trace"; fail "the workers did not begin"; }

ranks=0
for pid in $(pgrep -f "ranktune run .*$WORK/r.h5" || true); do
  rank=$(tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
  [[ -n $rank ]] || continue
  maps=$(cat "/proc/$pid/maps" 2>/dev/null) || continue
  ranks=$((ranks + 1))
  if [[ $rank == 0 ]]; then
    grep -q "libhdf5" <<<"$maps" || { kill "$launcher"; fail "rank 0 has no HDF5 mapped while it writes $WORK/r.h5"; }
  else
    for lib in libhdf5 libarchive libopenblas libcurl; do
      if grep -q "$lib" <<<"$maps"; then kill "$launcher"; fail "worker rank $rank has $lib mapped: $(grep "$lib" <<<"$maps" | head -1)"; fi
    done
  fi
done
(( ranks == 3 )) || { kill "$launcher"; fail "found $ranks ranks, not 3"; }

wait "$launcher" || { cat "$WORK/out.txt" "$trace"; fail "the run failed"; }
check_results "$WORK/r.h5" 2 1
echo "ok: the binary links none of HDF5, libarchive and OpenBLAS; rank 0 maps HDF5, the workers map none"
