#!/usr/bin/env bash
# Who may control a run (issue 13, items 5-7): the control file RESULTS.control in a shared
# folder (mode 1777, as /scratch often is) with a second local user, against real runs under
# mpirun. Every case is checked and reported, then the script fails if any did, so a run on
# an older binary shows each one that it gets wrong.
#
# Before a run starts (each run must refuse at once, exit 2, without making the results file):
#   a link planted as the control file, a control file of the other user, a FIFO.
# The total: ten adds of 100000, then one more is refused.
# During a run:
#   rank 0 made the file (mode 0600, the job's user); the other user's `ctl stop` is refused
#   (exit 2, cannot write it) and not carried out; lines naming another uid, or none, are
#   refused; counts beyond 100000 are refused by ctl and by rank 0; keys outside the search
#   space (`command`, `trainable.command`) are refused; a 10 MB line, JSON nested 30,000 deep
#   and 20,000 `add` lines do not stop rank 0; the file swapped for a link is not written
#   through by ctl nor read by rank 0; swapped for a FIFO, rank 0 goes on writing results
#   and warns; removed, rank 0 makes it again and ctl works.
# Skipped (exit 77) where no second user can be made.
source "$(dirname "$0")/../mpi/lib.sh"
source "$(dirname "$0")/second_user.sh"
attack_scene

failures=0
bad() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
victim_intact() { [[ $(cat "$VICTIM") == precious ]] || bad "$1: the root-only file was written: $(head -c 300 "$VICTIM")"; }

# ---------------------------------------------------------------- before the run starts
# refused_at_start NAME TEXT [self]: a short run on $S/NAME.h5 must exit 2 within 20 s, saying
# TEXT; under mpirun (rank 0 refuses), or self-launched with "self" (refused before mpirun).
refused_at_start() {
  local name=$1 text=$2 rc=0 launch=(mpirun -np 2 --bind-to none "$R" run)
  [[ ${3:-} == self ]] && launch=("$R" run --np 1)
  timeout -k 5 20 "${launch[@]}" "$SRC/tests/data/quickstart_branin.toml" --results "$S/$name.h5" \
    --set experiment.num_samples=1 --set stop.max_t=3 > "$WORK/$name.txt" 2>&1 || rc=$?
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    bad "$name: the run was still going after 20 s (frozen?)"
    # An old rank 0 blocks in open(2) of the FIFO until a writer opens it.
    [[ -p "$S/$name.h5.control" ]] && timeout 2 bash -c "exec 3> '$S/$name.h5.control'" || true
  elif [[ $rc -ne 2 ]] || ! grep -q -- "$text" "$WORK/$name.txt"; then
    bad "$name: expected exit 2 and '$text', got $rc: $(tail -3 "$WORK/$name.txt")"
  fi
  [[ ! -e "$S/$name.h5" ]] || bad "$name: the results file was made: the run went ahead"
}
as_other ln -s "$VICTIM" "$S/link.h5.control"
refused_at_start link "is a symbolic link"
as_other ln -s "$VICTIM" "$S/self.h5.control"
refused_at_start self "is a symbolic link" self
as_other bash -c "umask 0; touch '$S/foreign.h5.control'"
refused_at_start foreign "belongs to uid $OTHER_UID"
as_other mkfifo "$S/fifo.h5.control"
refused_at_start fifo "is a FIFO, not a regular file"
victim_intact "before the run"

# ---------------------------------------------------------------- the total control may add
# Ten requests of 100000 fill what control may add to one experiment; one more is refused.
# The run then holds a million trials to come: SIGTERM to rank 0 ends it (exit 4).
B="$S/bound.h5"
mpirun -np 2 --bind-to none "$R" run "$SRC/tests/data/quickstart_branin.toml" --results "$B" \
  --set experiment.num_samples=1 --set trainable.seconds_per_step=0.2 > "$WORK/bound.txt" 2>&1 &
launcher=$!
bound_rank0=$(wait_for_rank0 "$B" "$launcher")
for i in $(seq 10); do echo "{\"id\": \"b$i\", \"op\": \"add\", \"count\": 100000, \"uid\": $(id -u)}"; done >> "$B.control"
rc=0
"$R" ctl --wait 20 add "$B" --count 1 > "$WORK/ctl.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "refused: would bring the trials added by ranktune ctl to 1000001, beyond the 1000000" "$WORK/ctl.txt" ||
  bad "an add past 1000000 trials added: expected exit 2 and the bound, got $rc: $(cat "$WORK/ctl.txt")"
kill -TERM "$bound_rank0"  # rank 0 stops the run gracefully (mpirun signalled would exit 1)
rc=0
wait "$launcher" || rc=$?
[[ $rc -eq 4 ]] || bad "the bound run: SIGTERM gave exit $rc, not 4: $(tail -3 "$WORK/bound.txt")"

# ---------------------------------------------------------------- during a run
E="$S/exp.h5"
C="$E.control"
mpirun -np 3 --bind-to none "$R" run "$SRC/tests/data/quickstart_branin.toml" --results "$E" \
  --set experiment.num_samples=4 --set trainable.seconds_per_step=0.3 --set trainable.noise=0.0 \
  > "$WORK/run.txt" 2>&1 &
launcher=$!
rank0=$(wait_for_rank0 "$E" "$launcher")

mode=$(stat -c '%a %u' "$C" 2> /dev/null || echo absent)
[[ $mode == "600 $(id -u)" ]] || bad "the control file at start: '$mode', not mode 600 of uid $(id -u)"

# ctl EXPECTED_RC TEXT [as_other] ARGS...: runs ranktune ctl, checks its code and output.
ctl() {
  local want=$1 text=$2 rc=0
  shift 2
  local runner=()
  if [[ $1 == as_other ]]; then runner=(as_other); shift; fi
  "${runner[@]}" "$R" ctl "$@" > "$WORK/ctl.txt" 2>&1 || rc=$?
  [[ $rc -eq $want ]] && grep -q -- "$text" "$WORK/ctl.txt" ||
    bad "ctl $*: expected exit $want and '$text', got $rc: $(cat "$WORK/ctl.txt")"
}
# The other user cannot write the file: refused at once, and trial 1 runs on (checked below).
ctl 2 "cannot write $C (Permission denied): only the user who runs the experiment may control it" \
  as_other --wait 5 stop "$E" 1
ctl 2 "cannot write" as_other --wait 5 add "$E" --count 3
# Counts beyond what one request may add: refused by ctl before sending.
ctl 2 "one request may add at most 100000" --wait 5 add "$E" --count 1000000000000

# Lines written into the file directly (by its owner here: the uid is what rank 0 checks).
{
  echo "{\"id\": \"foreign\", \"op\": \"stop\", \"trial\": 2, \"uid\": $OTHER_UID}"
  echo '{"id": "nouid", "op": "stop", "trial": 2}'
  echo "{\"id\": \"huge\", \"op\": \"add\", \"count\": 1000000000000, \"uid\": $(id -u)}"
  echo "{\"id\": \"cmd\", \"op\": \"set\", \"trial\": 3, \"config\": {\"command\": \"touch $WORK/pwned\"}, \"uid\": $(id -u)}"
  echo "{\"id\": \"tcmd\", \"op\": \"set\", \"trial\": 3, \"config\": {\"trainable.command\": \"touch $WORK/pwned\"}, \"uid\": $(id -u)}"
} >> "$C"
# Hostile lines that must not stop rank 0: 10 MB without a newline, JSON nested 30,000 deep,
# 20,000 adds (each refused: x1 = 99 is outside the space, so the run still ends).
"$PY" - "$C" "$(id -u)" <<'PY'
import sys
uid = sys.argv[2]
with open(sys.argv[1], "a") as f:
    f.write("x" * (10 << 20) + "\n")
    f.write("[" * 30000 + "]" * 30000 + "\n")
    f.write(f'{{"id": "deep", "op": "add", "config": {{"x1": {"[" * 30000}{"]" * 30000}, "x2": 1}}, "uid": {uid}}}\n')
    for i in range(20000):
        f.write(f'{{"id": "flood{i}", "op": "add", "config": {{"x1": 99, "x2": 1}}, "uid": {uid}}}\n')
PY
# Answered after all of them (rank 0 reads 1 MiB a look, four looks a second): rank 0 is alive.
ctl 2 "refused: no trial 99" --wait 30 stop "$E" 99

# The file swapped for a link to the root-only file: ctl does not write through it.
ln -s "$VICTIM" "$S/planted.link"
mv -fT "$S/planted.link" "$C"
ctl 2 "is a symbolic link" --wait 5 stop "$E" 1
victim_intact "ctl through a link"
sleep 0.6  # rank 0 looks four times a second: it sees the link

# Swapped for a FIFO: rank 0 must go on writing results (an old one blocked in open(2)).
mkfifo "$S/planted.fifo"
ln "$S/planted.fifo" "$WORK/keep.fifo"  # to unblock an old rank 0 at the end
mv -fT "$S/planted.fifo" "$C"
sleep 0.5
rows() {
  "$PY" - "$E" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r", libver="latest", swmr=True) as f:
    print(len(f["results"]))
PY
}
before=$(rows || echo 0)
sleep 1.5
after=$(rows || echo 0)
[[ $after -gt $before ]] || bad "with a FIFO as the control file, rank 0 wrote no results in 1.5 s ($before, then $after rows)"
ctl 2 "is a FIFO" --wait 5 stop "$E" 1

# Removed: rank 0 makes it again, and the owner's ctl works; rank 0 survived all of the above.
rm -f "$C"
sleep 0.6
ctl 0 "applied: added trial" --wait 20 add "$E" x1=2.5 x2=3
mode=$(stat -c '%a %u' "$C" 2> /dev/null || echo absent)
[[ $mode == "600 $(id -u)" ]] || bad "the control file made again: '$mode', not mode 600 of uid $(id -u)"

for _ in $(seq 600); do kill -0 "$launcher" 2> /dev/null || break; sleep 0.1; done
if kill -0 "$launcher" 2> /dev/null; then
  bad "the run did not end within 60 s of the last request"
  timeout 2 bash -c "exec 3> '$WORK/keep.fifo'" || true
  kill -TERM "$launcher" 2> /dev/null || true
  sleep 5
  kill -KILL "$launcher" "$rank0" 2> /dev/null || true
fi
rc=0
wait "$launcher" || rc=$?
[[ $rc -eq 0 ]] || bad "the run exited $rc: $(tail -5 "$WORK/run.txt")"
victim_intact "after the run"
[[ ! -e $WORK/pwned ]] || bad "an injected command ran"

"$PY" - "$E" "$OTHER_UID" <<'PY' || bad "the results file does not show what was asked and refused"
import sys, h5py
with h5py.File(sys.argv[1], "r", libver="latest", swmr=True) as f:
    trials, ev = f["trials"][:], f["events"][:]
control = {}
for e in ev:
    if e["kind"] == b"control":
        tag, _, answer = e["message"].decode().partition(" ")
        control.setdefault(tag, []).append(answer)
warnings = [e["message"].decode() for e in ev if e["kind"] == b"warning"]
problems = []
def expect(tag, text):
    if not any(text in a for a in control.get(tag, [])):
        problems.append(f"{tag}: expected '{text}', got '{control.get(tag)}'")
expect("#foreign", f"refused: sent by uid {sys.argv[2]}")
expect("#nouid", 'refused: no "uid"')
expect("#huge", 'refused: "count" 1000000000000 is more than 100000')
expect("#cmd", "refused: 'command' is not a parameter")
expect("#tcmd", "refused: 'trainable.command' is not a parameter")
expect("#deep", "refused: ")
flood = [t for t in control if t.startswith("#flood")]
if len(flood) != 20000 or any(a != ["refused: 'x1' = 99 is outside its domain (in [-5, 10]); pass --force to use it anyway"] for t in flood for a in [control[t]]):
    problems.append(f"{len(flood)} of the 20000 flood lines answered, or some applied")
if not any("a line longer than 64 KiB" in a for a in control.get("#?", [])):
    problems.append("the 10 MB line was not answered")
for text in ("is a symbolic link", "is a FIFO"):
    if not any(text in w for w in warnings):
        problems.append(f"no warning event says the control file {text}: {warnings}")
# 4 from the searcher and the one added: trials 1 and 2 ran to the end (the other user's
# stop and the foreign line were not carried out), nothing else was added.
status = [s.decode() for s in trials["status"]]
if len(trials) != 5 or status != ["TERMINATED"] * 5:
    problems.append(f"{len(trials)} trials, {status[:8]}")
elif list(trials["iterations"][:2]) != [20, 20]:
    problems.append(f"trials 1 and 2 ran {list(trials['iterations'][:2])} iterations, not 20")
if problems:
    sys.exit("\n".join(problems))
print(f"ok: {sum(map(len, control.values()))} control answers, {len(warnings)} warnings, 5 trials")
PY

if [[ $failures -gt 0 ]]; then
  echo "$failures checks failed" >&2
  exit 1
fi
echo "ok: the control file is the job user's alone"
