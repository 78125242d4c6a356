#!/usr/bin/env bash
# Whose results file a writer may write (issue 27, items 1 and 17e). In a shared folder (mode
# 1777, as /scratch often is) a second local user, made by the test (second_user.sh), leaves
# results files for root's runs to find; every writer must refuse them with exit 2, saying
# what is wrong, and leave them byte for byte as they were:
#   - their own run's file, with the same config and world-writable (umask 0): `run --resume`,
#     self-launched and under mpirun, must not take it over ("resuming ... trials recorded");
#   - the same file made 0644 (another user's, though root could write it);
#   - an `eval` of their file (it would record into it), and `compact` of it in place (it
#     would replace it); `report`, `eval --no-record` and `compact -o` only read it, which is
#     allowed;
#   - a link at the results path to their file in a folder of theirs;
#   - a dangling link at the results path (HDF5 used to say "File exists");
#   - root's own file, left mode 0666 (anyone may change what the run builds on); made
#     0644, it resumes.
# And a run under umask 002 makes a results file that no one else may write, which resumes,
# and which `compact` keeps so.
# Every case is checked and reported, then the script fails if any did, so a run on an older
# binary shows each one that it gets wrong. Skipped (exit 77) where no second user can be made.
source "$(dirname "$0")/../mpi/lib.sh"
source "$(dirname "$0")/second_user.sh"
attack_scene
SHORT=(--set experiment.num_samples=2 --set stop.max_t=3 --set trainable.seconds_per_step=0.0)
CFG="$WORK/q.toml"
cp "$SRC/tests/data/quickstart_branin.toml" "$CFG"
chmod 0644 "$CFG"

failures=0
bad() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
sum() { sha256sum "$1" | cut -d' ' -f1; }

# refused NAME TEXT COMMAND...: COMMAND must exit 2 within 60 s saying TEXT.
refused() {
  local name=$1 text=$2 rc=0
  shift 2
  timeout -k 5 60 "$@" > "$WORK/$name.txt" 2>&1 || rc=$?
  if [[ $rc -ne 2 ]] || ! grep -qF -- "$text" "$WORK/$name.txt"; then
    bad "$name: expected exit 2 and '$text', got $rc: $(grep -v '^\[ranktune' "$WORK/$name.txt" | tail -3)"
  else
    echo "ok: $name refused: $(grep -F -- "$text" "$WORK/$name.txt" | head -1 | cut -c1-220)"
  fi
  if grep -q "resuming" "$WORK/$name.txt"; then bad "$name: the run resumed: $(grep resuming "$WORK/$name.txt")"; fi
}
# unchanged NAME FILE SUM: FILE must still have the checksum SUM.
unchanged() { [[ $(sum "$2") == "$3" ]] || bad "$1: $2 was written into"; }

# Their run of the same experiment, in the shared folder; they leave the results file alone
# (its control file, which would be refused by its own rules, removed), world-writable (as an
# older ranktune under umask 0 made it). (The other user has no home; Open MPI needs none.)
as_other bash -c "cd '$S' && '$R' run '$CFG' --np 1 --results '$S/x.h5' ${SHORT[*]} && chmod 0666 '$S/x.h5' &&
  rm '$S/x.h5.control'" \
  > "$WORK/theirs.txt" 2>&1 || fail "the second user's run failed: $(tail -3 "$WORK/theirs.txt")"
read -r mode owner < <(stat -c '%a %u' "$S/x.h5")
[[ $owner == "$OTHER_UID" && $mode == 666 ]] || fail "their file has mode $mode and uid $owner, not 666 and $OTHER_UID"
before=$(sum "$S/x.h5")
refused theirs_open "x.h5 belongs to uid $OTHER_UID" "$R" run "$CFG" --np 1 --results "$S/x.h5" --resume "${SHORT[@]}"
unchanged theirs_open "$S/x.h5" "$before"
refused theirs_mpirun "x.h5 belongs to uid $OTHER_UID" \
  mpirun -np 2 --bind-to none "$R" run "$CFG" --results "$S/x.h5" --resume "${SHORT[@]}"
unchanged theirs_mpirun "$S/x.h5" "$before"
[[ ! -e "$S/x.h5.control" ]] || bad "theirs_mpirun: rank 0 made a control file beside their results file"
as_other chmod 0644 "$S/x.h5"
refused theirs_0644 "x.h5 belongs to uid $OTHER_UID" "$R" run "$CFG" --np 1 --results "$S/x.h5" --resume "${SHORT[@]}"
unchanged theirs_0644 "$S/x.h5" "$before"

# eval records into the file it evaluates: a file of theirs that can be evaluated (an mlp
# run's, from the fixtures), world-writable. Reading it (report, eval --no-record) is fine.
gunzip -c "$SRC/tests/data/old_results/asha_mlp_interrupted.h5.gz" > "$S/e.h5"
chown "$OTHER" "$S/e.h5"
chmod 0666 "$S/e.h5"
e_before=$(sum "$S/e.h5")
refused eval "e.h5 belongs to uid $OTHER_UID" "$R" eval "$S/e.h5" --top 1 --device cpu --latency-s 0.05
unchanged eval "$S/e.h5" "$e_before"
"$R" report "$S/e.h5" > "$WORK/report.txt" 2>&1 || bad "report of their file failed: $(tail -2 "$WORK/report.txt")"
"$R" eval "$S/e.h5" --top 1 --device cpu --latency-s 0.05 --no-record > "$WORK/eval_read.txt" 2>&1 ||
  bad "eval --no-record of their file failed: $(tail -2 "$WORK/eval_read.txt")"
unchanged eval_readers "$S/e.h5" "$e_before"
# compact in place replaces the file; a compacted copy (-o) only reads it.
refused compact "e.h5 belongs to uid $OTHER_UID" "$R" compact "$S/e.h5"
unchanged compact "$S/e.h5" "$e_before"
[[ $(stat -c %u "$S/e.h5") == "$OTHER_UID" ]] || bad "compact: their file was replaced by root's"
"$R" compact "$S/e.h5" -o "$WORK/e_copy.h5" > "$WORK/compact_copy.txt" 2>&1 ||
  bad "compact -o of their file failed: $(tail -2 "$WORK/compact_copy.txt")"

# A link at the results path, to their file in a folder of theirs.
as_other bash -c "mkdir '$S/theirs' && cp '$S/x.h5' '$S/theirs/y.h5' && chmod 0666 '$S/theirs/y.h5' && ln -s '$S/theirs/y.h5' '$S/l.h5'"
y_before=$(sum "$S/theirs/y.h5")
refused link "l.h5 is a symbolic link to $S/theirs/y.h5" "$R" run "$CFG" --np 1 --results "$S/l.h5" --resume "${SHORT[@]}"
unchanged link "$S/theirs/y.h5" "$y_before"
refused link_eval "l.h5 is a symbolic link" "$R" eval "$S/l.h5" --top 1 --device cpu
unchanged link_eval "$S/theirs/y.h5" "$y_before"

# A dangling link: a fresh run would have HDF5 create the file through it (O_EXCL refuses,
# as "File exists").
as_other ln -s "$S/nowhere.h5" "$S/d.h5"
refused dangling "d.h5 is a symbolic link to $S/nowhere.h5 (which does not exist)" \
  "$R" run "$CFG" --np 1 --results "$S/d.h5" "${SHORT[@]}"
refused dangling_mpirun "d.h5 is a symbolic link" mpirun -np 2 --bind-to none "$R" run "$CFG" --results "$S/d.h5" "${SHORT[@]}"
[[ ! -e "$S/nowhere.h5" ]] || bad "dangling: a file was made where the link points"
[[ ! -e "$S/d.h5.control" ]] || bad "dangling_mpirun: the control file was made beside the link"

# Root's own file, but anyone may change it.
"$R" run "$CFG" --np 1 --results "$S/own.h5" "${SHORT[@]}" > "$WORK/own.txt" 2>&1 || fail "root's run failed: $(tail -3 "$WORK/own.txt")"
chmod 0666 "$S/own.h5"
own_before=$(sum "$S/own.h5")
refused own_open "own.h5 has mode 0666, which lets other users change it" \
  "$R" run "$CFG" --np 1 --results "$S/own.h5" --resume "${SHORT[@]}"
unchanged own_open "$S/own.h5" "$own_before"
chmod 0644 "$S/own.h5"
rc=0
"$R" run "$CFG" --np 1 --results "$S/own.h5" --resume "${SHORT[@]}" --set experiment.num_samples=3 --force \
  > "$WORK/own_resume.txt" 2>&1 || rc=$?
if [[ $rc -ne 0 ]] || ! grep -q "resuming" "$WORK/own_resume.txt"; then
  bad "own: root's 0644 file did not resume (exit $rc): $(tail -3 "$WORK/own_resume.txt")"
fi

# umask 002 (group-writable files): the results file is made without group write, so that
# the run's own file is never refused when it resumes.
mkdir -m 0755 "$WORK/mine"
(umask 002 && "$R" run "$CFG" --np 1 --results "$WORK/mine/u.h5" "${SHORT[@]}") > "$WORK/umask.txt" 2>&1 ||
  bad "the run under umask 002 failed: $(tail -3 "$WORK/umask.txt")"
if [[ -e "$WORK/mine/u.h5" ]]; then
  mode=$(stat -c %a "$WORK/mine/u.h5")
  (((8#$mode & 8#022) == 0)) || bad "umask 002: the results file has mode $mode: others may write it"
  (umask 002 && "$R" run "$CFG" --np 1 --results "$WORK/mine/u.h5" --resume "${SHORT[@]}") > "$WORK/umask2.txt" 2>&1 ||
    bad "umask 002: the file did not resume: $(tail -3 "$WORK/umask2.txt")"
  # ... and compacted in place, it stays so.
  (umask 002 && "$R" compact "$WORK/mine/u.h5") > "$WORK/umask3.txt" 2>&1 || bad "umask 002: compact failed: $(tail -2 "$WORK/umask3.txt")"
  mode=$(stat -c %a "$WORK/mine/u.h5")
  (((8#$mode & 8#022) == 0)) || bad "umask 002: the compacted file has mode $mode: others may write it"
fi

if [[ $failures -gt 0 ]]; then
  echo "$failures checks failed" >&2
  exit 1
fi
echo "ok: no results file of another user, open to others or reached through a link was written"
