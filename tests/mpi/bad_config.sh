#!/usr/bin/env bash
# A bad config exits 2 with file:line:key before any rank runs, launched either way.
source "$(dirname "$0")/lib.sh"
cat > "$WORK/bad.toml" <<'TOML'
[experiment]
name = "bad"
metric = "loss"
mode = "min"
num_sample = 4

[search.space]
x1 = { uniform = [0.0, 1.0] }
x2 = { uniform = [0.0, 1.0] }

[trainable]
kind = "synthetic"
TOML
expect_refusal() {
  local rc=0
  "$@" > "$WORK/out.txt" 2>&1 || rc=$?
  [[ $rc -eq 2 ]] || { cat "$WORK/out.txt"; fail "expected exit code 2, got $rc from: $*"; }
  grep -q "bad.toml:5: experiment.num_sample" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "no file:line:key"; }
  grep -qi "did you mean 'num_samples'" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "no suggestion"; }
  [[ ! -e "$WORK/bad.h5" ]] || fail "a results file was created for a refused config"
}
expect_refusal "$RANKTUNE" run "$WORK/bad.toml" --results "$WORK/bad.h5"
expect_refusal mpirun -np 3 --bind-to none "$RANKTUNE" run "$WORK/bad.toml" --results "$WORK/bad.h5"
# An existing results file is never overwritten.
touch "$WORK/exists.h5"
rc=0; "$RANKTUNE" run "$SRC/configs/quickstart.toml" --results "$WORK/exists.h5" > "$WORK/out.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "already exists" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "existing file not refused"; }
[[ ! -s "$WORK/exists.h5" ]] || fail "existing file was written"
