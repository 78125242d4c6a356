#!/usr/bin/python3
"""The search-quality suite: ranktune's searcher + scheduler pairs beside Optuna's, side by side.

Every cell is a function (Branin, Hartmann-6, Rosenbrock-4) x a budget in steps x a number of
workers; every pair runs the same seeds in it, on the synthetic trainable's objective (the
same bit for bit on both sides: bench_quality.cc and optuna_side.py say how). A run's score is
the noise-free regret f(x) - min f of the configuration the tool recommends (ranktune: the
leaderboard's first row; Optuna: study.best_trial). Per cell the suite reports medians and
IQRs over seeds, and a two-sided Mann-Whitney U test of ranktune's default pair and of its best
pair against Optuna's best pair. Optuna's runs do not depend on ranktune's code, so they are
cached (by Optuna version, pair, cell and seed) and reused.

Usage: suite.py [--quick] [--bench PATH] [--cache DIR] [--out FILE.md] [--svg-dir DIR] [-j N]
       [--only-ranktune]
"""
import argparse
import concurrent.futures as futures
import json
import math
import os
import subprocess
import sys
import time

import numpy as np
from scipy import stats

HERE = os.path.dirname(os.path.abspath(__file__))

# ranktune's recommended default pair: the searcher a user gets who names no algorithm on
# these numeric spaces (search/default_searcher.h), with the scheduler docs/guide/algorithms.md
# recommends for a trainable that reports every iteration.
DEFAULT_PAIR = "gp+asha"

RANKTUNE_PAIRS = [
    ("random", "fifo"), ("random", "asha"), ("random", "hyperband"),
    ("tpe", "fifo"), ("tpe", "asha"), ("tpe", "hyperband"),
    ("bohb", "asha"), ("bohb", "hyperband"),
    ("cmaes", "fifo"), ("cmaes", "asha"),
    ("gp", "fifo"), ("gp", "asha"), ("gp", "hyperband"),
]
OPTUNA_PAIRS = [("random", "none"), ("tpe", "none"), ("tpe", "sha"), ("tpe", "hyperband"), ("cmaes", "none")]

FULL = dict(functions=["branin", "hartmann6", "rosenbrock4"], budgets=[810, 2700], workers=[1, 8], seeds=10)
QUICK = dict(functions=["branin", "hartmann6"], budgets=[810], workers=[1, 8], seeds=5)
# The smoke test's plan: is the output well formed, not what it says.
SMOKE = dict(functions=["branin"], budgets=[81], workers=[1, 2], seeds=2)







def chosen_plan(args, smoke, quick, full):
    """The plan --smoke or --quick names (else the full one), with what the command line sets
    of its keys (--seeds, --budget, ...) in its place."""
    plan = dict(smoke if args.smoke else quick if args.quick else full)
    for key in plan:
        if getattr(args, key, None):
            plan[key] = getattr(args, key)
    return plan


def write_report(text, out):
    """Writes a report to the file `out`, or to standard output when it is "-"."""
    if out == "-":
        sys.stdout.write(text)
    else:
        with open(out, "w") as f:
            f.write(text)


def run_lines(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def ranktune_job(bench, fn, budget, workers, seeds, searcher, scheduler):
    return run_lines([bench, fn, str(budget), str(workers), "1", str(seeds), searcher, scheduler])


def optuna_job(fn, budget, workers, seeds, sampler, pruner, cache):
    path = os.path.join(cache, f"optuna-{OPTUNA_VERSION}-{sampler}-{pruner}-{fn}-{budget}-{workers}.jsonl")
    return cached_seeds(path, seeds, lambda first: [sys.executable, os.path.join(HERE, "optuna_side.py"), fn,
                                                    str(budget), str(workers), str(first), str(seeds), sampler, pruner])


def cached_seeds(path, seeds, command):
    """Seeds 1..seeds of a run that does not depend on ranktune's code, from the JSON lines
    cached in `path`; the seeds missing there are run by command(first missing seed), which
    prints one JSON line per seed up to `seeds`, and added to the cache."""
    have = []
    if os.path.exists(path):
        with open(path) as f:
            have = [json.loads(line) for line in f if line.strip()]
    have = [r for r in have if r["seed"] <= seeds]
    if len(have) < seeds:
        more = run_lines(command(len(have) + 1))
        have += more
        with open(path + ".tmp", "w") as f:
            for r in have:
                f.write(json.dumps(r) + "\n")
        os.replace(path + ".tmp", path)
    return have[:seeds]


def regrets(runs):
    return np.array([r["regret"] if r["regret"] is not None else math.inf for r in runs])


def median_iqr(v):
    q1, m, q3 = np.percentile(v, [25, 50, 75])
    return m, q1, q3


def fmt(v):
    if not math.isfinite(v):
        return "inf"
    return f"{v:.3g}" if abs(v) >= 1e-3 else f"{v:.1e}"


def mannwhitney(a, b):
    """Two-sided p and which side is better (lower regrets): 'ranktune', 'optuna' or 'tie'."""
    if np.all(a == b[0]) and np.all(b == b[0]):
        return 1.0, "tie"
    p = stats.mannwhitneyu(a, b, alternative="two-sided").pvalue
    side = "tie"
    if p < 0.05:
        side = "ranktune" if np.median(a) < np.median(b) else "optuna"
    return p, side


def svg_curves(path, title, series):
    """Median regret (log scale) against steps, one line per pair."""
    w, h, left, right, top, bottom = 640, 360, 60, 170, 30, 40
    pts = [(s, r) for _, curve in series for s, r in curve if r is not None and r > 0 and math.isfinite(r)]
    if not pts:
        return
    xmax = max(s for s, _ in pts)
    lo, hi = math.log10(min(r for _, r in pts)), math.log10(max(r for _, r in pts))
    if hi - lo < 1e-9:
        hi = lo + 1
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
               "#bcbd22", "#17becf", "#000000", "#aa4499", "#44aa99", "#882255"]
    X = lambda s: left + (w - left - right) * s / xmax
    Y = lambda r: top + (h - top - bottom) * (hi - math.log10(r)) / (hi - lo)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="18" font-size="13">{title}</text>',
           f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="#333"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="#333"/>',
           f'<text x="{(w - right + left) / 2}" y="{h - 8}" text-anchor="middle">steps</text>',
           f'<text x="{left - 5}" y="{h - bottom}" text-anchor="end">{10 ** lo:.2g}</text>',
           f'<text x="{left - 5}" y="{top + 4}" text-anchor="end">{10 ** hi:.2g}</text>',
           f'<text x="{w - right}" y="{h - bottom + 14}" text-anchor="middle">{xmax}</text>',
           f'<text transform="translate(14,{(h) / 2}) rotate(-90)" text-anchor="middle">median regret (log)</text>']
    for i, (name, curve) in enumerate(series):
        c = colours[i % len(colours)]
        good = [(s, r) for s, r in curve if r is not None and r > 0 and math.isfinite(r)]
        if good:
            d = " ".join(f"{'M' if j == 0 else 'L'}{X(s):.1f},{Y(r):.1f}" for j, (s, r) in enumerate(good))
            dash = ' stroke-dasharray="5,3"' if name.startswith("optuna") else ""
            out.append(f'<path d="{d}" fill="none" stroke="{c}" stroke-width="1.5"{dash}/>')
        out.append(f'<text x="{w - right + 8}" y="{top + 12 * i + 8}" fill="{c}">{name}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def median_curve(runs):
    steps = [s for s, _ in runs[0]["curve"]]
    out = []
    for k, s in enumerate(steps):
        vals = [r["curve"][k][1] for r in runs if k < len(r["curve"])]
        vals = [v if v is not None else math.inf for v in vals]
        out.append((s, float(np.median(vals))))
    return out


def main():
    global OPTUNA_VERSION
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--svg-link", default=None, help="folder the report's image links name (default: relative to --out)")
    ap.add_argument("--bench", default=os.path.join(HERE, "..", "..", "build", "benchmarks", "bench_quality"))
    ap.add_argument("--cache", default=os.path.join(HERE, "..", "..", "build", "quality-cache"))
    ap.add_argument("--out", default="-")
    ap.add_argument("--svg-dir", default=None)
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--pairs", default=None, help="ranktune pairs to run, e.g. tpe+asha,tpe+hyperband")
    a = ap.parse_args()
    import optuna
    OPTUNA_VERSION = optuna.__version__
    plan = chosen_plan(a, SMOKE, QUICK, FULL)
    os.makedirs(a.cache, exist_ok=True)
    help_text = subprocess.run([a.bench], capture_output=True, text=True).stderr
    if "usage" not in help_text:
        raise SystemExit(f"suite.py: {a.bench} is not bench_quality (build it: cmake --build build --target bench_quality)")
    pairs = RANKTUNE_PAIRS
    if a.pairs:
        pairs = [tuple(p.split("+")) for p in a.pairs.split(",")]
    cells = [(fn, b, w) for fn in plan["functions"] for b in plan["budgets"] for w in plan["workers"]]
    seeds = plan["seeds"]
    started = time.time()
    results = {}
    with futures.ThreadPoolExecutor(max_workers=a.j) as pool:
        jobs = {}
        for cell in cells:
            for s, k in pairs:
                jobs[pool.submit(ranktune_job, a.bench, *cell, seeds, s, k)] = (cell, f"{s}+{k}")
            for s, p in OPTUNA_PAIRS:
                jobs[pool.submit(optuna_job, *cell, seeds, s, p, a.cache)] = (cell, f"optuna {s}+{p}")
        for job in futures.as_completed(jobs):
            results[jobs[job]] = job.result()
    wall = time.time() - started

    lines = []
    say = lines.append
    say(f"Seeds 1..{seeds}; max_t 27; noise 0.01; jitter 0.1; Optuna {OPTUNA_VERSION}; "
        f"ranktune default pair `{DEFAULT_PAIR}`. Regret: f(recommended x) - min f, median [IQR].\n")
    summary = []
    for cell in cells:
        fn, budget, workers = cell
        names = [f"{s}+{k}" for s, k in pairs]
        onames = [f"optuna {s}+{p}" for s, p in OPTUNA_PAIRS]
        med = {n: float(np.median(regrets(results[(cell, n)]))) for n in names + onames}
        best_r = min(names, key=lambda n: med[n])
        best_o = min(onames, key=lambda n: med[n])
        o = regrets(results[(cell, best_o)])
        say(f"### {fn}, {budget} steps, {workers} worker{'s' if workers > 1 else ''}\n")
        say("| pair | median regret | IQR | trials | vs Optuna's best (p) |")
        say("|---|---|---|---|---|")
        for n in names + onames:
            v = regrets(results[(cell, n)])
            m, q1, q3 = median_iqr(v)
            trials = np.median([r["trials"] for r in results[(cell, n)]])
            vs = ""
            if not n.startswith("optuna"):
                p, side = mannwhitney(v, o)
                vs = f"{side} ({p:.2g})"
            mark = " **(best)**" if n in (best_r, best_o) else ""
            say(f"| {n}{mark} | {fmt(m)} | {fmt(q1)} - {fmt(q3)} | {trials:.0f} | {vs} |")
        pd, sd = mannwhitney(regrets(results[(cell, DEFAULT_PAIR)]), o) if DEFAULT_PAIR in names else (float("nan"), "-")
        pb, sb = mannwhitney(regrets(results[(cell, best_r)]), o)
        summary.append((fn, budget, workers, DEFAULT_PAIR, fmt(med.get(DEFAULT_PAIR, math.nan)), sd, pd,
                        best_r, fmt(med[best_r]), sb, pb, best_o, fmt(med[best_o])))
        say("")
        if sd == "optuna":
            say(f"ranktune's default pair `{DEFAULT_PAIR}` loses here to `{best_o}` (p = {pd:.2g}).\n")
        if sb == "optuna":
            say(f"ranktune's best pair `{best_r}` loses here to `{best_o}` (p = {pb:.2g}).\n")
        if a.svg_dir:
            os.makedirs(a.svg_dir, exist_ok=True)
            svg = f"quality-{fn}-{budget}-{workers}.svg"
            series = [(n, median_curve(results[(cell, n)])) for n in names + onames]
            svg_curves(os.path.join(a.svg_dir, svg), f"{fn}, {budget} steps, {workers} workers", series)
            if a.svg_link is not None:
                link = f"{a.svg_link}/{svg}"
            else:
                base = os.path.dirname(os.path.abspath(a.out)) if a.out != "-" else os.getcwd()
                link = os.path.relpath(os.path.join(a.svg_dir, svg), base)
            say(f"![regret against steps, {fn}, {budget} steps, {workers} workers]({link})\n")
    head = ["| function | budget | workers | default pair | regret | vs Optuna best (p) | ranktune best | regret | vs Optuna best (p) | Optuna best | regret |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in summary:
        fn, b, w, dp, dm, sd, pd, br, bm, sb, pb, bo, bom = r
        head.append(f"| {fn} | {b} | {w} | {dp} | {dm} | {sd} ({pd:.2g}) | {br} | {bm} | {sb} ({pb:.2g}) | {bo} | {bom} |")
    wins_default = sum(1 for r in summary if r[5] != "optuna")
    wins_best = sum(1 for r in summary if r[9] == "ranktune")
    verdict = [f"Default pair no worse than Optuna's best in {wins_default} of {len(summary)} cells; "
               f"ranktune's best pair better than Optuna's best (p < 0.05) in {wins_best} of {len(summary)} cells. "
               f"Suite wall time {wall:.0f} s.\n"]
    if wins_default < len(summary):
        verdict.append(f"The target is missed: ranktune's default pair loses to Optuna's best pair in "
                       f"{len(summary) - wins_default} cells (named under each cell below).\n")
    if 2 * wins_best < len(summary):
        close = [f"{r[0]} {r[1]}/{r[2]} (p = {r[10]:.2g})" for r in summary if r[9] == "tie" and r[10] < 0.1]
        verdict.append(f"The target is missed: ranktune's best pair is better than Optuna's best in {wins_best} of "
                       f"{len(summary)} cells, not half. In the others the best medians are ranktune's or close, but "
                       f"{seeds} seeds cannot tell them apart at p < 0.05" +
                       (f" (nearest: {', '.join(close)})" if close else "") + ".\n")
    write_report("\n".join(verdict + head + [""] + lines) + "\n", a.out)


if __name__ == "__main__":
    main()
