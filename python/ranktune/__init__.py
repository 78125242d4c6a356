"""Report metrics to ranktune from a training script (standard library only).

ranktune's command trainable starts one process per trial. The process reads its
hyperparameters with :func:`config` and reports one JSON object per iteration with
:func:`report`; every call is one step of the trial, which the scheduler may stop at any
time (SIGTERM, then SIGKILL after a grace period). Exiting with status 0 ends the trial.

Run outside ranktune, :func:`report` prints its JSON lines to stdout, so the same script
runs standalone; :func:`config` then needs ``RANKTUNE_CONFIG`` set by hand, and
``import ranktune`` needs this package's folder on ``PYTHONPATH``
(``/usr/local/share/ranktune/python`` when installed, ``python/`` in a checkout), or the
package installed with ``pip install ./python``; ranktune adds the folder for the commands
it starts.

Reading a results file into pandas DataFrames is :mod:`ranktune.results`
(``ranktune.results.load(path)``), which needs h5py and pandas; this module needs only the
standard library.

:func:`iteration` is the iteration the next report will be, as ranktune counts (after a
resume or a PBT exploit it is not the step a checkpoint may hold).

Example::

    import ranktune
    cfg = ranktune.config()
    for epoch in range(cfg.get("epochs", 10)):
        loss = train_one_epoch(lr=cfg["lr"])
        ranktune.report(loss=loss, epoch=epoch)

Checkpoints (``[trainable] checkpoint = true``): register a function that writes the
trial's state into a folder with :func:`on_save`, and load it at start when
:func:`restored` is true. :func:`report` then waits after each line for ranktune's answer
on ``RANKTUNE_CONTROL_FD`` and calls the function when ranktune asks for a checkpoint::

    state_file = os.path.join(ranktune.checkpoint_dir(), "state.json")
    state = json.load(open(state_file)) if ranktune.restored() else {"epoch": 0}
    ranktune.on_save(lambda folder: json.dump(state, open(os.path.join(folder, "state.json"), "w")))
"""

import json
import math
import os
import sys

# The client's version, its one place: pyproject.toml reads it, and it matches the ranktune
# binary's (`ranktune --version`, CMakeLists.txt's project version; tests/cli/python_results.sh checks).
__version__ = "0.1.0"

__all__ = ["config", "trial_id", "attempt", "iteration", "report", "checkpoint_dir", "restored", "on_save",
           "under_ranktune"]
__all__ += ["evaluating", "on_evaluate", "time_inference"]  # held-out evaluation: evaluation.py
from .evaluation import evaluating, on_evaluate, time_inference  # noqa: E402

_report_file = None
_control_file = None
_save = None
_reported = 0  # reports made by this process: iteration() counts from RANKTUNE_ITERATION


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


def iteration():
    """The iteration that this process's next :func:`report` will be, as ranktune counts:
    1 for a fresh start, the checkpoint's iteration + 1 after a resume, and the trial's own
    count + 1 after a PBT exploit (the state came from a donor, the count did not). Each
    :func:`report` adds one. None outside ranktune.

    Count your steps with it rather than with a step stored in the checkpoint: after an
    exploit the donor's stored step belongs to another trial's history."""
    value = os.environ.get("RANKTUNE_ITERATION")
    return int(value) + _reported if value is not None else None


def checkpoint_dir():
    """The folder to save and restore checkpoints in, or None when there is none."""
    return os.environ.get("RANKTUNE_CHECKPOINT_DIR")


def restored():
    """True when this attempt starts from a checkpoint: :func:`checkpoint_dir` holds the
    files that the save function wrote (for this trial, or for a PBT donor)."""
    folder = checkpoint_dir()
    return bool(folder) and os.path.isdir(folder) and bool(os.listdir(folder))


def on_save(function):
    """Registers ``function(folder)``, which writes the state after the iteration just
    reported into ``folder`` (replacing what an earlier save left there). ranktune calls it
    through :func:`report` when it needs a checkpoint, then packs the folder."""
    global _save
    _save = function


def _control():
    global _control_file
    if _control_file is None:
        _control_file = open(int(os.environ["RANKTUNE_CONTROL_FD"]), "r", encoding="utf-8", closefd=False)
    return _control_file


def _wait_for_ranktune(out):
    # After each report ranktune answers "continue" or "save"; waiting here keeps the
    # program from running ahead, so a save holds exactly the iteration just reported.
    while True:
        line = _control().readline()
        if not line or line == "continue\n":
            return  # "" (ranktune closed the socket): it is about to stop this process
        if line != "save\n":
            raise RuntimeError("unexpected line on RANKTUNE_CONTROL_FD: %r" % line)
        if _save is None:
            raise RuntimeError("ranktune asked for a checkpoint, but no save function was registered "
                               "with ranktune.on_save()")
        _save(checkpoint_dir())
        out.write('{"ranktune": "saved"}\n')
        out.flush()


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
    global _reported
    _reported += 1
    if "RANKTUNE_CONTROL_FD" in os.environ:
        _wait_for_ranktune(out)
