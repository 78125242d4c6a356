#!/usr/bin/env bash
# The self-launcher's failures say what went wrong, and its run folder follows $TMPDIR:
# - an mpirun that cannot run names the real error (which the spawn returns; it used to
#   be read from errno) and whether mpirun was missing or not executable;
# - a TMPDIR where the run folder cannot be made is named, and nothing starts;
# - a run's folder (where rank 0 leaves its exit code) lies in $TMPDIR, not /tmp, and is
#   gone when the run ends.
source "$(dirname "$0")/lib.sh"
unset OMPI_MCA_rmaps_base_oversubscribe
run_self() {  # run_self OUT ARGS...: a self-launched run of the quickstart, its exit code in $code
  local out=$1
  shift
  code=0
  "$@" "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --np 2 --results "$WORK/r.h5" \
    --set experiment.num_samples=2 > "$out" 2>&1 || code=$?
}

# Not executable, first in PATH (as root, a file without x bits still fails with EACCES).
mkdir "$WORK/noexec"
printf '#!/bin/sh\nexit 0\n' > "$WORK/noexec/mpirun"
chmod 644 "$WORK/noexec/mpirun"
run_self "$WORK/noexec.txt" env PATH="$WORK/noexec:/nonexistent"
[[ $code == 1 ]] || { cat "$WORK/noexec.txt"; fail "a non-executable mpirun: exit $code, expected 1"; }
grep -q "cannot run mpirun: Permission denied (found in PATH, but not executable)" "$WORK/noexec.txt" ||
  { cat "$WORK/noexec.txt"; fail "a non-executable mpirun is not named as such"; }

# Not in PATH at all.
run_self "$WORK/missing.txt" env PATH=/nonexistent
[[ $code == 1 ]] || { cat "$WORK/missing.txt"; fail "no mpirun: exit $code, expected 1"; }
grep -q "cannot run mpirun: No such file or directory (not found in PATH)" "$WORK/missing.txt" ||
  { cat "$WORK/missing.txt"; fail "a missing mpirun is not named as such"; }
grep -q "apt-get install openmpi-bin" "$WORK/missing.txt" || fail "the message does not say what to do"
[[ ! -e $WORK/r.h5 ]] || fail "a results file was made although nothing ran"

# TMPDIR is a file: the run folder cannot be made there, and the message names it.
touch "$WORK/tmp-is-a-file"
run_self "$WORK/tmpfile.txt" env TMPDIR="$WORK/tmp-is-a-file"
[[ $code == 1 ]] || { cat "$WORK/tmpfile.txt"; fail "TMPDIR a file: exit $code, expected 1"; }
grep -q "cannot create the run's temporary folder: .*$WORK/tmp-is-a-file/ranktune-" "$WORK/tmpfile.txt" ||
  { cat "$WORK/tmpfile.txt"; fail "the run folder's error does not name \$TMPDIR"; }
grep -q "set TMPDIR" "$WORK/tmpfile.txt" || fail "the message does not say what to do"

# A good run: its folder (RANKTUNE_EXIT_CODE_FILE's, which a command trainable inherits)
# lies in $TMPDIR, and nothing of it is left there afterwards.
mkdir "$WORK/tmp"
cat > "$WORK/where.sh" <<SH
#!/bin/sh
echo "\$RANKTUNE_EXIT_CODE_FILE" > "$WORK/where.txt"
echo '{"loss": 1}' >&3
SH
chmod +x "$WORK/where.sh"
cat > "$WORK/exp.toml" <<TOML
[experiment]
name = "where"
metric = "loss"
mode = "min"
num_samples = 1
[search]
algorithm = "random"
[search.space]
x = { uniform = [0.0, 1.0] }
[stop]
max_t = 1
[trainable]
kind = "command"
command = ["./where.sh"]
TOML
TMPDIR="$WORK/tmp" "$RANKTUNE" run "$WORK/exp.toml" --np 1 --results "$WORK/w.h5" > "$WORK/good.txt" 2>&1 ||
  { cat "$WORK/good.txt"; fail "the run in a private TMPDIR exited $?"; }
where=$(cat "$WORK/where.txt")
[[ $where == "$WORK/tmp/ranktune-"*/exit-code ]] || fail "the run folder is not in \$TMPDIR: $where"
left=$(find "$WORK/tmp" -mindepth 1)
[[ -z $left ]] || fail "the run left in \$TMPDIR: $left"
echo "OK"
