#!/usr/bin/env bash
# Trial logs in a shared folder (issue 13, item 4): a second local user, made by the test
# (second_user.sh), plants names in a world-writable results folder (mode 1777, as /scratch
# often is) before root's run, which must then exit 2 before any trial starts, saying what is
# wrong, without writing the root-only file nor making the results file:
#   - a logs folder of theirs holding a link to the root-only file as trial 1's log;
#   - a link as the logs folder, to a folder of theirs;
#   - (root's own) logs folder that others may write.
# A run in the same folder with nothing planted makes its logs folder writable by its user
# only, and writes its logs. Every case is checked and reported before the script fails.
# Skipped (exit 77) where no second user can be made.
source "$(dirname "$0")/../mpi/lib.sh"
source "$(dirname "$0")/second_user.sh"
second_user_or_skip
S="$WORK/scratch"
shared_folder "$S"
VICTIM="$WORK/victim"  # a file only root may write (and read)
echo precious > "$VICTIM"
chmod 0600 "$VICTIM"
cat > "$WORK/talker.sh" <<'SH'
#!/usr/bin/env bash
echo "trial $RANKTUNE_TRIAL_ID talks"
echo '{"loss": 1}' >&3
SH
chmod 0755 "$WORK/talker.sh"
command_config "$WORK/exp.toml" trial_log_links 2 1 ./talker.sh

failures=0
bad() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# run NAME: a run on $S/NAME.h5 under mpirun (rank 0 checks the logs folder); sets rc.
run() {
  rc=0
  timeout -k 5 60 mpirun -np 2 --bind-to none "$RANKTUNE" run "$WORK/exp.toml" --results "$S/$1.h5" \
    > "$WORK/$1.txt" 2>&1 || rc=$?
}
# refused NAME TEXT: the run must exit 2 saying TEXT, and never start.
refused() {
  run "$1"
  if [[ $rc -ne 2 ]] || ! grep -qF -- "$2" "$WORK/$1.txt"; then
    bad "$1: expected exit 2 and '$2', got $rc: $(tail -3 "$WORK/$1.txt")"
  else
    echo "ok: $1 refused: $(grep -F -- "$2" "$WORK/$1.txt" | head -1 | cut -c1-200)"
  fi
  [[ ! -e "$S/$1.h5" ]] || bad "$1: the results file was made: the run went ahead"
  [[ $(cat "$VICTIM") == precious ]] || bad "$1: the root-only file was written: $(head -c 300 "$VICTIM")"
}

# Their folder, with their link as trial 1's log: the run must not write through it.
as_other bash -c "mkdir '$S/planted.h5.logs' && ln -s '$VICTIM' '$S/planted.h5.logs/trial_1_attempt_0.log'" ||
  fail "the second user cannot plant names in $S"
refused planted "planted.h5.logs belongs to uid $OTHER_UID"
# A link as the logs folder, to a folder of theirs that anyone may write.
as_other bash -c "mkdir -m 0777 '$S/theirs' && ln -s '$S/theirs' '$S/linked.h5.logs'"
refused linked "linked.h5.logs is a symbolic link"
[[ -z $(ls -A "$S/theirs") ]] || bad "logs went into the other user's folder: $(ls "$S/theirs")"
# Root's own folder, but others may write it (they could swap a log for a link).
mkdir -m 0777 "$S/open.h5.logs"
chmod 0777 "$S/open.h5.logs"  # past the umask
refused open "open.h5.logs is writable by other users"

# Nothing planted: the run makes the folder itself, writable by its user only, and logs.
run clean
if [[ $rc -ne 0 ]]; then
  bad "clean: the run in the shared folder exited $rc: $(tail -3 "$WORK/clean.txt")"
else
  read -r mode owner < <(stat -c '%a %u' "$S/clean.h5.logs")
  [[ $owner == "$(id -u)" && $((8#$mode & 8#022)) -eq 0 ]] ||
    bad "clean: the logs folder has mode $mode and uid $owner: not this user's alone to write"
  grep -q "trial 1 talks" "$S/clean.h5.logs/trial_1_attempt_0.log" 2> /dev/null ||
    bad "clean: trial 1's log lacks its output"
  # What it made, the other user cannot change: a link planted in it now fails.
  as_other ln -s "$VICTIM" "$S/clean.h5.logs/trial_9_attempt_0.log" 2> /dev/null &&
    bad "clean: the other user could plant a link in the logs folder"
  echo "ok: clean: the run made its logs folder (mode $mode) and wrote its logs"
fi

if [[ $failures -gt 0 ]]; then
  echo "$failures checks failed" >&2
  exit 1
fi
echo "ok: no trial log was written where another user pointed"
