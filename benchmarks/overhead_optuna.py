#!/usr/bin/env python3
"""Optuna baseline for benchmarks/overhead.sh: 2,000 trials of time.sleep(0.05) on 8 worker
processes sharing one JournalFileStorage (n_trials split evenly across the processes),
with the random sampler like the ranktune run.

usage: overhead_optuna.py JOURNAL_PATH [--trials 2000] [--workers 8] [--step 0.05]
Prints 'optuna_span SECONDS complete N': the time from starting the worker processes to
the last one exiting (the import of optuna and the study creation are outside it, but
inside the whole command's wall clock that overhead.sh measures).
"""
import argparse
import multiprocessing as mp
import sys
import time
import warnings

import optuna
from optuna.storages import JournalFileStorage, JournalStorage

STUDY = "overhead"
# JournalStorage is "experimental" in 3.1: one warning per process adds nothing here.
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def objective(trial, step):
    x = trial.suggest_float("x1", -5.0, 5.0)
    time.sleep(step)
    return x * x


def work(path, n_trials, step, seed):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name=STUDY, storage=JournalStorage(JournalFileStorage(path)),
                              sampler=optuna.samplers.RandomSampler(seed=seed))
    study.optimize(lambda t: objective(t, step), n_trials=n_trials)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("journal")
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--step", type=float, default=0.05)
    a = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = JournalStorage(JournalFileStorage(a.journal))
    optuna.create_study(study_name=STUDY, storage=storage, direction="minimize")

    shares = [a.trials // a.workers + (i < a.trials % a.workers) for i in range(a.workers)]
    # fork (the Linux default): the children inherit the imported modules, so the span
    # measures the search, not 8 more imports of optuna.
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=work, args=(a.journal, n, a.step, i + 1)) for i, n in enumerate(shares)]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    span = time.perf_counter() - t0

    study = optuna.load_study(study_name=STUDY, storage=storage)
    complete = sum(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)
    failed = [p.exitcode for p in procs if p.exitcode != 0]
    print(f"optuna_span {span:.4f} complete {complete}")
    if failed or complete != a.trials:
        print(f"optuna: {len(failed)} worker(s) failed, {complete}/{a.trials} trials complete",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
