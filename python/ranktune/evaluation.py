"""Held-out evaluation of a script's model by ``ranktune eval`` (standard library only).

``ranktune eval`` starts a checkpointing script (``[trainable] checkpoint = true``) once per
leader in *evaluation mode*: ``RANKTUNE_MODE=eval``, the leader's stored checkpoint unpacked
into ``RANKTUNE_CHECKPOINT_DIR`` and its hyperparameters in ``RANKTUNE_CONFIG``. The script
builds its model and loads the checkpoint as it does on a resume, then calls
:func:`on_evaluate` before its training loop::

    model = build(cfg)
    if ranktune.restored():
        model.load_state_dict(torch.load(os.path.join(ranktune.checkpoint_dir(), "model.pt")))

    def evaluate(split, batch_size):
        loss, accuracy, n = run_test_set(model, batch_size)
        ranktune.time_inference(model, test_batch, preprocess=lambda b: b.to(device),
                                postprocess=lambda y: y.softmax(1).argmax(1).tolist())
        return {"test_loss": loss, "test_accuracy": accuracy, "samples": n}

    ranktune.on_evaluate(evaluate)  # in evaluation mode: evaluates, reports, exits 0
    for epoch in ...:               # training as usual

What travels to ranktune (JSON lines on ``RANKTUNE_REPORT_FD``, docs/command_protocol.md,
"Evaluation mode"): one ``{"ranktune": "latency", ...}`` line per timed batch size (with
the split of its batches and their trace), then one
``{"ranktune": "evaluation", ...}`` line. ``ranktune eval`` says how to time in
``RANKTUNE_EVAL_*`` variables; outside evaluation mode the same defaults as ``ranktune
eval``'s apply, and they can be set by hand to try the evaluation standalone.
"""

import json
import math
import os
import sys
import time

__all__ = ["evaluating", "on_evaluate", "time_inference"]

# Keys of the evaluation function's result that are not metrics.
_RESERVED = ("samples", "files", "device", "threads")

_evaluate = None
# The clock of the timed batches; a test replaces it with a fake one.
_clock = time.perf_counter


def evaluating():
    """True when ``ranktune eval`` started this process to evaluate a checkpoint
    (``RANKTUNE_MODE=eval``): build the model, load :func:`ranktune.checkpoint_dir`, and
    call :func:`on_evaluate` instead of training."""
    return os.environ.get("RANKTUNE_MODE") == "eval"


def _int_setting(name, default):
    text = os.environ.get(name)
    return default if text in (None, "") else int(text)


def _settings():
    # The same defaults as `ranktune eval` (eval/evaluator.h EvalOptions).
    sizes = os.environ.get("RANKTUNE_EVAL_BATCH_SIZES")
    batch_sizes = [1, 128] if sizes is None else [int(s) for s in sizes.split(",") if s.strip()]
    latency_s = os.environ.get("RANKTUNE_EVAL_LATENCY_S")
    return {
        "batch_sizes": batch_sizes,
        "warmup": _int_setting("RANKTUNE_EVAL_WARMUP", 10),
        "latency_s": 1.0 if latency_s in (None, "") else float(latency_s),
        "min_batches": _int_setting("RANKTUNE_EVAL_MIN_BATCHES", 20),
        "max_batches": _int_setting("RANKTUNE_EVAL_MAX_BATCHES", 100000),
    }


def _send(obj):
    # One whole line per write, unbuffered, so that it cannot interleave with the report
    # lines of ranktune's own module on the same fd.
    line = (json.dumps(obj, allow_nan=False) + "\n").encode("utf-8")
    fd = os.environ.get("RANKTUNE_REPORT_FD")
    if fd is None:  # standalone: like report(), the lines go to stdout
        sys.stdout.write(line.decode("utf-8"))
        sys.stdout.flush()
        return
    view = memoryview(line)
    while view:
        view = view[os.write(int(fd), view):]


def _nearest_rank(ordered, p):
    # As eval/latency.cc: the smallest value with at least p% of the values at or below it,
    # ceil(p/100 * n) in 1-based ranks; the slack keeps p = 90 of 10 values at rank 9.
    rank = int(math.ceil(p / 100.0 * len(ordered) - 1e-9))
    return ordered[min(max(rank, 1), len(ordered)) - 1]


def _summarize(batch_size, seconds):
    ordered = sorted(seconds)
    mean = sum(ordered) / len(ordered)
    return {
        "batch_size": batch_size,
        "batches": len(ordered),
        "mean_s": mean,
        "p50_s": _nearest_rank(ordered, 50),
        "p90_s": _nearest_rank(ordered, 90),
        "p99_s": _nearest_rank(ordered, 99),
        "max_s": ordered[-1],
        "samples_per_s": batch_size / mean if mean > 0 else 0.0,
    }


# Timed batches of one batch size kept in the trace sent to ranktune (eval::kTraceRows).
TRACE_ROWS = 1000


def _trace_keep(totals, max_rows=TRACE_ROWS):
    # As eval/latency.cc trace_keep: all when they fit; else every k-th from the first,
    # k = ceil(n / (max_rows - 1)), and the slowest (the first of equal slowest).
    n = len(totals)
    max_rows = max(max_rows, 2)
    if n <= max_rows:
        return list(range(n))
    stride = (n + max_rows - 2) // (max_rows - 1)
    keep = list(range(0, n, stride))
    slowest = max(range(n), key=lambda i: (totals[i], -i))
    if slowest % stride:
        keep.append(slowest)
        keep.sort()
    return keep


def _part_summary(name, seconds):
    # p50/p90/p99 of one part; None (JSON null: not measured) when it was not timed.
    if seconds is None:
        return {name + "_p50_s": None, name + "_p90_s": None, name + "_p99_s": None}
    ordered = sorted(seconds)
    return {name + "_p%d_s" % p: _nearest_rank(ordered, p) for p in (50, 90, 99)}


def time_inference(predict, batches, preprocess=None, postprocess=None):
    """Times ``predict(batch)``, one forward pass of one input batch, on batches from
    ``batches(batch_size)``, a callable that returns one input batch of that size (walk
    through the held-out data, so that no batch is served from a cache the last one warmed).

    The optional ``preprocess(batch)`` and ``postprocess(output)`` split each timed batch
    into three parts, as ``ranktune eval`` splits its built-in models' batches: ``x =
    preprocess(batch)`` (e.g. decode, normalize, move to the device and synchronize) is the
    preprocessing, ``y = predict(x)`` the inference (synchronize before returning), and
    ``postprocess(y)`` (e.g. ``y.softmax(1).argmax(1).tolist()``: to predictions on the host)
    the postprocessing. Without ``preprocess``, ``predict`` gets the batch as ``batches``
    returned it and preprocessing is not measured; without ``postprocess``, ``predict``
    should return its output on the host (e.g. ``lambda x: model(x).argmax(1).tolist()``) and
    postprocessing is not measured. A part that is not measured is sent as null and
    recorded as NaN ("not measured", not 0); the whole batch time then counts as inference.

    For each batch size that ``ranktune eval --batch-sizes`` asked for (1 and 128 by
    default), as ``ranktune eval`` times its built-in models: ``--warmup`` untimed batches,
    then timed ones, at least 20 and as many more as fit ``--latency-s`` seconds (at most
    100000). ``batches`` is never timed; a batch's time runs from the start of its
    preprocessing to the end of its postprocessing (``time.perf_counter``). Nearest-rank
    p50/p90/p99, max and mean in seconds, and samples/s (batch size / mean), and the p50,
    p90 and p99 of each part.

    Returns ``{batch_size: {"batches", "mean_s", "p50_s", "p90_s", "p99_s", "max_s",
    "samples_per_s", "batch_size", "pre_p50_s", ..., "post_p99_s", "trace"}}``, the trace a
    list of ``[batch, start_s, total_s, pre_s, inference_s, post_s]`` (None: not measured)
    of at most 1000 timed batches (every k-th and the slowest when there are more). In
    evaluation mode it also sends them to ranktune, which records them in the results
    file's /evaluations (in ms); call it inside the function given to :func:`on_evaluate`.
    Outside it, it sends nothing."""
    s = _settings()
    if s["min_batches"] < 1 or s["max_batches"] < s["min_batches"]:
        raise ValueError("RANKTUNE_EVAL_MIN_BATCHES and _MAX_BATCHES must satisfy 1 <= min <= max (got %d, %d)"
                         % (s["min_batches"], s["max_batches"]))

    def one(batch):
        # One batch, its parts timed; returns (total, pre, inference, post), None: not measured.
        # Without a part its clock read is left out, so that the whole time is inference.
        t0 = t1 = _clock()
        x = batch
        if preprocess is not None:
            x = preprocess(batch)
            t1 = _clock()
        y = predict(x)
        t2 = t3 = _clock()
        if postprocess is not None:
            postprocess(y)
            t3 = _clock()
        return (t3 - t0, t1 - t0 if preprocess is not None else None, t2 - t1,
                t3 - t2 if postprocess is not None else None)

    out = {}
    for b in s["batch_sizes"]:
        for _ in range(s["warmup"]):  # caches, thread pools, GPU clocks
            one(batches(b))
        rows = []  # [batch, start, total, pre, inference, post]
        start = _clock()
        while len(rows) < s["max_batches"] and (len(rows) < s["min_batches"] or _clock() - start < s["latency_s"]):
            x = batches(b)
            at = _clock() - start
            total, pre, inference, post = one(x)
            rows.append([len(rows), at, total, pre, inference, post])
        out[b] = _summarize(b, [r[2] for r in rows])
        out[b].update(_part_summary("pre", None if preprocess is None else [r[3] for r in rows]))
        out[b].update(_part_summary("inference", [r[4] for r in rows]))
        out[b].update(_part_summary("post", None if postprocess is None else [r[5] for r in rows]))
        out[b]["trace"] = [rows[i] for i in _trace_keep([r[2] for r in rows])]
        if evaluating():
            line = {"ranktune": "latency"}
            line.update(out[b])
            _send(line)
    return out


def _number(name, value):
    if hasattr(value, "item"):  # numpy and torch scalars
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("ranktune.on_evaluate: the evaluation function returned %s = %r; every value but "
                        "'samples', 'files', 'device' and 'threads' must be a number (a metric)" % (name, value))
    value = float(value)
    # JSON has no NaN or infinities; ranktune reads these spellings as non-finite numbers.
    if not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _evaluation_line(result, split):
    if not isinstance(result, dict):
        raise TypeError("ranktune.on_evaluate: the evaluation function must return a dict of metrics, "
                        "e.g. {\"test_accuracy\": 0.87, \"samples\": 2000}; it returned %r" % (result,))
    samples = result.get("samples")
    if hasattr(samples, "item"):
        samples = samples.item()
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError("ranktune.on_evaluate: the evaluation function must return \"samples\", the number "
                         "of held-out samples it evaluated (an int >= 1); it returned %r" % (samples,))
    metrics = {k: _number(k, v) for k, v in result.items() if k not in _RESERVED}
    if not metrics:
        raise ValueError("ranktune.on_evaluate: the evaluation function returned no metric besides "
                         "\"samples\"; return e.g. {\"test_accuracy\": 0.87, \"samples\": %d}" % samples)
    files = result.get("files", [])
    if isinstance(files, str) or not all(isinstance(f, (str, os.PathLike)) for f in files):
        raise TypeError("ranktune.on_evaluate: \"files\" must be a list of the paths of the held-out "
                        "data files it read; got %r" % (files,))
    line = {"ranktune": "evaluation", "split": split, "samples": samples, "metrics": metrics,
            "files": [os.path.abspath(os.fspath(f)) for f in files],
            "device": str(result.get("device", os.environ.get("RANKTUNE_DEVICE", "cpu")))}
    if "threads" in result:
        line["threads"] = int(result["threads"])
    return line


def on_evaluate(function):
    """Registers ``function(split, batch_size) -> dict``, which evaluates the model restored
    from :func:`ranktune.checkpoint_dir` on the held-out ``split`` ("test") in batches of
    ``batch_size`` and returns its metrics, e.g. ``{"test_loss": 0.41, "test_accuracy":
    0.87, "samples": 2000}``. ``"samples"`` (an int) is the number of held-out samples
    evaluated; optional ``"files"`` lists the data files it read (ranktune records their
    size and CRC-32C in the evaluation's manifest), ``"device"`` (default
    ``RANKTUNE_DEVICE``) and ``"threads"`` what it computed on. Every other value is a
    metric (a number). Call :func:`time_inference` inside it to record latency.

    Outside evaluation mode it only records the function. In evaluation mode
    (:func:`evaluating`) it calls it once at once, sends the result to ranktune, and exits
    the process with code 0: call it after the model is built and the checkpoint loaded,
    before the training loop. ``batch_size`` is the largest ``--batch-sizes`` value (128
    when none)."""
    global _evaluate
    if not callable(function):
        raise TypeError("ranktune.on_evaluate needs a function(split, batch_size), got %r" % (function,))
    _evaluate = function
    if not evaluating():
        return
    split = os.environ.get("RANKTUNE_EVAL_SPLIT", "test")
    sizes = _settings()["batch_sizes"]
    batch_size = max(sizes) if sizes else 128
    _send(_evaluation_line(function(split, batch_size), split))
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(0)
