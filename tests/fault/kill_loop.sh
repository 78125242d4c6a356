#!/usr/bin/env bash
# kill -9 loop: FAULT_KILLS (default 32) SIGKILLs of a real `mpirun ... ranktune run` at
# seeded random moments (rank 0 alone, or the whole job), each followed by `--resume`, then a
# final resume to the end. kill_loop.py aims the kills and checks the file after each one
# (it opens in h5py and `ranktune report`; every row a SWMR reader saw before the kill is
# still there; every live checkpoint passes its CRC-32C), and at the end (exactly the
# planned trials, all TERMINATED at max_t, no (trial, attempt, iteration) twice, no
# iteration skipped). FAULT_SEED=N replays a run's choices. See tests/fault/README.md.
source "$SRC/tests/mpi/lib.sh"
seed=${FAULT_SEED:-$RANDOM}
kills=${FAULT_KILLS:-32}
echo "kill_loop.sh: FAULT_SEED=$seed FAULT_KILLS=$kills"

# PBT on 3 workers with a checkpoint at every iteration (retention keeps 2 per trial, so
# bytes are dropped and reused all the time), one at each trial's end, and a commit every
# 20 ms: rank 0 is writing the file most of the time, so kills land in flushes and in
# checkpoint writes as well as between them. Sized so that 32 kills leave work for the
# final resume (about 36 s of trials on 3 workers in all; 32 kills take about 18 s of it).
trials=12 max_t=900
cat > "$WORK/kill.toml" <<TOML
[experiment]
name = "kill_loop_pbt"
metric = "loss"
mode = "min"
seed = 13
num_samples = $trials
flush_interval_ms = 20

[search]
algorithm = "random"

[search.space]
x1 = { uniform = [-2.0, 2.0] }
x2 = { uniform = [-1.0, 3.0] }

[scheduler]
kind = "pbt"
perturbation_interval = 5
quantile_fraction = 0.34

[trainable]
kind = "synthetic"
function = "rosenbrock"
seconds_per_step = 0.01
noise = 0.01

[checkpoint]
every = 1
at_end = true
keep_last = 2

[stop]
max_t = $max_t
TOML
"$RANKTUNE" check "$WORK/kill.toml" > /dev/null || fail "the loop's config does not validate"
"$PY" "$SRC/tests/fault/kill_loop.py" "$RANKTUNE" "$WORK/kill.toml" "$WORK/k.h5" "$WORK" \
  --seed "$seed" --kills "$kills" --np 4 --trials "$trials" --max-t "$max_t" \
  || { echo "logs of the last runs:"; tail -n 15 "$WORK"/run*.txt | tail -n 60; fail "kill loop (FAULT_SEED=$seed)"; }

# The writer's lock: while another process holds the results file (here a stand-in holding
# the same fcntl lock as a live rank 0), a resume must refuse instead of mending and writing
# it under that writer.
"$PY" - "$WORK/k.h5" "$RANKTUNE" "$WORK/kill.toml" <<'PY' || fail "a resume wrote a file that another writer held"
import fcntl, os, struct, subprocess, sys
path, ranktune, cfg = sys.argv[1:]
fd = os.open(path, os.O_RDWR)
fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
out = subprocess.run(["mpirun", "-np", "2", "--bind-to", "none", ranktune, "run", cfg, "--results", path, "--resume"],
                     capture_output=True, text=True, timeout=120)
assert out.returncode != 0 and "another process is writing it" in out.stdout + out.stderr, (out.returncode, out.stdout[-2000:])
print("locked file: resume refused")
PY
