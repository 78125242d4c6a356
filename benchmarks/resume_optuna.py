"""The Optuna baseline of resume_time.sh: how long Optuna 3.1 takes to load a JournalStorage
of TRIALS finished trials with ITERATIONS intermediate values each (what a resumed study
or a dashboard must replay before it can ask for the next trial).

usage: resume_optuna.py DIR TRIALS ITERATIONS

Writing 10^6 reports through the API would take minutes (each one appends a line under the
journal's file lock), so the journal is built from a template: one real trial is run through
the API, its log lines are read back, and they are repeated for every trial with the trial
id and values changed, then appended in one append_logs() call. The journal's format and
op codes are therefore Optuna's own. Prints "optuna_load_s <seconds> trials <n>".
"""
import json
import os
import random
import sys
import time
import warnings

import optuna
from optuna.storages import JournalFileStorage, JournalStorage

warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
optuna.logging.set_verbosity(optuna.logging.WARNING)


def objective(iterations):
    def run(trial):
        x1, x2 = trial.suggest_float("x1", -5, 5), trial.suggest_float("x2", -5, 5)
        for step in range(iterations):
            trial.report(x1 * x1 + x2 * x2 + 1.0 / (step + 1), step)
        return x1 * x1 + x2 * x2
    return run


def main():
    folder, trials, iterations = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    path = os.path.join(folder, "journal.log")
    study = optuna.create_study(study_name="resume", direction="minimize",
                                storage=JournalStorage(JournalFileStorage(path)))
    study.optimize(objective(iterations), n_trials=1)
    with open(path) as f:
        logs = [json.loads(line) for line in f]
    # The first line creates the study; the rest are trial 0: create (ids follow the order of
    # these lines), its parameters, its reports, its end.
    template = logs[1:]
    rng = random.Random(1)
    generated = []
    for trial in range(1, trials):
        x = rng.uniform(-5, 5)
        for log in template:
            log = dict(log)
            if "trial_id" in log:
                log["trial_id"] = trial
            if "param_value_internal" in log:
                log["param_value_internal"] = rng.uniform(-5, 5)
            if "intermediate_value" in log:
                log["intermediate_value"] = x * x + 1.0 / (log["step"] + 1)
            if "values" in log:
                log["values"] = [x * x]
            generated.append(log)
    JournalFileStorage(path).append_logs(generated)

    t0 = time.perf_counter()
    loaded = optuna.load_study(study_name="resume", storage=JournalStorage(JournalFileStorage(path)))
    n = len(loaded.get_trials(deepcopy=False))
    elapsed = time.perf_counter() - t0
    if n != trials:
        sys.exit(f"resume_optuna.py: loaded {n} trials, expected {trials}")
    print(f"optuna_load_s {elapsed:.3f} trials {n} journal_bytes {os.path.getsize(path)}")


if __name__ == "__main__":
    main()
