"""Report metrics to ranktune from a training script (standard library only).

ranktune's command trainable starts one process per trial (one per rank for a gang of
``ranks_per_trial`` ranks). The process reads its hyperparameters with :func:`config` and
reports one JSON object per iteration with :func:`report`; every call is one step of the
trial. Exiting with status 0 ends the trial. When the scheduler stops or pauses the trial,
:func:`should_stop` turns True and :func:`report` returns without waiting: finish the epoch,
save if you like, and exit 0 within ``[trainable] stop_grace_s`` (30 s by default), after
which the process gets SIGTERM. A script that reports again after the stop is ended (exit 0)
by that call.

DDP: every process of a gang gets torchrun's variables (:func:`distributed_env`), so
``torch.distributed.init_process_group("gloo")`` (or ``"nccl"``) needs no other set-up.
Every rank may report; rank 0's reports are the trial's (:func:`is_leader`), and only rank 0
is asked to save. The protocol is ``docs/command_protocol.md`` (version 2).

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
        if ranktune.should_stop():
            break

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
import select
import sys

# The client's version, its one place: pyproject.toml reads it, and it matches the ranktune
# binary's (`ranktune --version`, CMakeLists.txt's project version; tests/cli/python_results.sh checks).
__version__ = "0.1.0"

__all__ = ["config", "trial_id", "attempt", "iteration", "report", "checkpoint_dir", "restored", "on_save",
           "under_ranktune", "should_stop", "distributed_env", "is_leader"]
__all__ += ["evaluating", "on_evaluate", "time_inference"]  # held-out evaluation: evaluation.py
from .evaluation import evaluating, on_evaluate, time_inference  # noqa: E402

# The protocol version this helper speaks (docs/command_protocol.md).
PROTOCOL = 2

# torchrun's variables, which ranktune sets for every process of a command trial.
_DISTRIBUTED = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK", "MASTER_ADDR",
                "MASTER_PORT")

_report_file = None
_control_file = None
_save = None
_reported = 0  # reports made by this process: iteration() counts from RANKTUNE_ITERATION
_said_hello = False
_stopping = False  # ranktune answered "stop"


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


def should_stop():
    """True once ranktune decided to stop or pause this trial (its scheduler, the time
    budget, ``ranktune ctl stop``, the end of the run). From then on :func:`report` returns
    without waiting: finish what you are doing, save if you want, and exit with status 0
    within ``[trainable] stop_grace_s``. In a gang every rank gets the same answer after the
    same report. Always False outside ranktune."""
    if _stopping:
        return True
    if not _speaks_v2():
        return False
    _hello()
    # ranktune answers only after reports, which report() reads; a line waiting now can
    # only be a stop that came another way.
    fd = int(os.environ["RANKTUNE_CONTROL_FD"])
    try:
        ready, _, _ = select.select([fd], [], [], 0)
    except (OSError, ValueError):
        return False
    if ready:
        _answer(_control().readline(), _output())
    return _stopping


def distributed_env():
    """torchrun's variables for this process, as ranktune set them: RANK, WORLD_SIZE,
    LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, NODE_RANK, MASTER_ADDR and MASTER_PORT (a dict
    of strings, as in ``os.environ``). A trial of one rank is a world of one. Empty outside
    ranktune, unless they are set by hand."""
    return {k: os.environ[k] for k in _DISTRIBUTED if k in os.environ}


def is_leader():
    """True for rank 0 of a gang (whose reports are the trial's, and who is asked to save),
    for a trial of one rank, and outside ranktune."""
    return os.environ.get("RANK", "0") == "0"


def _speaks_v2():
    try:
        version = int(os.environ.get("RANKTUNE_PROTOCOL", "1"))
    except ValueError:
        return False
    return version >= 2 and "RANKTUNE_REPORT_FD" in os.environ and "RANKTUNE_CONTROL_FD" in os.environ


def _hello():
    # Said once, before the first report: ranktune then answers every report, and asks this
    # process to stop rather than signalling it. Not at import: a process that only imports
    # this module (a DataLoader worker) must not write on the trial's fds.
    global _said_hello
    if _said_hello:
        return
    _said_hello = True
    out = _output()
    out.write('{"ranktune": "hello", "protocol": %d}\n' % PROTOCOL)
    out.flush()


def _control():
    global _control_file
    if _control_file is None:
        _control_file = open(int(os.environ["RANKTUNE_CONTROL_FD"]), "r", encoding="utf-8", closefd=False)
    return _control_file


def _answer(line, out):
    """Carries out one answer of ranktune's; True when it was "save" (another follows)."""
    global _stopping
    if not line or line == "continue\n":
        return False  # "" (ranktune closed the socket): it is about to stop this process
    if line == "stop\n":
        _stopping = True
        return False
    if line != "save\n":
        raise RuntimeError("unexpected line on RANKTUNE_CONTROL_FD: %r" % line)
    if _save is None:
        raise RuntimeError("ranktune asked for a checkpoint, but no save function was registered "
                           "with ranktune.on_save()")
    _save(checkpoint_dir())
    out.write('{"ranktune": "saved"}\n')
    out.flush()
    return True


def _wait_for_ranktune(out):
    # After each report ranktune answers "continue", "save" or "stop"; waiting here keeps
    # the program from running ahead, so a save holds exactly the iteration just reported,
    # and the ranks of a gang stop after the same report.
    while _answer(_control().readline(), out):
        pass


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
    allowed. Each call writes one JSON line and flushes it, and counts as one step. Under
    ranktune it then waits for ranktune's answer (which may be a request to save, see
    :func:`on_save`), except once :func:`should_stop` is True. A report after the stop ends
    the process with status 0: the script did not look at :func:`should_stop`.
    """
    if not metrics:
        raise ValueError("report() needs at least one metric, e.g. report(loss=0.5)")
    line = json.dumps({k: _number(v) for k, v in metrics.items()}, allow_nan=False)
    if _stopping:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.exit(0)
    v2 = _speaks_v2()
    if v2:
        _hello()
    out = _output()
    out.write(line + "\n")
    out.flush()
    global _reported
    _reported += 1
    # Version 1 answered only programs that speak checkpoints.
    if v2 or ("RANKTUNE_CONTROL_FD" in os.environ and checkpoint_dir()):
        _wait_for_ranktune(out)
