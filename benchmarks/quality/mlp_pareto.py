#!/usr/bin/python3
"""Accuracy against model size on Fashion-MNIST: MOTPE + MO-ASHA against random + FIFO at equal
wall time (issue 30).

Both pairs run configs/fashion_mlp_pareto.toml (the mlp; objectives val_accuracy max and
params_m min, constraint params_m <= 0.5) on the same data subset, seed and number of workers,
for the same wall-clock budget ([stop] time_budget_s, num_samples raised so that the budget is
what ends each run). The score is what a user gets: the front the run reports (/trials rows with
pareto_rank 0, as ranktune ranked them) by the hypervolume of its (val_accuracy, params_m)
points, feasible ones only, against the fixed reference point (accuracy 0.5, 0.5 M parameters:
the constraint's bound). Validation accuracy, as the search saw it: the held-out front is
`ranktune eval --front`'s to measure.

Usage: mlp_pareto.py --build BUILD_DIR [--seeds N] [--budget S] [--out FILE]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

import h5py

from mo_optuna_side import hypervolume  # beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.normpath(os.path.join(HERE, "..", "..", "configs", "fashion_mlp_pareto.toml"))
REFERENCE = (0.5, 0.5)  # val_accuracy (max) at least, params_m (min) at most
PAIRS = [("tpe", "asha"), ("random", "fifo")]


def front_hypervolume(points):
    """Hypervolume of (accuracy, params_m) points, accuracy maximized and size minimized: the
    multi-objective suite's exact 2-D hypervolume (mo_optuna_side.py, checked against the C++)
    on (-accuracy, params_m)."""
    return hypervolume([(-acc, size) for acc, size in points], (-REFERENCE[0], REFERENCE[1]))


def run(build, searcher, scheduler, seed, budget, work):
    out = os.path.join(work, f"{searcher}_{scheduler}_{seed}.h5")
    sets = [f"search.algorithm=\"{searcher}\"", f"scheduler.kind=\"{scheduler}\"", f"experiment.seed={seed}",
            "experiment.num_samples=10000", f"stop.time_budget_s={budget}", "checkpoint.at_end=false",
            "trainable.train_samples=10000"]
    cmd = [os.path.join(build, "apps", "ranktune"), "run", CONFIG, "--np", "3", "--results", out]
    for s in sets:
        cmd += ["--set", s]
    if scheduler == "fifo":
        # FIFO takes no options: drop the config's ASHA keys.
        text = open(CONFIG).read().replace("grace_period = 1\n", "").replace("reduction_factor = 3\n", "")
        cfg = os.path.join(work, "fifo.toml")
        open(cfg, "w").write(text)
        cmd[cmd.index(CONFIG)] = cfg
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with h5py.File(out, "r") as f:
        t = f["trials"][:]
    front = [(float(r["objective:val_accuracy"]), float(r["objective:params_m"])) for r in t if r["pareto_rank"] == 0]
    return front_hypervolume(front), len(t), len(front), max((p[0] for p in front if p[1] <= 0.5), default=float("nan"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=60)
    ap.add_argument("--out")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for searcher, scheduler in PAIRS:
            results = [run(a.build, searcher, scheduler, s, a.budget, work) for s in range(1, a.seeds + 1)]
            hv = [r[0] for r in results]
            rows.append(f"| {searcher}+{scheduler} | {statistics.median(hv):.4f} | {min(hv):.4f} - {max(hv):.4f} | "
                        f"{statistics.median(r[1] for r in results):.0f} | {statistics.median(r[2] for r in results):.0f} | "
                        f"{' '.join(f'{h:.4f}' for h in hv)} |")
    text = (f"{a.seeds} seeds x {a.budget:g} s per pair, 2 workers, reference (accuracy {REFERENCE[0]}, "
            f"{REFERENCE[1]} M parameters)\n\n| pair | median hypervolume | min - max | trials | front | per seed |\n"
            "|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    print(text)
    if a.out:
        open(a.out, "w").write(text)


if __name__ == "__main__":
    sys.exit(main())
