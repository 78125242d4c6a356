#!/usr/bin/env bash
# Plain `ranktune run` (no launcher in the environment) re-launches itself under mpirun.
source "$(dirname "$0")/lib.sh"
unset OMPI_MCA_rmaps_base_oversubscribe OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
"$RANKTUNE" run "$SRC/configs/quickstart.toml" --np 3 --results "$WORK/s.h5" --set experiment.num_samples=6 \
  > "$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt"; fail "self-launched run exited $?"; }
grep -q "on 3 workers" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "expected 3 workers"; }
check_results "$WORK/s.h5" 6 20
"$PY" - "$WORK/s.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    assert f["stack"].attrs["world_size"] == b"4"
    assert b"experiment.num_samples=6" in f.attrs["overrides"]
    assert b"--np 3" in f.attrs["command_line"]
PY
