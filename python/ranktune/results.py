"""Read a ranktune results file (HDF5) into pandas DataFrames.

Example::

    import ranktune.results
    r = ranktune.results.load("quickstart.h5")
    best = r.best_trial()                       # a row of r.trials (a pandas Series)
    curve = r.results_wide[r.results_wide.trial_id == best.trial_id]
    print(best.trial_id, best.best, r.attrs["metric"], r.attrs["mode"])

:func:`load` returns a :class:`Results`, whose attributes are:

- ``trials``: one row per trial (``/trials``): ``trial_id``, ``status`` (``"TERMINATED"``...),
  ``attempt``, ``iterations``, ``best``, ``best_iteration``, ``last``, ``start_time``,
  ``end_time``, ``workers``, ``error``, ``log_tail`` (from ``/trial_texts`` in files of
  schema 3 and later, "" for a trial that has none), ``hosts`` (the hosts of ``workers``,
  comma-separated; absent in files written before ranktune recorded them), ``end_reason``
  (why it ended: ``"max_t"``, ``"stopped"`` by its scheduler, ``"done"``, ``"budget"`` cut by
  the time budget, ``"target"``, ``"user"``, ``"error"``; "" while it has not; in files from
  before ranktune recorded it, ``"error"`` or ``"stopped"`` where the status and events say so,
  else ``"unknown"``, as ``ranktune report`` gives it); in a multi-objective experiment,
  ``pareto_rank`` (0: on the Pareto front of the finished trials, 1 the next front, ...; -1:
  not ranked, as a running or failed trial) and ``objective:METRIC`` per objective (the value
  the trial is ranked by: its last result's); then one column per hyperparameter
  (their names are in ``params``; where a conditional parameter was inactive: NaN in a float
  column, ``<NA>`` in an integer one, "" in a string one).
- ``objectives``: the objectives' metric names of a multi-objective experiment (the
  ``objective:`` columns, in order), ``[]`` for one objective; :meth:`Results.front` gives the
  trials on the front.
- ``results_wide``: ``/results`` as stored: one row per trial, attempt and iteration, columns
  ``trial_id``, ``attempt``, ``iteration``, ``time`` and one per recorded metric (the names are
  in ``metrics``, the experiment's metric first; NaN where a line lacked the metric).
- ``results``: the same rows in long form, ``trial_id``, ``attempt``, ``iteration``, ``time``,
  ``metric``, ``value``: one row per wide row and metric, NaN values kept (``.dropna()``
  removes the metrics a line did not report).
- ``events``, ``workers``: ``/events`` and ``/workers``.
- ``checkpoints``: every row of ``/checkpoints``, live and dropped (``dropped`` is a bool; the
  bytes of a dropped one are gone). Rows of trial 0 (the experiment state in files written
  before ``/state``) are left out, as ranktune's own readers do.
- ``evaluations``: one row per metric of each ``ranktune eval`` (``eval_id``, ``trial_id``,
  ``iteration``, ``metric``, ``value``, and the run's ``created``, ``split``, ``device``);
  ``latency``: ``/evaluations/latency``; ``latency_split``: ``/evaluations/latency_split``
  (p50/p90/p99 of preprocessing, inference and postprocessing; NaN: not measured);
  ``trace``: ``/evaluations/trace`` (the timed batches, at most 1000 per trial and batch
  size); ``confusion``: ``/evaluations/confusion`` (every cell of each confusion matrix an
  evaluation manifest asked for). Each is an empty DataFrame (with those columns) when the
  file has none (a file from before the split and trace has no such rows: not measured).
- ``stack``: the ``/stack`` attributes (the software and hardware of the run), a dict of str.
- ``attrs``: the file's attributes (``experiment``, ``metric``, ``mode``, ``schema_version``,
  ``created``, ``created_unix``, ``config``, ...), a dict of str and int.

Fixed-length byte strings are decoded to ``str``. The file is opened for live reading
(HDF5 SWMR), so a file that a run is still writing can be loaded; :meth:`Results.refresh`
re-reads every table. A ``Results`` holds the file open: ``close()`` it, or use it in a
``with`` block, when you are done: while it is open, HDF5's file lock keeps writers out
(``ranktune run --resume`` and ``ranktune eval`` of the file are refused, saying so).

h5py and pandas (with numpy) are needed by :func:`load` only; ``import ranktune`` and this
module work without them.
"""

import os
import stat

__all__ = ["load", "Results"]

# /trials columns that are not hyperparameters (every schema version ranktune wrote).
_TRIAL_COLUMNS = ("trial_id", "status", "attempt", "iterations", "best", "best_iteration", "last", "start_time",
                  "end_time", "workers", "error", "log_tail", "hosts", "end_reason")
_PARETO_RANK = "pareto_rank"
_OBJECTIVE_PREFIX = "objective:"
_RESULT_KEYS = ("trial_id", "attempt", "iteration", "time")
_EVAL_COLUMNS = ("eval_id", "trial_id", "iteration", "metric", "value", "created", "split", "device")
_CONFUSION_COLUMNS = ("eval_id", "trial_id", "iteration", "true_label", "predicted", "count")
_LATENCY_COLUMNS = ("eval_id", "trial_id", "iteration", "batch_size", "batches", "mean_ms", "p50_ms", "p90_ms",
                    "p99_ms", "max_ms", "samples_per_s")
_SPLIT_COLUMNS = ("eval_id", "trial_id", "iteration", "batch_size") + tuple(
    "%s_p%d_ms" % (part, p) for part in ("pre", "inference", "post") for p in (50, 90, 99))
_TRACE_COLUMNS = ("eval_id", "trial_id", "iteration", "batch_size", "batch", "start_ms", "total_ms", "pre_ms",
                  "inference_ms", "post_ms")


def _import_dependencies():
    # Imported here, not at module level, so that `import ranktune` (which training scripts
    # do on workers without h5py or pandas) never needs them.
    missing = []
    modules = {}
    for name in ("numpy", "pandas", "h5py"):
        try:
            modules[name] = __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        debian = " ".join("python3-" + m for m in missing)
        raise ImportError(
            "ranktune.results.load needs %s, which %s not installed: install it with "
            "`apt-get install %s` (Debian, Ubuntu) or `pip install %s`"
            % (", ".join(missing), "is" if len(missing) == 1 else "are", debian, " ".join(missing)))
    return modules["numpy"], modules["pandas"], modules["h5py"]


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


def _scalar(value):
    """An HDF5 attribute as a plain Python value (bytes to str, numpy scalars to int/float)."""
    value = _text(value)
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        value = _text(value.item())
    return value


def _fail_fast_fapl(h5py):
    """A file-access property list on which a metadata checksum failure fails at once.

    Under SWMR read, HDF5 retries a failed metadata checksum (a reader may catch a writer
    mid-flush) for minutes by default; ranktune's own reader allows two attempts
    (io/results_reader.cc), and so does this one. h5py does not expose
    H5Pset_metadata_read_attempts, so it is called through ctypes in the libhdf5 that h5py
    loaded; where that library cannot be found, HDF5's default stays.
    """
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    # h5py's own defaults: HDF5 refuses a second open of the same file (say, by h5py.File
    # while a Results holds it) with another close degree or other version bounds.
    fapl.set_libver_bounds(h5py.h5f.LIBVER_EARLIEST, h5py.h5f.LIBVER_LATEST)
    try:
        import ctypes
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "/libhdf5" in line}
        libs = [p for p in sorted(paths) if "_hl" not in os.path.basename(p) and ".so" in os.path.basename(p)]
        if len(libs) == 1:
            attempts = ctypes.CDLL(libs[0]).H5Pset_metadata_read_attempts
            attempts.argtypes = [ctypes.c_int64, ctypes.c_uint]
            attempts.restype = ctypes.c_int
            attempts(fapl.id, 2)
    except (OSError, AttributeError):
        pass
    return fapl


def load(path):
    """Open the results file at ``path`` and read all its tables (see :class:`Results`).

    Raises ImportError when h5py or pandas is missing, FileNotFoundError when ``path`` does
    not exist, and ValueError (naming the path and what is wrong) when it is not a readable
    ranktune results file: not a regular file (a FIFO, a folder: refused at once, before HDF5
    could wait on it), not HDF5, truncated or damaged, or an HDF5 file of another program.
    """
    return Results(path)


class Results:
    """The tables of one results file as pandas DataFrames (see the module's documentation)."""

    def __init__(self, path):
        self._np, self._pd, self._h5py = _import_dependencies()
        self.path = str(path)
        self._file = None
        self._open()
        try:
            self.refresh()
        except BaseException:
            self.close()
            raise

    # -- opening ---------------------------------------------------------------------------

    def _open(self):
        h5py = self._h5py
        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            raise FileNotFoundError("%s: no such file" % self.path) from None
        if not stat.S_ISREG(mode):
            # HDF5 would open a FIFO and wait on it for ever (and a device is no file either):
            # refused before HDF5 sees it, as ranktune's own readers do.
            kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a folder" if stat.S_ISDIR(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                    else "not a regular file")
            raise ValueError("%s is %s, not a results file (a regular HDF5 file): give the path of the .h5 file"
                             % (self.path, kind))
        fapl = _fail_fast_fapl(h5py)
        opened = None
        # SWMR read first: it sees what a writing run has flushed, and refresh() sees more. A
        # file written without SWMR's file format (e.g. rewritten by h5repack) still reads
        # without it when no run writes it.
        for flags in (h5py.h5f.ACC_RDONLY | h5py.h5f.ACC_SWMR_READ, h5py.h5f.ACC_RDONLY):
            try:
                opened = h5py.File(h5py.h5f.open(os.fsencode(self.path), flags, fapl=fapl))
                break
            except OSError as error:
                failure = error
        if opened is None:
            raise ValueError("%s: not a readable HDF5 file (not HDF5, truncated or damaged): %s"
                             % (self.path, failure)) from None
        self._file = f = opened
        if "schema_version" not in f.attrs:
            self.close()
            raise ValueError("%s: not a ranktune results file: no schema_version attribute" % self.path)
        for name in ("trials", "results"):
            if not isinstance(f.get(name), h5py.Dataset):
                self.close()
                raise ValueError("%s: not a ranktune results file: no /%s table" % (self.path, name))

    def close(self):
        """Close the HDF5 file; the DataFrames already read stay usable."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return "<ranktune.results %s: %d trials, %d result rows>" % (self.path, len(self.trials),
                                                                      len(self.results_wide))

    # -- reading ---------------------------------------------------------------------------

    def _rows(self, name):
        """The rows of dataset ``name`` as a structured numpy array, or None when absent."""
        try:
            ds = self._file.get(name)
        except OSError as error:
            raise ValueError("%s: /%s cannot be read (damaged file?): %s" % (self.path, name, error)) from None
        if ds is None:
            return None
        if not isinstance(ds, self._h5py.Dataset) or ds.dtype.names is None:
            raise ValueError("%s: not a ranktune results file: /%s is not a table" % (self.path, name))
        try:
            if self._file.swmr_mode:
                ds.refresh()  # the extent and rows a writer flushed since the last read
            return ds[()]
        except OSError as error:
            raise ValueError("%s: /%s cannot be read (truncated or damaged file?): %s"
                             % (self.path, name, error)) from None

    def _frame(self, rows, columns=None):
        pd = self._pd
        if rows is None:
            return pd.DataFrame({c: [] for c in (columns or ())})
        data = {}
        for name in rows.dtype.names:
            column = rows[name]
            if column.dtype.kind == "S":
                column = [v.decode("utf-8", errors="replace") for v in column.tolist()]
            data[name] = column
        return pd.DataFrame(data, columns=list(rows.dtype.names))

    def _events(self, rows):
        """/events, with the rows of kind "continued" joined onto the message before them
        (ranktune splits a message longer than a row, such as a PBT lineage of many
        parameters, into several rows)."""
        columns = ("time", "trial_id", "worker", "kind", "message")
        if rows is None or len(rows) == 0 or "kind" not in rows.dtype.names or "message" not in rows.dtype.names:
            return self._frame(rows, columns)
        continued = rows["kind"] == b"continued"
        if not continued.any():
            return self._frame(rows, columns)
        messages = rows["message"].tolist()
        keep = []
        for i in range(len(rows)):
            if (continued[i] and keep and rows["time"][i] == rows["time"][keep[-1]]
                    and rows["trial_id"][i] == rows["trial_id"][keep[-1]]):
                messages[keep[-1]] += messages[i]
                continue
            keep.append(i)
        frame = self._frame(rows[keep], columns)
        frame["message"] = [messages[i].decode("utf-8", errors="replace") for i in keep]
        return frame

    def _with_texts(self, trials):
        """``trials`` with its ``error`` and ``log_tail`` columns, where files of schema 1 and
        2 have them. Later files keep them in ``/trial_texts``, one row each time a trial's
        texts change: a trial's last row there holds them, and a trial without one has none."""
        texts = self._rows("trial_texts")
        if texts is None or "error" in trials.columns:
            return trials
        last = self._frame(texts).drop_duplicates("trial_id", keep="last").set_index("trial_id")
        at = list(trials.columns).index("workers") + 1 if "workers" in trials.columns else len(trials.columns)
        for offset, name in enumerate(("error", "log_tail")):
            values = trials["trial_id"].map(last[name]) if name in last.columns else None
            column = [v if isinstance(v, str) else "" for v in values] if values is not None else [""] * len(trials)
            trials.insert(at + offset, name, column)
        return trials

    def _with_end_reasons(self, trials, events):
        """``trials`` with an ``end_reason`` for every ended trial: as /trials has it, else what
        the events tell (io/results_reader.cc derives it the same way): an ERROR failed, an
        early_stop was its scheduler's, the rest is "unknown". A file from before the column
        gets it after ``hosts`` (or ``log_tail``)."""
        if "end_reason" not in trials.columns:
            at = len(trials.columns)
            for name in ("hosts", "log_tail", "workers"):
                if name in trials.columns:
                    at = list(trials.columns).index(name) + 1
                    break
            trials.insert(at, "end_reason", [""] * len(trials))
        stopped = set()
        if len(events) and "kind" in events.columns:
            stopped = set(events.loc[events["kind"] == "early_stop", "trial_id"].tolist())
        reasons = []
        for status, trial_id, reason in zip(trials["status"], trials["trial_id"], trials["end_reason"]):
            if status in ("TERMINATED", "ERROR") and not reason:
                reason = "error" if status == "ERROR" else "stopped" if trial_id in stopped else "unknown"
            reasons.append(reason)
        trials["end_reason"] = reasons
        return trials

    def refresh(self):
        """Re-read every table and attribute (a running experiment adds rows as it flushes)."""
        if self._file is None:
            raise ValueError("%s: the results file is closed" % self.path)
        np, pd = self._np, self._pd
        f = self._file
        # Attributes are written before SWMR writing starts (HDF5 1.10 needs it), so what
        # is read here does not change while a run writes.
        self.attrs = {k: _scalar(v) for k, v in f.attrs.items()}
        stack = f.get("stack")
        self.stack = {k: _scalar(v) for k, v in stack.attrs.items()} if stack is not None else {}

        trials = self._frame(self._rows("trials"))
        if "trial_id" not in trials.columns:
            raise ValueError("%s: not a ranktune results file: /trials has no trial_id column" % self.path)
        # A row whose trial_id is 0 was never written (a live file may show the extent of a
        # batch before its rows); it is no trial.
        self.trials = self._with_texts(trials[trials["trial_id"] > 0].reset_index(drop=True))
        # A multi-objective experiment's pareto_rank and objective:METRIC are no hyperparameters.
        self.params = [c for c in self.trials.columns
                       if c not in _TRIAL_COLUMNS and c != _PARETO_RANK and not c.startswith(_OBJECTIVE_PREFIX)]
        self.objectives = [c[len(_OBJECTIVE_PREFIX):] for c in self.trials.columns if c.startswith(_OBJECTIVE_PREFIX)]
        # A conditional parameter inactive in a trial is stored as the int64 minimum in an
        # integer column: shown as missing (pandas' nullable Int64), as NaN is in a float one.
        for name in self.params:
            column = self.trials[name]
            if column.dtype.kind == "i" and (column == np.iinfo(np.int64).min).any():
                self.trials[name] = column.where(column != np.iinfo(np.int64).min).astype("Int64")

        wide = self._frame(self._rows("results"))
        missing = [k for k in _RESULT_KEYS if k not in wide.columns]
        if missing:
            raise ValueError("%s: not a ranktune results file: /results lacks %s" % (self.path, ", ".join(missing)))
        self.results_wide = wide[wide["trial_id"] > 0].reset_index(drop=True)
        self.metrics = [c for c in self.results_wide.columns if c not in _RESULT_KEYS]
        self.results = self._long(self.results_wide)

        self.events = self._events(self._rows("events"))
        self.trials = self._with_end_reasons(self.trials, self.events)
        self.workers = self._frame(self._rows("workers"), ("rank", "host", "local_index", "device", "device_name"))

        checkpoints = self._frame(self._rows("checkpoints"),
                                  ("trial_id", "attempt", "iteration", "time", "offset", "size", "crc32c", "score",
                                   "dropped"))
        if "score" not in checkpoints.columns:  # schema 1
            checkpoints["score"] = np.nan
        checkpoints["dropped"] = (checkpoints["dropped"].astype(bool) if "dropped" in checkpoints.columns
                                  else False)
        if "trial_id" in checkpoints.columns:
            checkpoints = checkpoints[checkpoints["trial_id"] > 0]
        self.checkpoints = checkpoints.reset_index(drop=True)

        runs = self._frame(self._rows("evaluations/runs"))
        metrics = self._frame(self._rows("evaluations/metrics"), _EVAL_COLUMNS[:5])
        if len(runs.columns):
            keep = [c for c in ("eval_id", "created", "split", "device") if c in runs.columns]
            metrics = metrics.merge(runs[keep], on="eval_id", how="left")
        else:
            for c in _EVAL_COLUMNS[5:]:
                metrics[c] = pd.Series(dtype=object)
        self.evaluations = metrics
        self.latency = self._frame(self._rows("evaluations/latency"), _LATENCY_COLUMNS)
        self.latency_split = self._frame(self._rows("evaluations/latency_split"), _SPLIT_COLUMNS)
        self.trace = self._frame(self._rows("evaluations/trace"), _TRACE_COLUMNS)
        self.confusion = self._frame(self._rows("evaluations/confusion"), _CONFUSION_COLUMNS)
        return self

    def _long(self, wide):
        """``results_wide`` melted to one row per (row, metric), in the file's row order."""
        np, pd = self._np, self._pd
        n, m = len(wide), len(self.metrics)
        data = {k: np.repeat(wide[k].to_numpy(), m) for k in _RESULT_KEYS}
        data["metric"] = np.tile(np.array(self.metrics, dtype=object), n)
        values = wide[self.metrics].to_numpy(dtype=float) if m else np.empty((n, 0))
        data["value"] = values.reshape(-1)
        return pd.DataFrame(data, columns=list(_RESULT_KEYS) + ["metric", "value"])

    # -- analysis --------------------------------------------------------------------------

    def best_trial(self):
        """The best trial's row of ``trials`` (a pandas Series), or None if no trial has a value.

        The configuration ranktune recommends, as ``ranktune report`` ranks (the rule of
        ``search/recommend.h``): among the trials with a finite ``best`` that did not fail, those
        that reached the most ``iterations`` any of them reached (max_t once a trial ran its
        course: a trial a scheduler stopped early does not compete with the ones trained
        longest), the best value by the file's ``metric`` and ``mode``, ties to the lowest
        trial_id. A trial whose status is ERROR only when no other trial has a value.
        """
        mode = self.attrs.get("mode", "min")
        if mode not in ("min", "max"):
            raise ValueError("%s: the mode attribute is %r, not min or max" % (self.path, mode))
        if "best" not in self.trials.columns:
            return None
        finite = self.trials[self._np.isfinite(self.trials["best"].to_numpy(dtype=float))]
        if finite.empty:
            return None
        error = finite["status"] == "ERROR"
        deepest = finite.loc[~error, "iterations"].max() if (~error).any() else 0
        ordered = finite.assign(_error=error, _shallow=(finite["iterations"] < deepest) & ~error).sort_values(
            ["_error", "_shallow", "best", "trial_id"], ascending=[True, True, mode == "min", True], kind="stable")
        return ordered.drop(columns=["_error", "_shallow"]).iloc[0]

    def front(self):
        """The trials on the Pareto front of a multi-objective experiment: the rows of ``trials``
        whose ``pareto_rank`` is 0 (as ``ranktune report`` lists them), in trial_id order.

        The ranks are the ones ranktune computed (Deb's constrained non-dominated sort of the
        finished trials by their last results, ``objective:METRIC``). Raises ValueError for a
        file of one objective, which has no ``pareto_rank`` column.
        """
        if _PARETO_RANK not in self.trials.columns:
            raise ValueError("%s: not a multi-objective experiment (metric %s): /trials has no pareto_rank column"
                             % (self.path, self.attrs.get("metric")))
        return self.trials[self.trials[_PARETO_RANK] == 0].reset_index(drop=True)

    def curve(self, trial_id, metric=None):
        """One trial's rows of ``results_wide`` (every attempt, in iteration order) for plotting:
        columns ``attempt``, ``iteration``, ``time`` and the metric (the file's by default)."""
        metric = metric or self.attrs.get("metric")
        if metric not in self.metrics:
            raise ValueError("%s: no metric %r in /results (it has %s)" % (self.path, metric, ", ".join(self.metrics)))
        rows = self.results_wide[self.results_wide["trial_id"] == trial_id]
        return rows[["attempt", "iteration", "time", metric]].sort_values(["iteration", "attempt"],
                                                                          kind="stable").reset_index(drop=True)
