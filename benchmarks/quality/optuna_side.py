#!/usr/bin/python3
"""Optuna's side of the search-quality suite (suite.py runs it beside bench_quality).

The same experiment as bench_quality.cc, driven through Optuna's ask-and-tell interface:
the synthetic trainable's objective (bit for bit: the same functions, learning curve and
seeded noise stream, keyed by seed, trial number + 1, attempt 0 and step), max_t 27, a budget
in steps that no run exceeds, and W asynchronous workers in virtual time (1 s steps, lognormal
jitter 0.1). A worker asks for a trial when it is free and reports each step with
trial.report(); the pruner decides after each step (trial.should_prune()), as Optuna's
documentation prescribes. A step is only started while the budget has steps left; trials
cut by the budget stay unfinished, as ranktune's do.

What is judged is what a user gets: study.best_trial (Optuna recommends the best COMPLETE
trial), by its noise-free regret. One JSON line per seed, as bench_quality prints.

Usage: optuna_side.py FUNCTION BUDGET WORKERS SEED_FIRST SEED_LAST SAMPLER PRUNER
  SAMPLER: tpe | random | cmaes;  PRUNER: none | sha | hyperband
"""
import heapq
import json
import math
import sys

import numpy as np
import optuna

MAX_T = 27
NOISE = 0.01
CURVE_POINTS = 20
M64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def open_unit(bits):
    return ((bits >> 11) + 0.5) * 2.0**-53


def seeded_normal(seed, trial, attempt, t, stream=0):
    """train/synthetic.cc's seeded_normal, bit for bit (stream i > 0: objective i + 1's noise)."""
    h = splitmix64(seed & M64)
    h = splitmix64(h ^ (trial & M64))
    h = splitmix64(h ^ (attempt & M64))
    h = splitmix64(h ^ (t & M64))
    if stream > 0:
        h = splitmix64(h ^ (stream & M64))
    u1, u2 = open_unit(splitmix64(h)), open_unit(splitmix64((h + 1) & M64))
    return math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)


def branin(x):
    pi = math.pi
    b, c, r, s, t = 5.1 / (4 * pi * pi), 5 / pi, 6, 10, 1 / (8 * pi)
    u = x[1] - b * x[0] * x[0] + c * x[0] - r
    return u * u + s * (1 - t) * math.cos(x[0]) + s


H_ALPHA = [1.0, 1.2, 3.0, 3.2]
H_A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
H_P = [[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
       [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]]


def hartmann6(x):
    f = 0.0
    for i in range(4):
        e = 0.0
        for j in range(6):
            d = x[j] - H_P[i][j] * 1e-4
            e += H_A[i][j] * d * d
        f -= H_ALPHA[i] * math.exp(-e)
    return f


def rosenbrock(x):
    return sum(100 * (x[i + 1] - x[i] * x[i]) ** 2 + (1 - x[i]) ** 2 for i in range(len(x) - 1))


PROBLEMS = {
    "branin": (branin, 0.397887357729739, [(-5.0, 10.0), (0.0, 15.0)]),
    "hartmann6": (hartmann6, -3.32236801141551, [(0.0, 1.0)] * 6),
    "rosenbrock4": (rosenbrock, 0.0, [(-2.048, 2.048)] * 4),
}


def run_seed(name, budget, workers, seed, sampler_name, pruner_name):
    f, optimum, bounds = PROBLEMS[name]
    names = [f"x{i + 1}" for i in range(len(bounds))]
    if sampler_name == "tpe":
        sampler = optuna.samplers.TPESampler(seed=seed)
    elif sampler_name == "random":
        sampler = optuna.samplers.RandomSampler(seed=seed)
    elif sampler_name == "cmaes":
        sampler = optuna.samplers.CmaEsSampler(seed=seed)
    else:
        raise SystemExit(f"unknown sampler {sampler_name}")
    if pruner_name == "none":
        pruner = optuna.pruners.NopPruner()
    elif pruner_name == "sha":
        pruner = optuna.pruners.SuccessiveHalvingPruner()  # defaults: min_resource "auto", rf 4
    elif pruner_name == "hyperband":
        # Defaults but max_resource, which "auto" would learn from the first complete trial.
        pruner = optuna.pruners.HyperbandPruner(min_resource=1, max_resource=MAX_T)
    else:
        raise SystemExit(f"unknown pruner {pruner_name}")
    study = optuna.create_study(direction="minimize", sampler=sampler, pruner=pruner)
    rng = np.random.default_rng(seed)

    started = 0  # steps granted (started), never more than the budget
    done = 0
    curve = []
    next_point = 1
    running = {}  # worker -> (trial, x, value, t)
    events = []  # (time, order, worker)
    order = 0

    def gap_of(x):
        return max(0.0, f(x) - optimum)

    def recommended_regret():
        complete = [t for t in study.get_trials(deepcopy=False) if t.state == optuna.trial.TrialState.COMPLETE]
        if not complete:
            return float("nan")
        best = min(complete, key=lambda t: (t.value, t.number))
        return gap_of([best.params[n] for n in names])

    def start_step(w, now):
        nonlocal started, order
        started += 1
        heapq.heappush(events, (now + math.exp(0.1 * rng.standard_normal()), order, w))
        order += 1

    def offer(w, now):
        if started >= budget:
            return
        trial = study.ask()
        x = [trial.suggest_float(n, lo, hi) for n, (lo, hi) in zip(names, bounds)]
        value = f(x)
        running[w] = [trial, x, value, 0]
        start_step(w, now)

    for w in range(workers):
        offer(w, 0.0)
    while events:
        now, _, w = heapq.heappop(events)
        trial, x, value, t = running[w]
        t += 1
        running[w][3] = t
        done += 1
        gap = max(0.0, value - optimum)
        loss = value + (1 + gap) / math.sqrt(t) + NOISE * seeded_normal(seed, trial.number + 1, 0, t)
        trial.report(loss, t)
        finished = False
        if t >= MAX_T:
            study.tell(trial, loss)
            finished = True
        elif trial.should_prune():
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            finished = True
        while next_point <= CURVE_POINTS and done >= budget * next_point // CURVE_POINTS:
            curve.append([budget * next_point // CURVE_POINTS, recommended_regret()])
            next_point += 1
        if finished:
            del running[w]
            offer(w, now)
        elif started < budget:
            start_step(w, now)
        else:
            del running[w]  # cut by the budget: left unfinished
    regret = recommended_regret()
    nan = lambda v: None if v != v else v
    return {"seed": seed, "regret": nan(regret), "trials": len(study.trials), "steps": done,
            "curve": [[s, nan(r)] for s, r in curve]}


def main():
    if len(sys.argv) != 8:
        raise SystemExit(__doc__)
    name, budget, workers, first, last, sampler, pruner = sys.argv[1:]
    if name not in PROBLEMS:
        raise SystemExit(f"unknown function {name}: {', '.join(PROBLEMS)}")
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    import warnings
    warnings.simplefilter("ignore")
    for seed in range(int(first), int(last) + 1):
        print(json.dumps(run_seed(name, int(budget), int(workers), seed, sampler, pruner)), flush=True)


if __name__ == "__main__":
    main()
