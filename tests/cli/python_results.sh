#!/usr/bin/env bash
# ranktune.results (python/ranktune/results.py) on real files: every DataFrame of a finished
# run agrees with h5py's raw view of the same tables, the best trial is `ranktune report`'s;
# the example of docs/guide/results-file.md runs; a file that a run is writing loads and refresh() only ever sees
# more rows; a foreign HDF5 file, one without /trials, a truncated one, one with a damaged
# checksum (at once, not after HDF5's minutes of retries), a text file, a FIFO (at once, not
# never) and a folder get a ValueError naming the path; without h5py or pandas, `import
# ranktune` works and load() names the package to install; `pip install` of python/ into a
# venv (offline) gives an importable package whose version is the binary's.
source "$(dirname "$0")/../mpi/lib.sh"
R="$RANKTUNE"
export PYTHONPATH="$SRC/python"

# A finished run with retention (checkpoints every 2 iterations, the newest kept: dropped
# rows), and a copy of the old-format fixture with a held-out evaluation (/evaluations).
"$R" run "$SRC/tests/data/quickstart_branin.toml" --np 2 --results "$WORK/q.h5" --set experiment.num_samples=4 \
  --set checkpoint.every=2 --set checkpoint.keep_last=1 --set trainable.seconds_per_step=0.0 > "$WORK/run.txt" 2>&1 \
  || { cat "$WORK/run.txt"; fail "run failed"; }
"$R" report "$WORK/q.h5" --format json --top 0 > "$WORK/report.json" || fail "report failed"
gunzip -c "$SRC/tests/data/old_results/asha_mlp_interrupted.h5.gz" > "$WORK/old.h5"
"$R" eval "$WORK/old.h5" --top 2 --device cpu --latency-s 0.1 > "$WORK/eval.txt" 2>&1 \
  || { cat "$WORK/eval.txt"; fail "eval failed"; }
"$R" report "$WORK/old.h5" --format json --top 0 > "$WORK/old_report.json" || fail "report of old.h5 failed"

"$PY" - "$WORK" <<'PY' || fail "the frames of a finished file disagree with h5py"
import json, sys, h5py, numpy as np
import ranktune.results
work = sys.argv[1]

def text(v):
    return v.decode("utf-8", errors="replace") if isinstance(v, bytes) else v

def same_table(frame, raw, name):
    assert list(frame.columns) == list(raw.dtype.names), (name, list(frame.columns), raw.dtype.names)
    assert len(frame) == len(raw), (name, len(frame), len(raw))
    for c in raw.dtype.names:
        want = raw[c]
        if want.dtype.kind == "S":
            assert frame[c].tolist() == [text(v) for v in want.tolist()], (name, c)
        else:
            np.testing.assert_array_equal(frame[c].to_numpy(), want, err_msg=f"{name}.{c}")

for file, report in (("q.h5", "report.json"), ("old.h5", "old_report.json")):
    path = f"{work}/{file}"
    r = ranktune.results.load(path)
    with h5py.File(path, "r") as f:
        trials, wide = f["trials"][()], f["results"][()]
        # Schema 3 keeps a trial's error and log_tail in /trial_texts (its last row there, ""
        # without one); the frame has them where /trials had them.
        moved = [c for c in ("error", "log_tail") if c not in trials.dtype.names]
        # end_reason is derived from the events where /trials lacks it (a file from before it).
        derived = [] if "end_reason" in trials.dtype.names else ["end_reason"]
        same_table(r.trials.drop(columns=moved + derived), trials, "trials")
        if moved:
            last = {int(x["trial_id"]): x for x in f["trial_texts"][()]}
            for c in moved:
                assert r.trials[c].tolist() == [text(last[i][c]) if i in last else "" for i in r.trials["trial_id"]], c
            assert list(r.trials.columns)[9:12] == ["workers", "error", "log_tail"], list(r.trials.columns)
        assert r.trials["status"].map(type).eq(str).all(), "status is not str"
        same_table(r.results_wide, wide, "results_wide")
        same_table(r.events, f["events"][()], "events")
        same_table(r.workers, f["workers"][()], "workers")
        metrics = [c for c in wide.dtype.names if c not in ("trial_id", "attempt", "iteration", "time")]
        assert r.metrics == metrics and r.metrics[0] == text(f.attrs["metric"]), (r.metrics, metrics)
        # The long form: one row per wide row and metric, and it pivots back to the wide one.
        assert len(r.results) == len(wide) * len(metrics), (len(r.results), len(wide))
        assert list(r.results.columns) == ["trial_id", "attempt", "iteration", "time", "metric", "value"]
        for m in metrics:
            rows = r.results[r.results.metric == m]
            np.testing.assert_array_equal(rows["value"].to_numpy(), wide[m], err_msg=m)
            np.testing.assert_array_equal(rows["iteration"].to_numpy(), wide["iteration"], err_msg=m)
        # Checkpoints: every row but trial 0's (the old files' experiment state).
        ck = f["checkpoints"][()]
        ck = ck[ck["trial_id"] > 0]
        assert len(r.checkpoints) == len(ck), (len(r.checkpoints), len(ck))
        assert r.checkpoints["dropped"].dtype == bool
        if "dropped" in ck.dtype.names:
            assert int(r.checkpoints["dropped"].sum()) == int(ck["dropped"].sum())
        stack = {k: text(v) for k, v in f["stack"].attrs.items()}
        assert r.stack == stack, (r.stack, stack)
        for k in ("experiment", "metric", "mode", "schema_version", "config"):
            assert r.attrs[k] == text(f.attrs[k].item() if hasattr(f.attrs[k], "item") else f.attrs[k]), k
        ev = f.get("evaluations/metrics")
        assert len(r.evaluations) == (0 if ev is None else len(ev)), len(r.evaluations)
        assert list(r.evaluations.columns)[:5] == ["eval_id", "trial_id", "iteration", "metric", "value"]
        lat = f.get("evaluations/latency")
        assert len(r.latency) == (0 if lat is None else len(lat))
        # The split and the trace: absent in these files (from before them), empty with their columns.
        for frame, name in ((r.latency_split, "latency_split"), (r.trace, "trace")):
            d = f.get("evaluations/" + name)
            assert len(frame) == (0 if d is None else len(d)), name
        assert list(r.latency_split.columns)[4:6] == ["pre_p50_ms", "pre_p90_ms"], r.latency_split.columns
        assert list(r.trace.columns)[-3:] == ["pre_ms", "inference_ms", "post_ms"], r.trace.columns
    best = r.best_trial()
    board = json.load(open(f"{work}/{report}"))
    leader = board["trials"][0]
    assert int(best.trial_id) == leader["trial_id"] and best.best == leader["best"], (best, leader)
    # Why each trial ended, as the report says (issue 27 item 9), recorded or derived.
    reasons = {t["trial_id"]: t["end_reason"] or "" for t in board["trials"]}
    assert dict(zip(r.trials["trial_id"].tolist(), r.trials["end_reason"].tolist())) == reasons, (r.trials["end_reason"], reasons)
    # A trial that ended in ERROR is never the best, whatever it reported (issue 27 item 13b).
    errored = r.trials.copy()
    errored.loc[errored["trial_id"] == best.trial_id, "status"] = "ERROR"
    r.trials, kept = errored, r.trials
    assert r.best_trial() is None or int(r.best_trial().trial_id) != int(best.trial_id), "an ERROR trial is the best"
    r.trials = kept
    curve = r.curve(best.trial_id)
    assert len(curve) == int((wide["trial_id"] == best.trial_id).sum()) and r.attrs["metric"] in curve.columns
    r.close()
    print(f"ok: {file}: {len(r.trials)} trials, {len(r.results_wide)} result rows, {len(r.checkpoints)} checkpoints "
          f"({int(r.checkpoints['dropped'].sum())} dropped), {len(r.evaluations)} evaluation rows, "
          f"best trial {int(best.trial_id)}")

q = ranktune.results.load(f"{work}/q.h5")
assert q.checkpoints["dropped"].any() and (~q.checkpoints["dropped"]).any(), "want live and dropped checkpoints"
assert q.evaluations.empty and q.attrs["mode"] == "min" and isinstance(q.attrs["created_unix"], int)
old = ranktune.results.load(f"{work}/old.h5")
assert not old.evaluations.empty and set(old.evaluations["split"]) == {"test"}, old.evaluations
PY
echo "ok: a finished file"

# A multi-objective experiment (real mpirun): /trials' pareto_rank and objective:METRIC are in
# the frame and are no hyperparameters; front() is the rows of pareto_rank 0 as h5py reads
# them, and none of them dominates another; a file of one objective has no front.
"$R" run "$SRC/tests/data/pareto_zdt1.toml" --np 2 --results "$WORK/mo.h5" > "$WORK/mo_run.txt" 2>&1 \
  || { cat "$WORK/mo_run.txt"; fail "the multi-objective run failed"; }
"$PY" - "$WORK/mo.h5" "$WORK/q.h5" <<'PY' || fail "the frames of a multi-objective file are wrong"
import sys, h5py, numpy as np
import ranktune.results
r = ranktune.results.load(sys.argv[1])
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][()]
assert r.objectives == ["f1", "f2"], r.objectives
assert r.params == ["x1", "x2", "x3"], r.params
np.testing.assert_array_equal(r.trials["pareto_rank"].to_numpy(), t["pareto_rank"])
np.testing.assert_array_equal(r.trials["objective:f2"].to_numpy(), t["objective:f2"])
front = r.front()
on = t["pareto_rank"] == 0
assert on.any() and front["trial_id"].tolist() == sorted(t["trial_id"][on].tolist()), (front, t["trial_id"][on])
p = front[["objective:f1", "objective:f2"]].to_numpy()
for a in p:
    for b in p:
        assert not (np.all(b <= a) and np.any(b < a)), (a, b)
one = ranktune.results.load(sys.argv[2])
assert one.objectives == [] and "pareto_rank" not in one.trials.columns
try:
    one.front()
    raise AssertionError("front() of a single-objective file")
except ValueError as e:
    assert "not a multi-objective experiment" in str(e), e
print(f"ok: front() {front['trial_id'].tolist()} of {len(r.trials)} trials")
PY

# The guide's analysis, as printed there (the plot line only where matplotlib is installed).
"$PY" - "$SRC/docs/guide/results-file.md" "$WORK" <<'PY' || fail "the guide's example fails"
import importlib.util, os, re, sys
readme, work = sys.argv[1:3]
section = open(readme).read().split("## Reading results in Python", 1)[1]
code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
assert "ranktune.results.load(" in code and "best_trial()" in code, code
if importlib.util.find_spec("matplotlib") is None:
    code = "\n".join(l for l in code.splitlines() if ".plot(" not in l)
else:
    import matplotlib
    matplotlib.use("Agg")
os.chdir(work)
exec(compile(code, "results-file.md", "exec"), {})  # q.h5 is the finished run's file in WORK
print("ok: the guide's example runs" + ("" if importlib.util.find_spec("matplotlib") is None else ", best.png written"))
PY

# A file that a run is writing: ~30 trials of 10 steps of 20 ms on 2 workers (a few seconds).
"$R" run "$SRC/tests/data/quickstart_branin.toml" --np 2 --results "$WORK/live.h5" --set experiment.num_samples=30 \
  --set stop.max_t=10 > "$WORK/live.txt" 2>&1 &
run=$!
"$PY" - "$WORK/live.h5" "$run" <<'PY' || { kill "$run" 2>/dev/null; fail "live loading failed"; }
import os, sys, time
import ranktune.results
path, run = sys.argv[1], int(sys.argv[2])

def running():
    return os.path.exists(f"/proc/{run}") and open(f"/proc/{run}/stat").read().split()[2] != "Z"

deadline = time.time() + 20
while True:  # the file exists and is set up (its tables created) once the run has started
    try:
        r = ranktune.results.load(path)
        break
    except (FileNotFoundError, ValueError) as error:
        assert time.time() < deadline, f"the live file never loaded: {error}"
        time.sleep(0.05)
seen = [(len(r.trials), len(r.results_wide), len(r.events))]
live_refreshes = 0
while running():
    time.sleep(0.4)
    was_running = running()
    r.refresh()
    now = (len(r.trials), len(r.results_wide), len(r.events))
    assert all(a >= b for a, b in zip(now, seen[-1])), f"rows went down: {seen[-1]} -> {now}"
    seen.append(now)
    live_refreshes += was_running
assert live_refreshes >= 2, f"only {live_refreshes} refreshes while the run wrote: {seen}"
assert seen[-1] > seen[0], f"refresh() saw no new rows: {seen}"
r.refresh()
r.close()
final = ranktune.results.load(path)
assert len(final.trials) == 30 and (final.trials.status == "TERMINATED").all(), final.trials.status.value_counts()
assert len(final.results_wide) == 300 and len(r.results_wide) == 300, (len(final.results_wide), len(r.results_wide))
# /trials rows are rewritten in place as trials end: refresh() sees the new values too.
assert (r.trials.status == "TERMINATED").all() and r.trials.best.equals(final.trials.best), r.trials.status.value_counts()
print(f"ok: live: {live_refreshes} refreshes while the run wrote, (trials, results, events) {seen[0]} -> {seen[-1]}")
PY
wait "$run" || { cat "$WORK/live.txt"; fail "the live run exited $?"; }
echo "ok: a live file"

# Files that are not results files: a ValueError naming the path and what is wrong.
timeout 30 "$PY" - "$WORK" <<'PY' || fail "a bad file was not refused clearly (exit $?; 124: it hung)"
import sys, h5py, numpy as np
import ranktune.results
work = sys.argv[1]
with h5py.File(f"{work}/foreign.h5", "w") as f:
    f.create_dataset("x", data=np.arange(3))
with h5py.File(f"{work}/no_trials.h5", "w") as f:
    f.attrs["schema_version"] = 2
    f.create_dataset("results", data=np.zeros(2, dtype=[("trial_id", "<i8")]))
data = open(f"{work}/q.h5", "rb").read()
open(f"{work}/truncated.h5", "wb").write(data[: len(data) // 2])
open(f"{work}/text.h5", "w").write("not hdf5\n")
# A flipped byte in the superblock (its first 48 bytes, checksummed): HDF5's default under
# SWMR read would retry the checksum for minutes; the loader gives up at once.
damaged = bytearray(data)
damaged[40] ^= 0xFF
open(f"{work}/checksum.h5", "wb").write(damaged)
# A FIFO (a name planted in a shared folder, or a mistake): HDF5 would wait on it for ever
# (issue 27 item 7); refused before HDF5 opens it, as the C++ readers do. And a folder.
import os
os.mkfifo(f"{work}/fifo.h5")
os.mkdir(f"{work}/folder.h5")
cases = {"foreign.h5": "no schema_version attribute", "no_trials.h5": "no /trials table",
         "truncated.h5": "truncated", "text.h5": "not a readable HDF5 file", "checksum.h5": "checksum",
         "fifo.h5": "is a FIFO, not a results file", "folder.h5": "is a folder, not a results file"}
for name, words in cases.items():
    path = f"{work}/{name}"
    try:
        ranktune.results.load(path)
    except ValueError as error:
        assert path in str(error) and words in str(error), (name, str(error))
        print(f"ok: {name}: {error}")
    else:
        raise AssertionError(f"{name} was loaded")
try:
    ranktune.results.load(f"{work}/missing.h5")
    raise AssertionError("a missing file was loaded")
except FileNotFoundError:
    pass
PY

# Without h5py, then without pandas (a meta-path finder that refuses it): the helper imports,
# and load() says what to install.
for hidden in h5py pandas; do
"$PY" - "$WORK/q.h5" "$hidden" <<'PY' || fail "without $hidden"
import sys
hidden = sys.argv[2]
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == hidden or name.startswith(hidden + "."):
            raise ImportError(f"No module named {hidden!r} (hidden by the test)")
sys.meta_path.insert(0, Block())
import ranktune, ranktune.results
assert callable(ranktune.report) and hidden not in sys.modules
try:
    ranktune.results.load(sys.argv[1])
    raise AssertionError(f"load worked without {hidden}")
except ImportError as error:
    message = str(error)
    assert f"apt-get install python3-{hidden}" in message and f"pip install {hidden}" in message, message
    print(f"ok: without {hidden}:", message)
PY
done

# pip: an offline install of a copy of python/ (the build writes beside its sources) into a
# venv that sees Debian's packages, imported from outside the source tree.
cp -r "$SRC/python" "$WORK/python"
rm -rf "$WORK/python/build" "$WORK/python/"*.egg-info
"$PY" -m venv --system-site-packages "$WORK/venv" || fail "cannot make a venv"
"$WORK/venv/bin/pip" install -q --no-build-isolation --no-index "$WORK/python" > "$WORK/pip.txt" 2>&1 \
  || { cat "$WORK/pip.txt"; fail "pip install ./python failed"; }
rm -rf "$WORK/python"
version=$("$R" --version | awk '{print $2}')
(cd / && env -u PYTHONPATH "$WORK/venv/bin/python" - "$WORK/venv" "$version" "$WORK/q.h5") <<'PY' || fail "the installed package"
import sys
import ranktune, ranktune.results
venv, version, path = sys.argv[1:4]
assert ranktune.__file__.startswith(venv), ranktune.__file__
assert ranktune.__version__ == version, (ranktune.__version__, version)
assert len(ranktune.results.load(path).trials) == 4
print("ok: pip installed ranktune", ranktune.__version__, "at", ranktune.__file__)
PY
echo "ok: python results"
