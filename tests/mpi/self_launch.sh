#!/usr/bin/env bash
# Plain `ranktune run` (no launcher in the environment) re-launches itself under mpirun.
source "$(dirname "$0")/lib.sh"
unset OMPI_MCA_rmaps_base_oversubscribe OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
"$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --np 3 --results "$WORK/s.h5" --set experiment.num_samples=6 \
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

# On one host the self-launch picks Open MPI's ob1 point-to-point layer and the shared-memory
# transports (mpi/launch.h), and a pml the user picked is passed on as it was. Each trial
# reports, as its loss, what its worker rank's OMPI_MCA_pml and OMPI_MCA_btl are (mpirun hands
# --mca values to the ranks that way): 1 for ob1 and self,vader, 2 for the user's "ob1,ucx"
# and self,vader, 0 for anything else.
cat > "$WORK/pml.py" <<'PY'
#!/usr/bin/env python3
import os
env = open(f"/proc/{os.getppid()}/environ", "rb").read().split(b"\0")
get = lambda name: next((e.split(b"=", 1)[1].decode() for e in env if e.startswith(name + b"=")), "")
value = (get(b"OMPI_MCA_pml"), get(b"OMPI_MCA_btl"))
os.write(3, ('{"loss": %d}\n' % {("ob1", "self,vader"): 1, ("ob1,ucx", "self,vader"): 2}.get(value, 0)).encode())
PY
chmod +x "$WORK/pml.py"
command_config "$WORK/pml.toml" pml 2 1 ./pml.py
pml_of() {  # RESULTS: the lowest and highest loss of its trials
  "$PY" -c 'import sys, h5py; r = h5py.File(sys.argv[1], "r")["results"][:]; print(int(r["loss"].min()), int(r["loss"].max()))' "$1"
}
"$RANKTUNE" run "$WORK/pml.toml" --np 2 --results "$WORK/pml.h5" > "$WORK/pml.txt" 2>&1 || { cat "$WORK/pml.txt"; fail "pml run exited $?"; }
[[ $(pml_of "$WORK/pml.h5") == "1 1" ]] || fail "the ranks of a one-host self-launch do not run ob1: $(pml_of "$WORK/pml.h5")"
OMPI_MCA_pml=ob1,ucx "$RANKTUNE" run "$WORK/pml.toml" --np 2 --results "$WORK/pml2.h5" > "$WORK/pml2.txt" 2>&1 \
  || { cat "$WORK/pml2.txt"; fail "pml run with the user's pml exited $?"; }
[[ $(pml_of "$WORK/pml2.h5") == "2 2" ]] || fail "the user's OMPI_MCA_pml was not passed on: $(pml_of "$WORK/pml2.h5")"
echo "ok: ob1 and self,vader on one host, the user's pml kept"
