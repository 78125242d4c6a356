#!/usr/bin/python3
"""The Fashion-MNIST mlp search, ranktune against Optuna's TPE + Hyperband, at equal wall time.

Both tools tune the same trainer (ranktune's built-in `mlp` trainable; Optuna drives it
through `bench_mlp --serve`, one process per worker thread, so the data is loaded once per
worker on both sides) over the same space (the [search.space] of
configs/fashion_mlp_asha.toml, read from that file), the same training subset, max_t, seed
rule and number of concurrent trials (2, one BLAS thread each), for the same wall-clock
budget: ranktune's `[stop] time_budget_s`, Optuna's `optimize(timeout=)` plus a deadline
that stops the trials still running at its end, as ranktune's budget does. Each tool's
recommended configuration (ranktune: the leaderboard's first row; Optuna: study.best_trial)
is then retrained alone with `bench_mlp --seed S --trial T --epochs max_t --test` and
measured on the 10k test images, which neither search reads. benchmarks/README.md says what
is equal and what is not.

Usage: mlp_suite.py [--quick | --smoke] --build BUILD_DIR [--seeds N] [--budget S] [--out FILE]
"""
import argparse
import json
import math
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
import tomllib

import numpy as np

from suite import write_report  # benchmarks/quality/suite.py, beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.normpath(os.path.join(HERE, "..", "..", "configs", "fashion_mlp_asha.toml"))
WORKERS = 2

# budget: seconds per tool and seed; pairs: ranktune's searcher+scheduler pairs.
FULL = dict(seeds=3, budget=300, max_t=27, train_samples=10000, val_samples=0, pairs=["tpe+asha", "tpe+hyperband"])
QUICK = dict(seeds=1, budget=120, max_t=27, train_samples=10000, val_samples=0, pairs=["tpe+asha"])
# The smoke test's plan: does the pipeline produce a well-formed table, not what it says.
SMOKE = dict(seeds=1, budget=4, max_t=3, train_samples=1000, val_samples=500, pairs=["tpe+asha"])

OPTUNA_PAIR = "optuna tpe+hyperband"


def space_of(path):
    """The [search.space] of the ranktune config: name -> (kind, args)."""
    with open(path, "rb") as f:
        space = tomllib.load(f)["search"]["space"]
    out = {}
    for name, dom in space.items():
        (kind, args), = dom.items()
        if kind not in ("choice", "uniform", "loguniform"):
            raise SystemExit(f"mlp_suite.py: {path}: search.space.{name}: {kind} has no Optuna counterpart here")
        out[name] = (kind, args)
    return out


def bench_args(config):
    """bench_mlp options for a trial config (the names of the mlp trainable's parameters)."""
    flag = {"batch_size": "--batch", "weight_decay": "--weight-decay"}
    args = []
    for k, v in config.items():
        args += [flag.get(k, "--" + k), repr(v) if isinstance(v, float) else str(v)]
    return args


# ---------------------------------------------------------------------------------------------
# ranktune


def ranktune_config(plan, pair, seed, budget):
    """The experiment: configs/fashion_mlp_asha.toml's space, this pair, the plan's settings."""
    searcher, scheduler = pair.split("+")
    text = open(CONFIG).read()
    space = text[text.index("[search.space]"):].split("\n[", 1)[0].rstrip() + "\n"
    sched = {"asha": 'kind = "asha"\ngrace_period = 1\nreduction_factor = 3\n',
             "hyperband": 'kind = "hyperband"\nreduction_factor = 3\n'}[scheduler]
    return (f'[experiment]\nname = "mlp_suite"\nmetric = "val_accuracy"\nmode = "max"\nseed = {seed}\n'
            f'num_samples = 1000000\nnon_finite = "worst"\n\n[search]\nalgorithm = "{searcher}"\n\n{space}\n'
            f'[scheduler]\n{sched}\n[trainable]\nkind = "mlp"\nval_fraction = 0.1\nthreads_per_worker = 1\n'
            f'train_samples = {plan["train_samples"]}\nval_samples = {plan["val_samples"]}\n\n'
            f'[stop]\nmax_t = {plan["max_t"]}\ntime_budget_s = {budget}\n')


def run_ranktune(build, plan, pair, seed, budget, work):
    cfg = os.path.join(work, f"{pair}-{seed}.toml")
    h5 = os.path.join(work, f"{pair}-{seed}.h5")
    with open(cfg, "w") as f:
        f.write(ranktune_config(plan, pair, seed, budget))
    exe = os.path.join(build, "apps", "ranktune")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    t0 = time.time()
    p = subprocess.run([exe, "run", cfg, "--np", str(WORKERS), "--results", h5], capture_output=True, text=True, env=env)
    wall = time.time() - t0
    if p.returncode != 0:
        raise SystemExit(f"mlp_suite.py: ranktune run {cfg} failed (exit {p.returncode}):\n{p.stderr[-2000:]}")
    rep = json.loads(subprocess.run([exe, "report", h5, "--format", "json"], check=True, capture_output=True,
                                    text=True).stdout)
    trials = rep["trials"]
    rec = next((t for t in trials if t["trial_id"] == rep.get("recommended")), None)
    best = [t["best"] for t in trials if t["best"] is not None]
    log = [dict(trial=t["trial_id"], epochs=t["iterations"], seconds=t.get("wall_s"), config=t["config"])
           for t in sorted(trials, key=lambda t: t["trial_id"])]
    return dict(tool=pair, seed=seed, wall_s=wall, trials=len(trials), log=log,
                epochs=sum(t["iterations"] for t in trials),
                full=sum(1 for t in trials if t["iterations"] >= plan["max_t"]),
                best_seen=max(best) if best else math.nan,
                rec_trial=rec["trial_id"] if rec else None, rec_config=rec["config"] if rec else None,
                rec_val=rec["best"] if rec and rec["best"] is not None else math.nan,
                rec_final=rec is not None and rec["best_iteration"] == plan["max_t"])


# ---------------------------------------------------------------------------------------------
# Optuna


class Server:
    """One `bench_mlp --serve` process: the trainer of one Optuna worker thread."""

    def __init__(self, build, plan, seed):
        self.p = subprocess.Popen(
            [os.path.join(build, "benchmarks", "bench_mlp"), "--serve", "--threads", "1", "--seed", str(seed),
             "--train-samples", str(plan["train_samples"]), "--val-samples", str(plan["val_samples"])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def send(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def read(self):
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"bench_mlp --serve exited (code {self.p.wait()})")
        return line.split()

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def run_optuna(build, plan, seed, budget):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = space_of(CONFIG)
    max_t = plan["max_t"]
    servers = queue.Queue()
    for _ in range(WORKERS):
        servers.put(Server(build, plan, seed))
    lock = threading.Lock()
    stats = dict(epochs=0, best_seen=-math.inf)
    log = []  # per trial: epochs trained, seconds, config (for --json)

    def objective(trial):
        config = {}
        for name, (kind, args) in space.items():
            if kind == "choice":
                config[name] = trial.suggest_categorical(name, args)
            else:
                config[name] = trial.suggest_float(name, args[0], args[1], log=kind == "loguniform")
        server = servers.get()
        t0 = time.time()
        epochs = 0
        try:
            # Trial ids from 1, as ranktune's: the seed rule (split from the experiment seed,
            # initial weights from seed and trial id) is then the same on both sides.
            server.send(" ".join(["--trial", str(trial.number + 1), "--epochs", str(max_t)] + bench_args(config)))
            value = math.nan
            for epoch in range(1, max_t + 1):
                words = server.read()
                if words[0] == "error":
                    raise RuntimeError(" ".join(words[1:]))
                value = float(words[words.index("val_accuracy") + 1])
                if not math.isfinite(value):
                    value = 0.0  # a diverged trial: the worst, as ranktune's non_finite = "worst"
                epochs += 1
                with lock:
                    stats["epochs"] += 1
                    stats["best_seen"] = max(stats["best_seen"], value)
                trial.report(value, epoch)
                if epoch == max_t:
                    break
                cut = time.time() >= deadline
                if cut or trial.should_prune():
                    server.send("stop")
                    server.read()  # "end"
                    trial.set_user_attr("cut_by_budget", cut)
                    raise optuna.TrialPruned()
                server.send("next")
            server.read()  # "end"
            return value
        finally:
            servers.put(server)
            with lock:
                log.append(dict(trial=trial.number + 1, epochs=epochs, seconds=time.time() - t0, config=config))

    study = optuna.create_study(
        direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed),
        pruner=optuna.pruners.HyperbandPruner(min_resource=1, max_resource=max_t, reduction_factor=3))
    t0 = time.time()
    deadline = t0 + budget
    study.optimize(objective, timeout=budget, n_jobs=WORKERS)
    wall = time.time() - t0
    while not servers.empty():
        servers.get().close()
    trials = study.trials
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    rec = study.best_trial if complete else None
    return dict(tool=OPTUNA_PAIR, seed=seed, wall_s=wall, trials=len(trials), epochs=stats["epochs"],
                log=sorted(log, key=lambda r: r["trial"]),
                full=len(complete), best_seen=stats["best_seen"],
                rec_trial=rec.number + 1 if rec else None, rec_config=dict(rec.params) if rec else None,
                rec_val=rec.value if rec else math.nan, rec_final=rec is not None)


# ---------------------------------------------------------------------------------------------


def retrain(build, plan, run):
    """Test accuracy of the run's recommended configuration, retrained alone to max_t."""
    run["test"] = math.nan
    if not run["rec_config"]:
        return run
    out = subprocess.run(
        [os.path.join(build, "benchmarks", "bench_mlp"), "--threads", "1", "--seed", str(run["seed"]), "--trial",
         str(run["rec_trial"]), "--epochs", str(plan["max_t"]), "--train-samples", str(plan["train_samples"]),
         "--val-samples", str(plan["val_samples"]), "--test"] + bench_args(run["rec_config"]),
        check=True, capture_output=True, text=True).stdout.split()
    run["test"] = float(out[out.index("test_accuracy") + 1])
    run["retrained_val"] = float(out[len(out) - 1 - out[::-1].index("val_accuracy") + 1])
    return run


def med(runs, key, f="{:.4f}"):
    v = [r[key] for r in runs]
    m = float(np.median(v))
    if len(v) == 1:
        return f.format(m)
    return f.format(m) + " (" + ", ".join(f.format(x) for x in v) + ")"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--budget", type=float, default=None, help="seconds of wall time per tool and seed")
    ap.add_argument("--pairs", default=None, help="ranktune pairs, e.g. tpe+asha,tpe+hyperband")
    ap.add_argument("--out", default="-")
    ap.add_argument("--json", default=None, help="also write every run's figures to this file")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    for exe in ("apps/ranktune", "benchmarks/bench_mlp"):
        if not os.access(os.path.join(build, exe), os.X_OK):
            raise SystemExit(f"mlp_suite.py: no {build}/{exe}: build it (cmake --build build --target ranktune bench_mlp)")
    import optuna
    plan = dict(SMOKE if a.smoke else QUICK if a.quick else FULL)
    if a.seeds:
        plan["seeds"] = a.seeds
    if a.budget:
        plan["budget"] = a.budget
    if a.pairs:
        plan["pairs"] = a.pairs.split(",")
    load0 = os.getloadavg()[0]
    started = time.time()
    runs = {name: [] for name in plan["pairs"] + [OPTUNA_PAIR]}
    with tempfile.TemporaryDirectory() as work:
        for seed in range(1, plan["seeds"] + 1):
            # One tool at a time on the machine; the order turns with the seed.
            order = plan["pairs"] + [OPTUNA_PAIR]
            k = (seed - 1) % len(order)
            for name in order[k:] + order[:k]:
                print(f"mlp_suite.py: seed {seed}, {name} ...", file=sys.stderr, flush=True)
                if name == OPTUNA_PAIR:
                    r = run_optuna(build, plan, seed, plan["budget"])
                else:
                    r = run_ranktune(build, plan, name, seed, plan["budget"], work)
                runs[name].append(retrain(build, plan, r))
    load1 = os.getloadavg()[0]
    wall = time.time() - started

    say = []
    n_train = plan["train_samples"] or 54000
    say.append(f"{plan['budget']:.0f} s of wall time per tool and seed, seeds 1..{plan['seeds']}, {WORKERS} concurrent "
               f"trials of one BLAS thread each; {n_train} training images, validation on "
               f"{plan['val_samples'] or 6000}, max_t {plan['max_t']} epochs; the space of "
               f"`configs/fashion_mlp_asha.toml`; Optuna {optuna.__version__} `TPESampler` + `HyperbandPruner` "
               f"(min_resource 1, max_resource {plan['max_t']}, reduction_factor 3). Median over seeds (per seed in "
               f"brackets). *test*: the recommended configuration retrained alone to max_t and measured on the 10k test "
               f"images. Load average {load0:.2f} before, {load1:.2f} after (the run's own {WORKERS} workers included); {wall:.0f} s in all.\n")
    say.append("| tool | test accuracy | val_accuracy of the recommended trial | best val_accuracy seen | trials | "
               "trials to max_t | epochs trained | wall s |")
    say.append("|---|---|---|---|---|---|---|---|")
    for name, rs in runs.items():
        label = name if name == OPTUNA_PAIR else f"ranktune {name}"
        say.append(f"| {label} | {med(rs, 'test')} | {med(rs, 'rec_val')} | {med(rs, 'best_seen')} | "
                   f"{med(rs, 'trials', '{:.0f}')} | {med(rs, 'full', '{:.0f}')} | {med(rs, 'epochs', '{:.0f}')} | "
                   f"{med(rs, 'wall_s', '{:.0f}')} |")
    say.append("")
    opt_test = float(np.median([r["test"] for r in runs[OPTUNA_PAIR]]))
    opt_val = float(np.median([r["rec_val"] for r in runs[OPTUNA_PAIR]]))
    for name in plan["pairs"]:
        t = float(np.median([r["test"] for r in runs[name]]))
        v = float(np.median([r["rec_val"] for r in runs[name]]))
        if t < opt_test or v < opt_val:
            what = []
            if t < opt_test:
                what.append(f"median test accuracy {t:.4f} against Optuna's {opt_test:.4f}")
            if v < opt_val:
                what.append(f"median validation accuracy of the recommended trial {v:.4f} against {opt_val:.4f}")
            say.append(f"ranktune `{name}` loses here: {'; '.join(what)} "
                       f"({plan['seeds']} seed{'s' if plan['seeds'] > 1 else ''}: too few for a significance test).\n")
    for name in runs:
        for r in runs[name]:
            if r["rec_config"] is None:
                say.append(f"{name}, seed {r['seed']}: no trial reached max_t within the budget, so nothing to retrain.\n")
    # The same trainer on both sides: a retrained trial whose value was taken at max_t must
    # give that value again (values are printed to 6 digits).
    for name in runs:
        for r in runs[name]:
            if r.get("rec_final") and abs(r["retrained_val"] - r["rec_val"]) > 2e-6:
                say.append(f"{name}, seed {r['seed']}: the retrained trial {r['rec_trial']} gives val_accuracy "
                           f"{r['retrained_val']:.6f}, not the search's {r['rec_val']:.6f}: the sides do not train alike.\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(runs, f, indent=1)
    # The load after a run holds the run's own workers (about WORKERS): only more is others'.
    if load0 > 1.5 or load1 > WORKERS + 1.5:
        say.append(f"The machine was busy (load average above 1.5 before, or above {WORKERS + 1.5} after, "
                   f"the run's own {WORKERS} workers included): wall-time figures are distorted.\n")
    write_report("\n".join(say) + "\n", a.out)

if __name__ == "__main__":
    main()
