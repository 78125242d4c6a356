#!/usr/bin/python3
"""Optuna's side of the multi-objective search-quality suite (mo_suite.py runs it beside
bench_mo_quality).

The same experiment as bench_mo_quality.cc, through Optuna's ask-and-tell interface: the
synthetic trainable's objectives (the same functions, learning curves and seeded noise
streams, keyed by seed, trial number + 1, attempt 0, step and objective), max_t 27, and W
asynchronous workers in virtual time (1 s steps, lognormal jitter 0.1). Optuna cannot stop a
multi-objective trial early (trial.should_prune is not supported with several objectives), so
every trial runs max_t steps and is told the values its step max_t reports. The budget counts
the same thing as ranktune's, iterations: a trial is only started while its max_t steps fit in
what is left, so a run makes exactly BUDGET // max_t trials and never exceeds BUDGET steps.

What is judged is what a user gets: study.best_trials (the non-dominated complete trials, by
their told, noisy values), by the exact hypervolume of their configurations' NOISE-FREE
objectives against bench_mo_quality's reference point for the function. One JSON line per seed,
as bench_mo_quality prints ("front_hv" is left to it).

Usage: mo_optuna_side.py FUNCTION BUDGET WORKERS SEED_FIRST SEED_LAST SAMPLER
         SAMPLER: nsga2 (NSGAIISampler) | tpe (TPESampler, multi-objective) | random; defaults
       mo_optuna_side.py --check PATH/TO/bench_mo_quality
         compares this port of the functions, their noise and the hypervolume with the C++ on
         random points (to 1e-12); exits 1 on a difference.
"""
import heapq
import json
import math
import random
import subprocess
import sys

import numpy as np

from optuna_side import seeded_normal

MAX_T = 27
NOISE = 0.01
CURVE_POINTS = 20


def zdt_g(x):
    return 1 + 9 * sum(x[1:]) / (len(x) - 1)


def zdt1(x):
    g = zdt_g(x)
    return [x[0], g * (1 - math.sqrt(x[0] / g))]


def zdt2(x):
    g = zdt_g(x)
    r = x[0] / g
    return [x[0], g * (1 - r * r)]


def zdt3_curve(f1):
    return 1 - math.sqrt(f1) - f1 * math.sin(10 * math.pi * f1)


def zdt3(x):
    g = zdt_g(x)
    r = x[0] / g
    return [x[0], g * (1 - math.sqrt(r) - r * math.sin(10 * math.pi * x[0]))]


def dtlz2(x, m=3):
    g = sum((v - 0.5) * (v - 0.5) for v in x[m - 1:])
    f = [1 + g] * m
    for j in range(m):
        for i in range(m - j - 1):
            f[j] *= math.cos(x[i] * math.pi / 2)
        if j > 0:
            f[j] *= math.sin(x[m - j - 1] * math.pi / 2)
    return f


# name: (function, variables, ideal point (each objective's minimum), reference point); as in
# bench_mo_quality.cc and train/synthetic.cc (ZDT3's f2 is smallest at the right end of its last
# front piece, kZdt3Pieces).
PROBLEMS = {
    "zdt1": (zdt1, 10, [0.0, 0.0], [1.1, 11.0]),
    "zdt2": (zdt2, 10, [0.0, 0.0], [1.1, 11.0]),
    "zdt3": (zdt3, 10, [0.0, zdt3_curve(0.851832862213)], [1.1, 11.0]),
    "dtlz2": (dtlz2, 12, [0.0, 0.0, 0.0], [3.85, 3.85, 3.85]),
}


# The samplers by the names the suite gives them: Optuna's classes, with their defaults. In a
# study of several directions TPESampler is Optuna's multi-objective TPE (MOTPE).
SAMPLERS = {"nsga2": "NSGAIISampler", "tpe": "TPESampler", "random": "RandomSampler"}


def step_values(values, ideal, seed, trial, t):
    """What step t of a trial reports: train/synthetic.cc's synthetic_step with noise 0.01."""
    out = []
    for i, (v, lo) in enumerate(zip(values, ideal)):
        gap = max(0.0, v - lo)
        out.append(v + (1 + gap) / math.sqrt(t) + NOISE * seeded_normal(seed, trial, 0, t, i))
    return out


def hypervolume(points, ref):
    """Exact hypervolume (minimization) of 2- or 3-objective points; points that do not
    strictly dominate the reference contribute nothing."""
    pts = [p for p in points if all(v < r for v, r in zip(p, ref))]
    if len(ref) == 2:
        hv, best = 0.0, ref[1]
        for f1, f2 in sorted(pts):
            if f2 < best:
                hv += (ref[0] - f1) * (best - f2)
                best = f2
        return hv
    # 3 objectives: slabs between consecutive third coordinates, each the 2-D hypervolume of
    # the points below it.
    pts.sort(key=lambda p: p[2])
    hv = 0.0
    for i, p in enumerate(pts):
        top = pts[i + 1][2] if i + 1 < len(pts) else ref[2]
        if top > p[2]:
            hv += hypervolume([q[:2] for q in pts[:i + 1]], ref[:2]) * (top - p[2])
    return hv


def run_seed(name, budget, workers, seed, sampler_name):
    import optuna
    f, n, ideal, ref = PROBLEMS[name]
    names = [f"x{i + 1}" for i in range(n)]
    if sampler_name not in SAMPLERS:
        raise SystemExit(f"unknown sampler {sampler_name}: {', '.join(SAMPLERS)}")
    sampler = getattr(optuna.samplers, SAMPLERS[sampler_name])(seed=seed)  # the defaults otherwise
    study = optuna.create_study(directions=["minimize"] * len(ref), sampler=sampler)
    rng = np.random.default_rng(seed)

    reserved = 0  # steps of the trials started: each reserves max_t
    done = 0
    curve = []
    next_point = 1
    running = {}  # worker -> [trial, x, values, t]
    events = []  # (time, order, worker)
    order = 0

    def front_hv():
        return hypervolume([f([t.params[p] for p in names]) for t in study.best_trials], ref)

    def start_step(w, now):
        nonlocal order
        heapq.heappush(events, (now + math.exp(0.1 * rng.standard_normal()), order, w))
        order += 1

    def offer(w, now):
        nonlocal reserved
        if reserved + MAX_T > budget:
            return
        reserved += MAX_T
        trial = study.ask()
        x = [trial.suggest_float(p, 0.0, 1.0) for p in names]
        running[w] = [trial, x, f(x), 0]
        start_step(w, now)

    for w in range(workers):
        offer(w, 0.0)
    while events:
        now, _, w = heapq.heappop(events)
        run = running[w]
        run[3] += 1
        done += 1
        if run[3] >= MAX_T:
            study.tell(run[0], step_values(run[2], ideal, seed, run[0].number + 1, run[3]))
            del running[w]
            offer(w, now)
        else:
            start_step(w, now)
        while next_point <= CURVE_POINTS and done >= budget * next_point // CURVE_POINTS:
            curve.append([budget * next_point // CURVE_POINTS, front_hv()])
            next_point += 1
    while next_point <= CURVE_POINTS:  # the last points, past the steps a whole trial fits in
        curve.append([budget * next_point // CURVE_POINTS, front_hv()])
        next_point += 1
    return {"seed": seed, "hv": front_hv(), "front": len(study.best_trials), "trials": len(study.trials),
            "steps": done, "curve": curve}


def check(bench):
    """This port against bench_mo_quality --check: objectives, step values and hypervolumes."""
    rnd = random.Random(30)
    lines, want = [], []
    for name, (f, n, ideal, ref) in PROBLEMS.items():
        for _ in range(25):
            x = [rnd.random() for _ in range(n)]
            if rnd.random() < 0.3:  # on the front too: g = 0 (DTLZ2) or 1 (ZDT)
                tail = len(ref) - 1 if name == "dtlz2" else 1
                x[tail:] = [0.5 if name == "dtlz2" else 0.0] * (n - tail)
            seed, trial, t = rnd.randrange(1, 1000), rnd.randrange(1, 500), rnd.randrange(1, MAX_T + 1)
            values = f(x)
            lines.append(f"point {name} {seed} {trial} {t} " + " ".join(repr(v) for v in x))
            want.append(values + step_values(values, ideal, seed, trial, t))
        for k in (1, 5, 40):
            pts = [[rnd.uniform(-0.8, r * 1.05) for r in ref] for _ in range(k)]
            lines.append(f"hv {name} {k} " + " ".join(repr(v) for p in pts for v in p))
            want.append([hypervolume(pts, ref)])
    out = subprocess.run([bench, "--check"], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    got = [[float(v) for v in line.split()] for line in out.stdout.splitlines()]
    if len(got) != len(want):
        raise SystemExit(f"mo_optuna_side.py --check: {bench} answered {len(got)} lines to {len(want)}")
    worst = 0.0
    for line, g, w in zip(lines, got, want):
        err = max(abs(a - b) / max(1.0, abs(b)) for a, b in zip(g, w)) if len(g) == len(w) else math.inf
        worst = max(worst, err)
        if err > 1e-12:
            print(f"mo_optuna_side.py --check: differs by {err:.3g}: {line}\n  C++:    {g}\n  Python: {w}", file=sys.stderr)
            sys.exit(1)
    print(f"mo_optuna_side.py --check: {len(lines)} points and hypervolumes agree with {bench} "
          f"(largest relative difference {worst:.2g})")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        return check(sys.argv[2])
    if len(sys.argv) != 7:
        raise SystemExit(__doc__)
    name, budget, workers, first, last, sampler = sys.argv[1:]
    if name not in PROBLEMS:
        raise SystemExit(f"unknown function {name}: {', '.join(PROBLEMS)}")
    import optuna
    import warnings
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore")
    for seed in range(int(first), int(last) + 1):
        print(json.dumps(run_seed(name, int(budget), int(workers), seed, sampler)), flush=True)


if __name__ == "__main__":
    main()
