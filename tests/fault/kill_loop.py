"""kill -9 loop: runs an experiment under a real mpirun, SIGKILLs it at random moments, and
resumes it each time, checking the results file after every kill (see tests/fault/README.md).

usage: kill_loop.py RANKTUNE CONFIG RESULTS LOGDIR --seed S --kills N --np P --trials T --max-t M

A kill is aimed in one of two ways, drawn per kill from the seeded generator:
  anytime  after a uniform delay once the writer has the file open: mostly lands while
           trials step (rank 0 polls MPI), sometimes inside a flush;
  write    after a shorter delay, rank 0's write-syscall counter (/proc/PID/io syscw) is
           watched and the kill follows its 1st..6th increase within ~0.1 ms: rank 0 writes
           almost only the results file (group-commit flushes, checkpoint bytes, trial-row
           rewrites, H5Fflush's metadata), so these kills land inside those write sequences.
and hits either rank 0 alone (Open MPI then ends the job) or the whole job: mpirun and every
rank, each by its pid (Open MPI puts each rank in a process group of its own, so a signal to
mpirun's group would leave the ranks running, rank 0 still writing the file).

Before each kill, a SWMR reader (h5py swmr=True, as docs/guide/failures.md tells users) records what the
file holds; every row seen then must still be there after the kill, after the next resume
mends the file, and at the end. A replay with the same --seed makes the same choices; the
moments still vary with the machine's timing, so a failure that depends on an exact moment
may need a few replays.
"""
import argparse
import collections
import os
import random
import signal
import subprocess
import sys
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from crc32c import crc32c  # noqa: E402

TABLES = ("results", "events", "checkpoints", "trials")




class Failure(Exception):
    pass


def read_file(path):
    """Every table and /checkpoint_data, through a SWMR reader (works on a file whose writer
    is alive or was killed; raises on a file that does not open)."""
    with h5py.File(path, "r", libver="latest", swmr=True) as f:
        tables = {name: f[name][:] for name in TABLES}
        tables["checkpoint_data"] = f["checkpoint_data"][:].tobytes()
        tables["state"] = f["state"][:]
        tables["state_data"] = f["state_data"][:].tobytes()
    return tables


def newest_state(tables):
    """The newest /state row whose bytes lie inside /state_data (the one a resume reads; a row
    past them is one a crash tore), or None."""
    data, best = tables["state_data"], None
    for r in tables["state"]:
        if r["sequence"] >= 1 and r["offset"] >= 0 and int(r["offset"]) + int(r["size"]) <= len(data):
            if best is None or r["sequence"] > best["sequence"]:
                best = r
    return best


def without_dropped(rows):
    """/checkpoints rows with the `dropped` flag cleared: the one column that a later flush
    may change in a committed row (retention drops it, 0 -> 1, never back)."""
    rows = rows.copy()
    rows["dropped"] = 0
    return rows


def check_kept(before, after, where):
    """Everything `before` held (a snapshot, or the file after an earlier kill) is in `after`."""
    for name in ("results", "events"):
        b, a = before[name], after[name]
        if len(a) < len(b):
            raise Failure(f"{where}: /{name} lost rows: {len(b)} before, {len(a)} after")
        if a[: len(b)].tobytes() != b.tobytes():
            first = next(i for i in range(len(b)) if a[i].tobytes() != b[i].tobytes())
            raise Failure(f"{where}: /{name} row {first} changed: {b[first]} -> {a[first]}")
    b, a = before["checkpoints"], after["checkpoints"]
    if len(a) < len(b):
        raise Failure(f"{where}: /checkpoints lost rows: {len(b)} before, {len(a)} after")
    if without_dropped(a[: len(b)]).tobytes() != without_dropped(b).tobytes():
        raise Failure(f"{where}: a committed /checkpoints row changed")
    if np.any(a["dropped"][: len(b)] < b["dropped"]):
        raise Failure(f"{where}: a dropped checkpoint came back")
    b, a = before["state"], after["state"]
    if len(a) < len(b) or a[: len(b)].tobytes() != b.tobytes():
        raise Failure(f"{where}: /state lost or changed a committed row: {len(b)} before, {len(a)} after")
    # /trials is rewritten in place: a trial seen must stay, and a finished one unchanged.
    after_trials = {int(r["trial_id"]): r for r in after["trials"] if r["trial_id"] != 0}
    for r in before["trials"]:
        tid = int(r["trial_id"])
        if tid == 0:
            continue
        if tid not in after_trials:
            raise Failure(f"{where}: trial {tid} disappeared from /trials")
        if r["status"] in (b"TERMINATED", b"ERROR") and after_trials[tid].tobytes() != r.tobytes():
            raise Failure(f"{where}: finished trial {tid} changed: {r} -> {after_trials[tid]}")


def check_checkpoints(tables, committed, where):
    """Every live checkpoint row points at bytes that pass its CRC-32C. A row whose range lies
    past /checkpoint_data is one a crash tore (its bytes never reached the file; resume skips
    it): allowed only for rows nobody had seen committed."""
    data = tables["checkpoint_data"]
    seen = len(committed["checkpoints"]) if committed else 0
    torn = 0
    states = 0  # live, intact rows of trial 0 (the searcher's and scheduler's state)
    for i, r in enumerate(tables["checkpoints"]):
        if r["dropped"] or r["offset"] < 0:
            continue
        end = int(r["offset"]) + int(r["size"])
        if end > len(data):
            if i < seen:
                raise Failure(f"{where}: committed checkpoint row {i} (trial {r['trial_id']}, iteration "
                              f"{r['iteration']}) lost its bytes: ends at {end}, data has {len(data)}")
            torn += 1
            continue
        if crc32c(data[int(r["offset"]):end]) != int(r["crc32c"]):
            raise Failure(f"{where}: live checkpoint row {i} (trial {r['trial_id']}, iteration "
                          f"{r['iteration']}) fails its CRC-32C: its bytes were overwritten or never written")
        states += r["trial_id"] == 0
    # The experiment state (/state): only the newest is read, and the bytes of older ones are
    # reused, so the newest intact row must pass its CRC-32C and be no older than one seen.
    newest = newest_state(tables)
    if newest is not None:
        data = tables["state_data"]
        if crc32c(data[int(newest["offset"]):int(newest["offset"]) + int(newest["size"])]) != int(newest["crc32c"]):
            raise Failure(f"{where}: the newest experiment state ({newest['sequence']}) fails its CRC-32C: its bytes "
                          f"were overwritten or never written")
        states += 1
    seen = newest_state(committed) if committed is not None else None
    if seen is not None and (newest is None or newest["sequence"] < seen["sequence"]):
        raise Failure(f"{where}: the experiment state went back from {seen['sequence']} to "
                      f"{None if newest is None else newest['sequence']}; /state has {len(tables['state'])} rows")
    # Without a state, a resume starts the searcher over and samples trials again.
    if committed is not None and states == 0 and np.any(committed["checkpoints"]["trial_id"] == 0):
        rows = tables["checkpoints"][tables["checkpoints"]["trial_id"] == 0][-3:]
        raise Failure(f"{where}: no live, intact experiment state (trial 0) left; the newest rows: {rows}, "
                      f"/checkpoint_data has {len(data)} bytes")
    return torn


def descendants(root):
    """Pids of every process below `root`, from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def alive(pid):
    """Whether `pid` runs (a zombie does not: it holds no file open)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill_all(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def rank0_of(mpirun_pid):
    for pid in descendants(mpirun_pid):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if b"OMPI_COMM_WORLD_RANK=0" in f.read().split(b"\0"):
                    return pid
        except OSError:
            continue
    return None


def write_syscalls(pid):
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("syscw:"):
                return int(line.split()[1])
    raise OSError("no syscw")


class Run:
    """One `mpirun ... ranktune run --resume` in its own session (process group)."""

    def __init__(self, args, index):
        self.log_path = os.path.join(args.logdir, f"run{index}.txt")
        self.log = open(self.log_path, "wb")
        cmd = ["mpirun", "-np", str(args.np), "--bind-to", "none", args.ranktune, "run", args.config,
               "--results", args.results, "--resume"]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.started = time.monotonic()

    def tail(self, lines=30):
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])

    def ended(self):
        return self.proc.poll() is not None

    def writer_up(self, results, fresh, timeout):
        """Waits until rank 0 holds the file for SWMR writing: it prints "resuming" after
        opening an existing file; a fresh file exists once it is created."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ended():
                return False
            with open(self.log_path, errors="replace") as f:
                text = f.read()
            if ("ranktune: resuming" in text) if not fresh else os.path.exists(results):
                return True
            time.sleep(0.005)
        raise Failure(f"rank 0 did not open the results file within {timeout} s:\n{self.tail()}")

    def wait_gone(self, job, timeout=30):
        """Waits until mpirun and every process of `job` (pids taken before the kill) are gone:
        the next run must not start while a rank of this one still writes the file."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            kill_all(job)
            self.proc.wait()
            raise Failure(f"mpirun did not end within {timeout} s after rank 0 was killed:\n{self.tail()}")
        deadline = time.monotonic() + timeout
        while any(alive(pid) for pid in job):
            if time.monotonic() > deadline:
                kill_all(job)
                raise Failure(f"ranks {[p for p in job if alive(p)]} were still alive {timeout} s after mpirun ended")
            time.sleep(0.01)
        self.log.close()


def report(args, where):
    out = subprocess.run([args.ranktune, "report", args.results, "--format", "json", "--top", "0"],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise Failure(f"{where}: `ranktune report` exited {out.returncode}: {out.stderr.strip()}")


def snapshot(path, fallback):
    """What a live SWMR reader sees now; `fallback` (an older, still valid lower bound) when
    the file cannot be read at this instant."""
    try:
        return read_file(path)
    except Exception:  # noqa: BLE001 - any read error here only means "no newer snapshot"
        return fallback


def aim_and_kill(run, rank0, rng, args, committed):
    """Sleeps, snapshots, kills as this kill's aim says (and sets run.killed_at). Returns
    (aim, target, snapshot, job): `job` is every pid of the run, for wait_gone."""
    aim = rng.choice(("anytime", "write"))
    target = "job" if rng.random() < 1 / 3 else "rank0"
    delay = rng.uniform(0.0, 1.2) if aim == "anytime" else rng.uniform(0.0, 0.8)
    skip = rng.randrange(6)
    time.sleep(delay)
    snap = snapshot(args.results, committed)
    if aim == "write":
        try:
            last = write_syscalls(rank0)
            deadline = time.monotonic() + 3
            while skip >= 0 and time.monotonic() < deadline:
                now = write_syscalls(rank0)
                if now != last:
                    skip -= 1
                    last = now
            if skip >= 0:
                aim = "write (none seen in 3 s)"
        except OSError:
            aim = "write (rank 0 gone)"
    if run.ended():
        raise Failure(f"the run ended (exit {run.proc.returncode}) before its kill: the experiment is too "
                      f"short for {args.kills} kills, or the resume failed:\n{run.tail()}")
    job = [rank0] + [p for p in descendants(run.proc.pid) if p != rank0] + [run.proc.pid]
    # Rank 0 first: the writer dies at the aimed moment in both cases.
    kill_all(job if target == "job" else [rank0])
    run.killed_at = time.monotonic() - run.started
    return aim, target, snap, job


def final_checks(args, tables, committed, kills):
    where = "final file"
    check_kept(committed, tables, where)
    check_checkpoints(tables, committed, where)
    t, r = tables["trials"], tables["results"]
    if sorted(int(x) for x in t["trial_id"]) != list(range(1, args.trials + 1)):
        raise Failure(f"{where}: trial ids {sorted(t['trial_id'])}, expected 1..{args.trials}")
    bad = [(int(x["trial_id"]), x["status"].decode()) for x in t if x["status"] != b"TERMINATED"]
    if bad:
        raise Failure(f"{where}: trials not TERMINATED: {bad}")
    keys = [(int(x["trial_id"]), int(x["attempt"]), int(x["iteration"])) for x in r]
    if len(keys) != len(set(keys)):
        dup = sorted(k for k, n in collections.Counter(keys).items() if n > 1)[:5]
        raise Failure(f"{where}: (trial, attempt, iteration) recorded twice: {dup}")
    for x in t:
        tid = int(x["trial_id"])
        if int(x["iterations"]) != args.max_t:
            raise Failure(f"{where}: trial {tid} ended at iteration {x['iterations']}, expected {args.max_t}")
        # A restart goes on from the trial's newest checkpoint, so no iteration is skipped.
        done = {k[2] for k in keys if k[0] == tid}
        missing = sorted(set(range(1, args.max_t + 1)) - done)
        if missing:
            raise Failure(f"{where}: trial {tid} never recorded iterations {missing[:10]}")
    resumes = sum(1 for e in tables["events"] if e["kind"] == b"resume")
    # A run can die before its first commit (then its resume event is lost with it).
    if resumes < kills // 2:
        raise Failure(f"{where}: only {resumes} resume events after {kills} kills")
    with h5py.File(args.results, "r") as f:  # closed cleanly: opens without SWMR too
        f["results"].shape
    return resumes


def main():
    p = argparse.ArgumentParser()
    for name in ("ranktune", "config", "results", "logdir"):
        p.add_argument(name)
    for name in ("seed", "kills", "np", "trials", "max_t"):
        p.add_argument("--" + name.replace("_", "-"), dest=name, type=int, required=True)
    args = p.parse_args()
    rng = random.Random(args.seed)
    committed = None  # the most the file is known to hold for good
    started = time.monotonic()
    aims = {}
    torn_total = 0
    try:
        for k in range(1, args.kills + 1):
            where = f"kill {k}"
            run = Run(args, k)
            if not run.writer_up(args.results, fresh=committed is None, timeout=60):
                raise Failure(f"{where}: the run ended (exit {run.proc.returncode}) before opening the file; a "
                              f"resume that refuses, or an experiment too short for {args.kills} kills:\n{run.tail()}")
            rank0 = rank0_of(run.proc.pid)
            if rank0 is None:
                raise Failure(f"{where}: rank 0 not found under mpirun {run.proc.pid}")
            aim, target, snap, job = aim_and_kill(run, rank0, rng, args, committed)
            run.wait_gone(job)
            if snap is not None and committed is not None:
                check_kept(committed, snap, f"{where}: live reader before the kill")
            before = snap if snap is not None else committed
            try:
                after = read_file(args.results)
            except Exception as e:  # noqa: BLE001 - the failure to report
                raise Failure(f"{where}: h5py cannot open the file after the kill: {e}") from e
            where = f"kill {k} ({aim}, {target})"
            if before is not None:
                check_kept(before, after, where)
            torn = check_checkpoints(after, before, where)
            torn_total += torn
            report(args, where)
            committed = after
            aims[(aim, target)] = aims.get((aim, target), 0) + 1
            print(f"kill {k:2}: {aim:8} {target:5} {run.killed_at:5.2f} s after launch: "
                  f"{len(after['results'])} results, {len(after['checkpoints'])} checkpoint rows"
                  + (f", {torn} torn" if torn else "") + f"  (snapshot had {len(before['results']) if before else 0})",
                  flush=True)
        final = Run(args, args.kills + 1)
        try:
            final.proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            kill_all(descendants(final.proc.pid) + [final.proc.pid])
            raise Failure(f"the final resume did not finish within 300 s:\n{final.tail()}")
        if final.proc.returncode != 0:
            raise Failure(f"the final resume exited {final.proc.returncode}:\n{final.tail()}")
        tables = read_file(args.results)
        resumes = final_checks(args, tables, committed, args.kills)
        report(args, "final file")
    except Failure as e:
        print(f"FAIL (FAULT_SEED={args.seed}): {e}", file=sys.stderr)
        return 1
    print(f"ok: {args.kills} kills ({', '.join(f'{n} {a}/{t}' for (a, t), n in sorted(aims.items()))}); "
          f"{torn_total} torn checkpoint rows; final file: {args.trials} trials TERMINATED, "
          f"{len(tables['results'])} results, {resumes} resume events, no iteration twice; "
          f"{time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
