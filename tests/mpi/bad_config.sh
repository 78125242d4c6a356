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
# An existing results file is never overwritten: a run given one resumes it. A file that is
# not a results file is refused as a bad results file (exit 5) and left as it was.
touch "$WORK/exists.h5"
rc=0; "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/exists.h5" > "$WORK/out.txt" 2>&1 || rc=$?
[[ $rc -eq 5 ]] && grep -q "exists.h5" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "existing non-results file not refused with 5 (rc $rc)"; }
[[ ! -s "$WORK/exists.h5" ]] || fail "existing file was written"
# A results file of another config is refused with the diff; the same config resumes it.
small=(--set experiment.num_samples=2 --set stop.max_t=2 --set trainable.seconds_per_step=0)
"$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --np 2 --results "$WORK/q.h5" "${small[@]}" > "$WORK/out.txt" 2>&1 \
  || { cat "$WORK/out.txt"; fail "small run failed"; }
rc=0; "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --np 2 --results "$WORK/q.h5" "${small[@]}" --set experiment.seed=9 \
  > "$WORK/out.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "another config" "$WORK/out.txt" && grep -q "+ experiment.seed=9" "$WORK/out.txt" \
  || { cat "$WORK/out.txt"; fail "changed config not refused with a diff (rc $rc)"; }
# It names --results as typed, not the override ranktune makes of it (issue 27 item 17d).
grep -qF -- "--results $WORK/q.h5: experiment.results: results file" "$WORK/out.txt" && ! grep -q -- "--set experiment.results" "$WORK/out.txt" \
  || { cat "$WORK/out.txt"; fail "the refusal blames a --set experiment.results never typed"; }
"$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --np 2 --results "$WORK/q.h5" "${small[@]}" --resume > "$WORK/out.txt" 2>&1 \
  || { cat "$WORK/out.txt"; fail "resuming a finished experiment failed"; }
grep -q "resuming" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "no resume message"; }
check_results "$WORK/q.h5" 2 2
