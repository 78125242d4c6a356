"""A tiny checkpointing script with a held-out evaluation, in pure Python (tests/cli/script_eval.sh).

Logistic regression on 2-D points read from CSV files (x0,x1,label) in $EVAL_DATA: one
epoch of plain gradient descent on train.csv per iteration, reporting the log loss on
val.csv. Its state (w0, w1, b) is saved to state.json. In evaluation mode it loads the state
and evaluates test.csv through ranktune.on_evaluate(): test_loss, test_accuracy, and the
latency of predicting batches of test points with ranktune.time_inference().

Behaviour switches for the test, from $EVAL_BEHAVIOUR: "no_on_evaluate" (trains even in
evaluation mode, as a script written before on_evaluate), "crash" (its evaluation raises),
"no_latency" (it never calls time_inference), "split" (it gives time_inference a preprocess
and a postprocess function).
"""
import json
import math
import os
import sys

import ranktune

behaviour = os.environ.get("EVAL_BEHAVIOUR", "")
data = os.environ["EVAL_DATA"]


def read(name):
    with open(os.path.join(data, name)) as f:
        return [(float(a), float(b), int(c)) for a, b, c in (line.split(",") for line in f if line.strip())]


def prob(state, x0, x1):
    z = state["w0"] * x0 + state["w1"] * x1 + state["b"]
    return 1.0 / (1.0 + math.exp(-z))


def log_loss(state, points):
    eps = 1e-12
    return -sum(math.log(max(eps, p if y else 1.0 - p)) for p, y in ((prob(state, a, b), y) for a, b, y in points)) / len(points)


cfg = ranktune.config()
folder = ranktune.checkpoint_dir()
state = {"w0": 0.0, "w1": 0.0, "b": 0.0}
if ranktune.restored():
    with open(os.path.join(folder, "state.json")) as f:
        state = json.load(f)


def evaluate(split, batch_size):
    if behaviour == "crash":
        raise ValueError("evaluation of split %s went wrong on purpose" % split)
    name = os.path.join(data, split + ".csv")
    points = read(split + ".csv")
    correct = sum((prob(state, a, b) >= 0.5) == bool(y) for a, b, y in points)
    at = [0]

    def batches(n):  # walks through the test points
        if at[0] + n > len(points):
            at[0] = 0
        out = points[at[0]:at[0] + n]
        at[0] += n
        return out

    if behaviour == "split":  # the batch's preparation and its decision timed apart
        ranktune.time_inference(lambda xs: [prob(state, a, b) for a, b in xs], batches,
                                preprocess=lambda batch: [(float(a), float(b)) for a, b, _ in batch],
                                postprocess=lambda ps: [p >= 0.5 for p in ps])
    elif behaviour != "no_latency":
        ranktune.time_inference(lambda batch: [prob(state, a, b) >= 0.5 for a, b, _ in batch], batches)
    return {"test_loss": log_loss(state, points), "test_accuracy": correct / len(points), "samples": len(points),
            "files": [name], "threads": 1}


if behaviour != "no_on_evaluate":
    ranktune.on_evaluate(evaluate)
elif ranktune.evaluating():
    print("training, although ranktune.evaluating() is true", flush=True)

# In a search ranktune says so too, so that a RANKTUNE_MODE from a shell cannot mislead.
assert ranktune.evaluating() or os.environ["RANKTUNE_MODE"] == "train", os.environ.get("RANKTUNE_MODE")
train, val = read("train.csv"), read("val.csv")
ranktune.on_save(lambda into: json.dump(state, open(os.path.join(into, "state.json"), "w")))
lr = float(cfg["lr"])
for epoch in range(ranktune.iteration(), 1000):
    g0 = g1 = gb = 0.0
    for a, b, y in train:
        e = prob(state, a, b) - y
        g0, g1, gb = g0 + e * a, g1 + e * b, gb + e
    state = {"w0": state["w0"] - lr * g0 / len(train), "w1": state["w1"] - lr * g1 / len(train),
             "b": state["b"] - lr * gb / len(train)}
    ranktune.report(loss=log_loss(state, val))
