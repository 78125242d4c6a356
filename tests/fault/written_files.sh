#!/usr/bin/env bash
# The files that ranktune's commands write whole (issue 27, item 2), in a shared folder (mode
# 1777, as /scratch often is) where a second local user, made by the test (second_user.sh),
# planted links to files and folders of root's: each writer must replace a link at its file's
# name (sys::replace_file), never write through it, and refuse a folder that is a link or
# another user's. Checked for:
#   - `report --html PAGE` (a link as the page);
#   - `report --plots DIR` (their folder holding a link as curves.svg; a link as the folder;
#     root's own folder open to others, with their link in it);
#   - `export-checkpoint OUT` (a link as OUT, to an empty folder of root's; an empty folder
#     of theirs as OUT);
#   - `slurm submit` (a link as RESULTS.sbatch; the script is written before sbatch runs,
#     which needs no cluster: tests/slurm/submit.sh covers RESULTS.jobid on a real one).
# Every case is checked and reported, then the script fails if any did. Skipped (exit 77)
# where no second user can be made.
source "$(dirname "$0")/../mpi/lib.sh"
source "$(dirname "$0")/second_user.sh"
attack_scene
VICTIM_DIR="$WORK/victim_dir"  # a folder only root may write
mkdir -m 0700 "$VICTIM_DIR"

failures=0
bad() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# victim_intact NAME: the root-only file and folder are as they were; put back if not, so
# that each case is judged on its own (an older binary gets several wrong).
victim_intact() {
  if [[ $(cat "$VICTIM") != precious ]]; then
    bad "$1: the root-only file was written: $(head -c 200 "$VICTIM")"
    echo precious > "$VICTIM"
  fi
  if [[ -n $(ls -A "$VICTIM_DIR") ]]; then
    bad "$1: files went into the root-only folder: $(ls -A "$VICTIM_DIR")"
    find "$VICTIM_DIR" -mindepth 1 -delete
  fi
}
# expect NAME RC TEXT COMMAND...: COMMAND must exit RC saying TEXT ("" for anything).
expect() {
  local name=$1 want=$2 text=$3 rc=0
  shift 3
  timeout -k 5 60 "$@" > "$WORK/$name.txt" 2>&1 || rc=$?
  if [[ $rc -ne $want ]] || ! grep -qF -- "$text" "$WORK/$name.txt"; then
    bad "$name: expected exit $want and '$text', got $rc: $(tail -3 "$WORK/$name.txt")"
  else
    echo "ok: $name: exit $rc${text:+: $(grep -F -- "$text" "$WORK/$name.txt" | head -1 | cut -c1-200)}"
  fi
  victim_intact "$name"
}
# replaced NAME FILE TEXT: FILE is now a regular file of root's holding TEXT.
replaced() {
  if [[ -L $2 || ! -f $2 ]] || [[ $(stat -c %u "$2") != 0 ]] || ! grep -q -- "$3" "$2"; then
    bad "$1: $2 is not root's new file with '$3': $(ls -l "$2")"
  fi
}

# A finished run of root's with checkpoints, in root's own folder.
"$R" run "$SRC/tests/data/quickstart_branin.toml" --np 1 --results "$WORK/q.h5" --set experiment.num_samples=2 \
  --set stop.max_t=4 --set trainable.seconds_per_step=0.0 --set checkpoint.every=2 > "$WORK/run.txt" 2>&1 ||
  fail "the run failed: $(tail -3 "$WORK/run.txt")"

as_other ln -s "$VICTIM" "$S/page.html"
expect html 0 "" "$R" report "$WORK/q.h5" --html "$S/page.html"
replaced html "$S/page.html" "<html"

as_other bash -c "mkdir '$S/plots' && ln -s '$VICTIM' '$S/plots/curves.svg'"
expect plots_theirs 2 "plots belongs to uid $OTHER_UID" "$R" report "$WORK/q.h5" --plots "$S/plots"
as_other ln -s "$VICTIM_DIR" "$S/linked_plots"
expect plots_link 2 "linked_plots is a symbolic link" "$R" report "$WORK/q.h5" --plots "$S/linked_plots/"
mkdir "$S/open_plots"
chmod 0777 "$S/open_plots"
as_other ln -s "$VICTIM" "$S/open_plots/curves.svg"
expect plots_open 0 "wrote $S/open_plots/curves.svg" "$R" report "$WORK/q.h5" --plots "$S/open_plots"
replaced plots_open "$S/open_plots/curves.svg" "<svg"

as_other ln -s "$VICTIM_DIR" "$S/out"
expect export 2 "out: is a symbolic link" "$R" export-checkpoint "$WORK/q.h5" --trial 1 "$S/out"
as_other mkdir -m 0777 "$S/their_out"
expect export_theirs 2 "their_out belongs to uid $OTHER_UID" "$R" export-checkpoint "$WORK/q.h5" --trial 1 "$S/their_out"
[[ -z $(ls -A "$S/their_out") ]] || bad "export_theirs: files went into their folder: $(ls -A "$S/their_out")"

# slurm submit writes RESULTS.sbatch beside the results file, then runs sbatch (here without
# a cluster: it fails, after the script was written).
as_other ln -s "$VICTIM" "$S/sub.sbatch"
timeout -k 5 60 "$R" slurm submit "$SRC/tests/data/quickstart_branin.toml" --results "$S/sub.h5" --time 5 \
  > "$WORK/submit.txt" 2>&1 || true
victim_intact submit
replaced submit "$S/sub.sbatch" "#SBATCH"

if [[ $failures -gt 0 ]]; then
  echo "$failures checks failed" >&2
  exit 1
fi
echo "ok: no file was written through a link another user planted"
