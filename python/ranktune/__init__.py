"""Report metrics to ranktune from a training script (standard library only).

ranktune's command trainable starts one process per trial. The process reads its
hyperparameters with :func:`config` and reports one JSON object per iteration with
:func:`report`; every call is one step of the trial, which the scheduler may stop at any
time (SIGTERM, then SIGKILL after a grace period). Exiting with status 0 ends the trial.

Run outside ranktune, :func:`report` prints its JSON lines to stdout, so the same script
runs standalone; :func:`config` then needs ``RANKTUNE_CONFIG`` set by hand.

Example::

    import ranktune
    cfg = ranktune.config()
    for epoch in range(cfg.get("epochs", 10)):
        loss = train_one_epoch(lr=cfg["lr"])
        ranktune.report(loss=loss, epoch=epoch)
"""

import json
import math
import os
import sys

__all__ = ["config", "trial_id", "attempt", "report", "checkpoint_dir", "under_ranktune"]

_report_file = None


def under_ranktune():
    """True when this process was started by ranktune (``RANKTUNE_REPORT_FD`` is set)."""
    return "RANKTUNE_REPORT_FD" in os.environ


def config():
    """The trial's hyperparameters: a dict from parameter name to int, float or str.

    Raises RuntimeError when ``RANKTUNE_CONFIG`` is unset (not running under ranktune).
    """
    text = os.environ.get("RANKTUNE_CONFIG")
    if text is None:
        raise RuntimeError(
            "not running under ranktune: RANKTUNE_CONFIG is unset "
            "(set it to a JSON object, e.g. RANKTUNE_CONFIG='{\"lr\": 0.1}', to run standalone)")
    value = json.loads(text)
    if not isinstance(value, dict):
        raise RuntimeError("RANKTUNE_CONFIG is not a JSON object: %r" % text[:80])
    return value


def trial_id():
    """This trial's id (an int >= 1), or None when not running under ranktune."""
    value = os.environ.get("RANKTUNE_TRIAL_ID")
    return int(value) if value is not None else None


def attempt():
    """Which attempt of the trial this is (0 for the first), or None outside ranktune."""
    value = os.environ.get("RANKTUNE_ATTEMPT")
    return int(value) if value is not None else None


def checkpoint_dir():
    """The folder to save and restore checkpoints in, or None when there is none."""
    return os.environ.get("RANKTUNE_CHECKPOINT_DIR")


def _number(value):
    # JSON has no NaN or infinities; ranktune reads these spellings as non-finite numbers.
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if hasattr(value, "item"):  # numpy and torch scalars
        return _number(value.item())
    return value


def _output():
    global _report_file
    if _report_file is None:
        fd = os.environ.get("RANKTUNE_REPORT_FD")
        if fd is None:
            _report_file = sys.stdout
        else:
            # Opened once and kept for the life of the process; closefd=False leaves the
            # fd to the process, so an interpreter shutdown cannot close it twice.
            _report_file = open(int(fd), "w", buffering=1, encoding="utf-8", closefd=False)
    return _report_file


def report(**metrics):
    """Reports one iteration's metrics, e.g. ``report(loss=0.31, accuracy=0.9)``.

    Values should be numbers (floats, ints, numpy or torch scalars); NaN and infinities are
    allowed. Each call writes one JSON line and flushes it, and counts as one step.
    """
    if not metrics:
        raise ValueError("report() needs at least one metric, e.g. report(loss=0.5)")
    line = json.dumps({k: _number(v) for k, v in metrics.items()}, allow_nan=False)
    out = _output()
    out.write(line + "\n")
    out.flush()
