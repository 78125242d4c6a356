#!/usr/bin/python3
"""The multi-objective search-quality suite: ranktune's searcher + scheduler pairs beside
Optuna's NSGAIISampler and multi-objective TPESampler, at an equal budget in iterations.

Every cell is a function (ZDT1, ZDT2, ZDT3 with 10 variables; DTLZ2 with 3 objectives and 12
variables) x a number of workers; every pair runs the same seeds in it, on the synthetic
trainable's objectives (the same on both sides: the suite first checks the Python port against
the C++ with `mo_optuna_side.py --check`). The budget is BUDGET iterations on both sides:
ranktune's `[stop] max_total_steps`, where early stopping (MO-ASHA) spends it on more trials;
Optuna, which cannot prune a multi-objective study, runs BUDGET // 27 whole trials. A run's
score is the exact hypervolume of the noise-free objectives of the front the tool reports
(ranktune: the non-dominated trials by their last reported values; Optuna: study.best_trials),
against one reference point per function (bench_mo_quality.cc says which and why). Per cell the
suite reports the median, min and max over seeds, and a two-sided Mann-Whitney U test of
ranktune's best pair against Optuna's best sampler. Pairs whose searcher or scheduler does not
take several objectives in this build are skipped, and the report names them. Optuna's runs
do not depend on ranktune's code, so they are cached (by Optuna version, the Python side's
code, sampler, cell and seed) and reused.

Usage: mo_suite.py [--quick] [--bench PATH] [--cache DIR] [--out FILE.md] [--seeds N]
       [--pairs random+fifo,...] [-j N]
"""
import argparse
import concurrent.futures as futures
import hashlib
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

from suite import cached_seeds, chosen_plan, mannwhitney, write_report

HERE = os.path.dirname(os.path.abspath(__file__))

RANKTUNE_PAIRS = [
    ("random", "fifo"), ("nsga2", "fifo"), ("tpe", "fifo"),
    ("random", "asha"), ("tpe", "asha"), ("nsga2", "asha"),
]
OPTUNA_SAMPLERS = ["nsga2", "tpe"]
MAX_T = 27

FUNCTIONS = ["zdt1", "zdt2", "zdt3", "dtlz2"]
FULL = dict(functions=FUNCTIONS, budget=3000, workers=[1, 8], seeds=5)
QUICK = dict(functions=FUNCTIONS, budget=3000, workers=[8], seeds=5)
# The smoke test's plan: is the output well formed, not what it says.
SMOKE = dict(functions=["zdt1", "dtlz2"], budget=270, workers=[2], seeds=2)


def ranktune_job(bench, fn, budget, workers, seeds, searcher, scheduler):
    out = subprocess.run([bench, fn, str(budget), str(workers), "1", str(seeds), searcher, scheduler],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{searcher}+{scheduler} on {fn}: exit {out.returncode}: {out.stderr.strip()}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def unavailable(bench, searcher, scheduler):
    """Why bench_mo_quality cannot run this pair in this build (exit 3), or None."""
    out = subprocess.run([bench, "zdt1", "1", "1", "1", "1", searcher, scheduler], capture_output=True, text=True)
    if out.returncode == 3:  # "...: searcher 'x' is not in this build (those that take several objectives: ...)"
        return out.stderr.strip().removeprefix("bench_mo_quality: ").split(" (those", 1)[0]
    if out.returncode != 0:
        raise SystemExit(f"mo_suite.py: {bench} failed on {searcher}+{scheduler}: {out.stderr.strip()}")
    return None


def optuna_job(fn, budget, workers, seeds, sampler, cache, version):
    path = os.path.join(cache, f"optuna-mo-{version}-{sampler}-{fn}-{budget}-{workers}.jsonl")
    return cached_seeds(path, seeds, lambda first: [sys.executable, os.path.join(HERE, "mo_optuna_side.py"), fn,
                                                    str(budget), str(workers), str(first), str(seeds), sampler])


def code_version(optuna_version):
    """The cache key of Optuna's runs: its version and the code of the Python side."""
    h = hashlib.sha256()
    for name in ("mo_optuna_side.py", "optuna_side.py"):
        with open(os.path.join(HERE, name), "rb") as f:
            h.update(f.read())
    return f"{optuna_version}-{h.hexdigest()[:10]}"


def fmt(v):
    """Four significant digits, trailing zeros kept, so that a column reads evenly."""
    return f"{v:.{max(0, 3 - math.floor(math.log10(abs(v))))}f}" if v != 0 and math.isfinite(v) else f"{v:g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="8 workers only")
    ap.add_argument("--smoke", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--bench", default=os.path.join(HERE, "..", "..", "build", "benchmarks", "bench_mo_quality"))
    ap.add_argument("--cache", default=os.path.join(HERE, "..", "..", "build", "quality-cache"))
    ap.add_argument("--out", default="-")
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--budget", type=int, default=None, help="iterations per run (default 3000)")
    ap.add_argument("--functions", default=None, help="e.g. zdt1,dtlz2 (default: all four)")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--pairs", default=None, help="ranktune pairs to run, e.g. random+asha,nsga2+asha")
    a = ap.parse_args()
    import optuna
    if a.functions:
        a.functions = a.functions.split(",")
    plan = chosen_plan(a, SMOKE, QUICK, FULL)
    if a.functions:
        unknown = [f for f in plan["functions"] if f not in FUNCTIONS]
        if unknown:
            raise SystemExit(f"mo_suite.py: unknown function {', '.join(unknown)} (valid: {', '.join(FUNCTIONS)})")
    if "usage" not in subprocess.run([a.bench], capture_output=True, text=True).stderr:
        raise SystemExit(f"mo_suite.py: {a.bench} is not bench_mo_quality "
                         "(build it: cmake --build build --target bench_mo_quality)")
    check = subprocess.run([sys.executable, os.path.join(HERE, "mo_optuna_side.py"), "--check", a.bench],
                           capture_output=True, text=True)
    if check.returncode != 0:
        raise SystemExit(f"mo_suite.py: the two sides do not compute the same objectives:\n{check.stderr}")
    os.makedirs(a.cache, exist_ok=True)
    version = code_version(optuna.__version__)
    pairs = [tuple(p.split("+")) for p in a.pairs.split(",")] if a.pairs else RANKTUNE_PAIRS
    skipped = {}
    for s, k in pairs:
        why = unavailable(a.bench, s, k)
        if why:
            skipped[f"{s}+{k}"] = why
            print(f"mo_suite.py: skipping {s}+{k}: {why}", file=sys.stderr)
    pairs = [(s, k) for s, k in pairs if f"{s}+{k}" not in skipped]
    if not pairs:
        raise SystemExit("mo_suite.py: no ranktune pair takes several objectives in this build")
    budget, seeds = plan["budget"], plan["seeds"]
    cells = [(fn, w) for fn in plan["functions"] for w in plan["workers"]]
    started = time.time()
    results = {}
    with futures.ThreadPoolExecutor(max_workers=a.j) as pool:
        jobs = {}
        for fn, w in cells:
            for s, k in pairs:
                jobs[pool.submit(ranktune_job, a.bench, fn, budget, w, seeds, s, k)] = ((fn, w), f"{s}+{k}")
            for s in OPTUNA_SAMPLERS:
                jobs[pool.submit(optuna_job, fn, budget, w, seeds, s, a.cache, version)] = ((fn, w), f"optuna {s}")
        for job in futures.as_completed(jobs):
            results[jobs[job]] = job.result()
    wall = time.time() - started

    names = [f"{s}+{k}" for s, k in pairs]
    onames = [f"optuna {s}" for s in OPTUNA_SAMPLERS]
    lines = []
    say = lines.append
    summary = []
    for cell in cells:
        fn, w = cell
        hv = {n: np.array([r["hv"] for r in results[(cell, n)]]) for n in names + onames}
        front_hv = results[(cell, names[0])][0]["front_hv"]
        best_r = max(names, key=lambda n: np.median(hv[n]))
        best_o = max(onames, key=lambda n: np.median(hv[n]))
        say(f"### {fn}, {w} worker{'s' if w > 1 else ''}\n")
        say("| pair | median hypervolume | min - max | % of the true front's | trials | front | vs Optuna's best (p) |")
        say("|---|---|---|---|---|---|---|")
        for n in names + onames:
            runs = results[(cell, n)]
            vs = ""
            if not n.startswith("optuna"):
                p, side = mannwhitney(-hv[n], -hv[best_o])  # mannwhitney calls the lower value better
                vs = f"{side} ({p:.2g})"
            mark = " **(best)**" if n in (best_r, best_o) else ""
            say(f"| {n}{mark} | {np.median(hv[n]):.4f} | {hv[n].min():.4f} - {hv[n].max():.4f} | "
                f"{100 * np.median(hv[n]) / front_hv:.1f} | {np.median([r['trials'] for r in runs]):.0f} | "
                f"{np.median([r['front'] for r in runs]):.0f} | {vs} |")
        say("")
        p, side = mannwhitney(-hv[best_r], -hv[best_o])
        beats = "yes" if np.median(hv[best_r]) > np.median(hv[best_o]) else "no"
        summary.append((fn, w, best_r, np.median(hv[best_r]), best_o, np.median(hv[best_o]), beats, side, p, front_hv))

    head = [f"Budget {budget} iterations per run (ranktune: `[stop] max_total_steps`; Optuna: "
            f"{budget // MAX_T} trials of {MAX_T}); seeds 1..{seeds}; noise 0.01; jitter 0.1; Optuna "
            f"{optuna.__version__} (`NSGAIISampler`, `TPESampler`, their defaults). Hypervolume of the noise-free "
            "objectives of the reported front; reference (1.1, 11) for ZDT, (3.85, 3.85, 3.85) for DTLZ2; "
            "higher is better. The true front's hypervolume is in the last column.\n"]
    if skipped:
        head.append("**Partial**: pairs skipped because this build cannot run them with several objectives: " +
                    "; ".join(f"`{n}` ({why})" for n, why in skipped.items()) + ".\n")
    head += ["| function | workers | ranktune best | median HV | Optuna best | median HV | ranktune better? | Mann-Whitney (p) | true front HV |",
             "|---|---|---|---|---|---|---|---|---|"]
    for fn, w, br, bm, bo, bom, beats, side, p, fh in summary:
        head.append(f"| {fn} | {w} | {br} | {bm:.4f} | {bo} | {bom:.4f} | {beats} | {side} ({p:.2g}) | {fh:.4f} |")
    wins = sum(1 for r in summary if r[6] == "yes")
    head.append("")
    head.append(f"ranktune's best pair has a higher median hypervolume than Optuna's best sampler in {wins} of "
                f"{len(summary)} cells" + ("" if wins == len(summary) else
                                          " (not in: " + ", ".join(f"{r[0]}/{r[1]}" for r in summary if r[6] == "no") + ")") +
                f"; significantly (p < 0.05) in {sum(1 for r in summary if r[7] == 'ranktune')}, and Optuna's "
                f"significantly higher in {sum(1 for r in summary if r[7] == 'optuna')}. "
                f"Suite wall time {wall:.0f} s.\n")
    # Every pair on every function, one table per number of workers: the figures side by side.
    for w in plan["workers"]:
        head.append(f"Median hypervolume (min - max), {w} worker{'s' if w > 1 else ''}:\n")
        head.append("| pair | " + " | ".join(plan["functions"]) + " |")
        head.append("|---" * (len(plan["functions"]) + 1) + "|")
        for n in names + onames:
            hv = [np.array([r["hv"] for r in results[((fn, w), n)]]) for fn in plan["functions"]]
            head.append(f"| {n} | " + " | ".join(f"{fmt(np.median(v))} ({fmt(v.min())} - {fmt(v.max())})" for v in hv) + " |")
        head.append("")
    write_report("\n".join(head + [""] + lines) + "\n", a.out)


if __name__ == "__main__":
    main()
