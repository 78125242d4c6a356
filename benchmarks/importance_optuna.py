#!/usr/bin/python3
"""Optuna's FanovaImportanceEvaluator on the trials bench_importance wrote (CSV: one column
per parameter, all in [0, 1], then loss), timed on one core, beside ranktune's importance
with intervals on the same trials: benchmarks/README.md, "Importance".

    bench_importance time 10000 20 /tmp/trials.csv
    OMP_NUM_THREADS=1 /usr/bin/python3 benchmarks/importance_optuna.py /tmp/trials.csv
"""
import csv
import sys
import time

import optuna
from optuna.distributions import FloatDistribution


def main(path):
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    with open(path) as f:
        rows = list(csv.reader(f))
    names, data = rows[0][:-1], rows[1:]
    dists = {n: FloatDistribution(0.0, 1.0) for n in names}
    study = optuna.create_study(direction="minimize")
    study.add_trials([
        optuna.trial.create_trial(params={n: float(r[i]) for i, n in enumerate(names)}, distributions=dists,
                                  value=float(r[-1]))
        for r in data
    ])
    t0 = time.perf_counter()
    shares = optuna.importance.get_param_importances(
        study, evaluator=optuna.importance.FanovaImportanceEvaluator(seed=0), normalize=True)
    seconds = time.perf_counter() - t0
    top = next(iter(shares))
    print(f"optuna {optuna.__version__} FanovaImportanceEvaluator (64 trees, no intervals): "
          f"{len(data)} trials x {len(names)} parameters {seconds:.3f} s  top: {top} {shares[top]:.3f}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: importance_optuna.py TRIALS.csv (written by bench_importance time N D CSV)")
    main(sys.argv[1])
