#!/usr/bin/env python3
"""Where the time of a ranktune run went, from its results file alone.

usage: analyze_trials.py RESULTS.h5 [--step SECONDS] [--span-only | --results-rate]

Times in /trials are seconds since the driver started the experiment (driver clock). For
each worker, the trials it ran are sorted by start time; the worker's span then splits
exactly into
  head  = first start                       (driver start -> first trial started)
  busy  = sum of (end - start) per trial    (Start sent -> final Result handled)
  gaps  = next start - previous end         (driver-side idle time of that worker)
  tail  = experiment span - last end
and busy = trials x (step + per-trial overhead). Everything a worker does between the
driver sending Start and the driver handling its last Result (message latency, the worker's
polling naps, trainable setup, sleep overshoot) is inside `busy`, so the per-trial overhead
is (busy / trials - step).
"""
import argparse
import sys

import h5py
import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--step", type=float, default=0.05, help="seconds_per_step x max_t of one trial")
    ap.add_argument("--span-only", action="store_true", help="print the experiment span only")
    ap.add_argument("--results-rate", action="store_true",
                    help="print 'rows span rows_per_s' of /results only")
    a = ap.parse_args()

    with h5py.File(a.path, "r") as f:
        trials = f["trials"][:]
        events = f["events"][:]
        n_results = f["results"].shape[0]
    trials = trials[trials["trial_id"] > 0]
    start, end = trials["start_time"], trials["end_time"]
    span = float(np.nanmax(end))
    if a.span_only:
        print(f"{span:.4f}")
        return
    if a.results_rate:
        print(f"{n_results} {span:.4f} {n_results / span:.0f}")
        return

    status = np.char.decode(trials["status"])
    # /trials keeps `workers` only while a trial runs, so the rank that ran a finished
    # trial comes from its last 'start' event.
    ran_on = {}
    for ev in events[np.char.decode(events["kind"]) == "start"]:
        ran_on[int(ev["trial_id"])] = str(int(ev["worker"]))
    workers = np.array([ran_on.get(int(t), "?") for t in trials["trial_id"]])
    print(f"{a.path}: {len(trials)} trials ({np.sum(status == 'TERMINATED')} terminated), "
          f"{n_results} results, span {span:.3f} s")
    dur = end - start
    over = dur - a.step
    print(f"per-trial time end-start: median {np.median(dur)*1e3:.2f} ms, mean {np.mean(dur)*1e3:.2f} ms, "
          f"p99 {np.percentile(dur, 99)*1e3:.2f} ms (step {a.step*1e3:.1f} ms: "
          f"overhead mean {np.mean(over)*1e3:.2f} ms/trial)")

    heads, busys, gaps, tails, counts = [], [], [], [], []
    all_gaps = []
    for w in sorted(set(workers), key=lambda s: int(s) if s.isdigit() else -1):
        mine = np.argsort(start[workers == w])
        s, e = start[workers == w][mine], end[workers == w][mine]
        g = s[1:] - e[:-1]
        all_gaps.extend(g.tolist())
        heads.append(s[0])
        busys.append(np.sum(e - s))
        gaps.append(np.sum(g))
        tails.append(span - e[-1])
        counts.append(len(s))
    all_gaps = np.array(all_gaps)
    print(f"workers: {len(counts)}, trials per worker {min(counts)}..{max(counts)}")
    print(f"gap between one trial's end and the next start on the same worker: median "
          f"{np.median(all_gaps)*1e3:.3f} ms, mean {np.mean(all_gaps)*1e3:.3f} ms, "
          f"max {np.max(all_gaps)*1e3:.3f} ms")
    ideal = len(trials) * a.step / len(counts)
    m = lambda v: float(np.mean(v))
    print(f"span split, mean over workers (s): head {m(heads):.3f} + busy {m(busys):.3f} "
          f"+ gaps {m(gaps):.3f} + tail {m(tails):.3f} = {m(heads)+m(busys)+m(gaps)+m(tails):.3f}")
    print(f"  of which ideal work {ideal:.3f} s; per-trial overhead inside busy: "
          f"{m(busys) - ideal:.3f} s = {(m(busys) - ideal) / (len(trials) / len(counts)) * 1e3:.2f} ms x "
          f"{len(trials) / len(counts):.0f} trials per worker")


if __name__ == "__main__":
    sys.exit(main())
