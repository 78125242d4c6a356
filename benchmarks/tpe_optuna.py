#!/usr/bin/python3
"""Cost of one Optuna TPESampler ask against the number of observations, on the problem of
bench_tpe.cc (6 uniform floats in [-5, 5] and one 4-way categorical).

Usage: /usr/bin/python3 benchmarks/tpe_optuna.py [N ...]   (default 100 1000 10000)
Prints "observations reps median_ms", like bench_tpe."""
import random
import statistics
import sys
import time

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution

optuna.logging.set_verbosity(optuna.logging.WARNING)

DIST = {f"x{i}": FloatDistribution(-5.0, 5.0) for i in range(6)}
DIST["c"] = CategoricalDistribution(["a", "b", "c", "d"])


def objective(p):
    return (0.0 if p["c"] == "b" else 1.0) + sum(p[f"x{i}"] ** 2 for i in range(6))


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [100, 1000, 10000]
    print("observations reps median_ms")
    rng = random.Random(1)
    for n in sizes:
        study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=1), direction="minimize")
        # Completed trials are added directly: filling through ask/tell would itself cost
        # O(n^2) model fits.
        trials = []
        for _ in range(n):
            p = {f"x{i}": rng.uniform(-5.0, 5.0) for i in range(6)}
            p["c"] = rng.choice(["a", "b", "c", "d"])
            trials.append(optuna.trial.create_trial(params=p, distributions=DIST, value=objective(p)))
        study.add_trials(trials)
        reps = 5 if n >= 10000 else 20 if n >= 1000 else 50
        ms = []
        for _ in range(reps):
            t0 = time.perf_counter()
            study.ask(DIST)  # fixed distributions: every parameter is sampled in the ask
            ms.append((time.perf_counter() - t0) * 1e3)
        print(f"{n} {reps} {statistics.median(ms):.3f}", flush=True)


if __name__ == "__main__":
    main()
