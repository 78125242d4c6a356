"""Checks a results file with h5py (as users read it) against `ranktune report`.

usage: check_results.py RANKTUNE FILE TRIALS ITERATIONS [key=value ...]
  keys: terminated=N error=N (default: all TERMINATED), metric=NAME
Every TERMINATED trial must have ITERATIONS results in /results, and the leaderboard JSON
must list every trial with the same best value and status as the file's /trials table.
"""
import json
import math
import subprocess
import sys

import h5py
import numpy as np


def main():
    ranktune, path, trials, iterations = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    opts = dict(a.split("=", 1) for a in sys.argv[5:])
    want_terminated = int(opts.get("terminated", trials))
    want_error = int(opts.get("error", 0))
    with h5py.File(path, "r", swmr=True) as f:
        # 2: a file from before /trial_texts, resumed (tests/cli/old_state_resume.sh).
        assert f.attrs["schema_version"] in (2, 3), f.attrs["schema_version"]
        t = f["trials"][:]
        # A trial's error and log_tail: its last row of /trial_texts, or in /trials before schema 3.
        texts = ({int(x["trial_id"]): x for x in f["trial_texts"][:]} if "trial_texts" in f
                 else {int(x["trial_id"]): x for x in t})
        r = f["results"][:]
        ev = f["events"][:]
        workers = f["workers"][:]
        metric = f.attrs["metric"].decode()
        experiment = f.attrs["experiment"].decode()
        mode = f.attrs["mode"].decode()
        assert "mpi_library" in f["stack"].attrs and f["stack"].attrs["hdf5"].startswith(b"1.")
    assert len(t) == trials, f"{len(t)} trials in the file, expected {trials}"
    assert sorted(t["trial_id"]) == list(range(1, trials + 1)), "trial ids are not 1..N"
    status = [s.decode() for s in t["status"]]
    assert status.count("TERMINATED") == want_terminated, status
    assert status.count("ERROR") == want_error, status
    assert len(workers) >= 1 and all(d.startswith((b"cpu", b"cuda", b"sim")) for d in workers["device"])
    for row in t:
        tid = row["trial_id"]
        mine = r[(r["trial_id"] == tid) & (r["attempt"] == row["attempt"])]
        if row["status"] == b"TERMINATED":
            assert row["iterations"] == iterations, (tid, row["iterations"])
            assert list(mine["iteration"]) == list(range(1, iterations + 1)), (tid, list(mine["iteration"]))
            best = np.nanmin(mine[metric]) if mode == "min" else np.nanmax(mine[metric])
            assert math.isclose(best, row["best"]), (tid, best, row["best"])
        else:
            assert tid in texts and texts[tid]["error"], f"trial {tid} is {row['status']} without a reason"
    kinds = {k.decode() for k in ev["kind"]}
    assert "start" in kinds, kinds

    out = subprocess.run([ranktune, "report", path, "--format", "json", "--top", "0"],
                         check=True, capture_output=True, text=True).stdout
    board = json.loads(out)
    assert board["experiment"] == experiment, board["experiment"]
    assert len(board["trials"]) == trials, len(board["trials"])
    by_id = {row["trial_id"]: row for row in t}
    bests = []
    for entry in board["trials"]:
        row = by_id[entry["trial_id"]]
        assert entry["status"] == row["status"].decode()
        if entry["best"] is None:
            assert math.isnan(row["best"])
        else:
            assert math.isclose(entry["best"], row["best"]), (entry, row["best"])
            if entry["status"] != "ERROR":
                bests.append(entry["best"])
        # Why it ended (issue 27 item 9): recorded for every ended trial, as the report says.
        if "end_reason" in t.dtype.names:
            recorded = row["end_reason"].decode()
            assert entry["end_reason"] == (recorded or None), (entry, recorded)
            ended = entry["status"] in ("TERMINATED", "ERROR")
            assert bool(recorded) == ended, (entry, recorded)
            assert (recorded == "error") == (entry["status"] == "ERROR"), (entry, recorded)
    assert bests == sorted(bests, reverse=(mode == "max")), "leaderboard is not sorted by the metric"
    # Trials that ended in ERROR rank last (issue 27 item 13b).
    statuses = [entry["status"] for entry in board["trials"]]
    assert statuses == sorted(statuses, key=lambda s: s == "ERROR"), statuses

    csv = subprocess.run([ranktune, "report", path, "--format", "csv", "--top", "0"],
                         check=True, capture_output=True, text=True).stdout.strip().splitlines()
    assert len(csv) == trials + 1, len(csv)
    # The pandas snippet of docs/guide/results-file.md works as written: hyperparameters are plain columns.
    import pandas as pd
    with h5py.File(path, "r", swmr=True) as f:
        trials_df = pd.DataFrame(f["trials"][:])
        results_df = pd.DataFrame(f["results"][:])
    assert len(trials_df) == trials and len(results_df) == len(r)
    assert {"trial_id", "status", "best"} <= set(trials_df.columns)
    assert metric in results_df.columns

    print(f"ok: {path}: {trials} trials, {status.count('TERMINATED')} terminated, {len(r)} results")


if __name__ == "__main__":
    main()
