#!/usr/bin/env python3
"""Where the wall time of one `ranktune run` outside the experiment's span goes, from the
phase stamps that RANKTUNE_TRACE=1 makes every process print (mpi/trace.h).

usage: RANKTUNE_TRACE=1 ranktune run CONFIG --np 8 ... 2>trace.txt
       benchmarks/trace_split.py trace.txt
       RANKTUNE_TRACE=trials ...; benchmarks/trace_split.py trace.txt --step 0.05
           (also splits each trial's round trip, from five stamps per trial)

Prints one line per phase, in order: its seconds and its share of the launcher's wall time
(from the launcher's exec to its exit). Stamps of several ranks count by the last rank to
reach the phase (the one the job waits for), except "ranks' loader", which shows the median
and the slowest rank.
"""
import bisect
import statistics
import sys


TRIAL_PHASES = ("driver: Start out", "worker: Start in", "worker: step begins", "worker: step ends",
                "driver: drain began", "driver: Result in", "worker: decision in")


def split_trials(trial_stamps, trial_rank, flushes, step):
    """Medians and means (microseconds) of each leg of a one-step trial's round trip.

    A trial's start_time and end_time (in /trials) are both rank 0's clock at the top of a
    drain of its message queue: end_time that of the drain that took the trial's Result,
    start_time that of the drain in which its Start went out, which is the drain that took
    the Result of the trial its worker ran before. So the file's end - start - step is the
    sum of the legs below from "previous Result's drain -> Start out" to "step end -> drain
    began", and "drain began -> Result in" is not in it.
    """
    # The trial each worker ran before, from the order of the workers' "Start in" stamps.
    previous = {}
    by_rank = {}
    for trial, d in sorted(trial_stamps.items(), key=lambda kv: kv[1].get("worker: Start in", 0)):
        rank = trial_rank.get(trial)
        if rank is None:
            continue
        if rank in by_rank:
            previous[trial] = by_rank[rank]
        by_rank[rank] = trial

    def prev_drain(trial, d):
        p = previous.get(trial)
        return trial_stamps[p].get("driver: drain began") if p is not None else None

    legs = [
        ("previous Result's drain -> Start out", lambda n, d: (d.get("driver: Start out"), prev_drain(n, d))),
        ("Start out -> worker has it", lambda n, d: (d.get("worker: Start in"), d.get("driver: Start out"))),
        ("worker: trainable set-up", lambda n, d: (d.get("worker: step begins"), d.get("worker: Start in"))),
        (f"step beyond its {step * 1e3:g} ms (sleep overshoot)",
         lambda n, d: (d.get("worker: step ends"), d.get("worker: step begins"))),
        ("step end -> drain began (end_time)", lambda n, d: (d.get("driver: drain began"), d.get("worker: step ends"))),
        ("drain began -> Result in (not charged)", lambda n, d: (d.get("driver: Result in"), d.get("driver: drain began"))),
        ("Result in -> worker has the Stop", lambda n, d: (d.get("worker: decision in"), d.get("driver: Result in"))),
    ]
    print(f"per-trial legs over {len(trial_stamps)} trials, us (median / mean / p99):")
    total_med = total_mean = 0.0
    for label, get in legs:
        ds = []
        for n, d in trial_stamps.items():
            b, a = get(n, d)
            if a is not None and b is not None:
                ds.append((b - a - (step if "overshoot" in label else 0)) * 1e6)
        if not ds:
            continue
        ds.sort()
        med, mean = statistics.median(ds), statistics.mean(ds)
        if not label.startswith(("Result in", "drain began")):
            total_med += med
            total_mean += mean
        print(f"  {label:<42} {med:8.1f} {mean:8.1f} {ds[int(0.99 * (len(ds) - 1))]:9.1f}")
    print(f"  {'charged legs, sum':<42} {total_med:8.1f} {total_mean:8.1f}  (the file's end - start - step: "
          f"its mean is the sum of the means)")
    cycle = [(d["driver: drain began"] - prev_drain(n, d) - step) * 1e6 for n, d in trial_stamps.items()
             if "driver: drain began" in d and prev_drain(n, d) is not None]
    if cycle:
        print(f"  {'end - start - step, from the stamps':<42} {statistics.median(cycle):8.1f} "
              f"{statistics.mean(cycle):8.1f}  (over {len(cycle)} trials that followed another on their worker)")
    if flushes:
        fl = sorted(b - a for a, b in flushes)
        fl = [d * 1e6 for d in fl]
        print(f"  driver flushes: {len(fl)}, median {statistics.median(fl):.1f} us, mean {statistics.mean(fl):.1f} us, "
              f"p99 {fl[int(0.99 * (len(fl) - 1))]:.1f} us, {sum(fl) / 1e6:.3f} s in all")
        # How many Results came while rank 0 was flushing, and how long they waited for it.
        begins = [a for a, _ in flushes]
        waits = []
        for d in trial_stamps.values():
            end = d.get("worker: step ends")
            if end is None:
                continue
            i = bisect.bisect_right(begins, end) - 1
            if i >= 0 and flushes[i][0] <= end <= flushes[i][1]:
                waits.append((flushes[i][1] - end) * 1e6)
        if waits:
            print(f"  Results sent during a flush: {len(waits)} of {len(trial_stamps)}, waiting for its end: "
                  f"median {statistics.median(waits):.1f} us, mean {statistics.mean(waits):.1f} us "
                  f"({sum(waits) / len(trial_stamps):.1f} us per trial)")


def main():
    stamps = {}  # (rank, phase) -> seconds
    trial_stamps = {}  # trial -> {phase: seconds} (the last attempt's)
    trial_rank = {}  # trial -> the worker rank that stamped its "worker: Start in"
    flushes, flush_began = [], None
    for line in open(sys.argv[1], errors="replace"):
        parts = line.rstrip("\n").split(" ", 3)
        if len(parts) != 4 or parts[0] != "ranktune-trace":
            continue
        t = float(parts[2])
        phase = parts[3]
        head, _, tail = phase.rpartition(" ")
        if head in TRIAL_PHASES:
            trial_stamps.setdefault(int(tail), {})[head] = t
            if head == "worker: Start in":
                trial_rank[int(tail)] = int(parts[1])
        elif head == "driver: flush begins":
            flush_began = t
        elif head == "driver: flush ends" and flush_began is not None:
            flushes.append((flush_began, t))
        else:  # "PHASE; more" counts as PHASE
            stamps[(int(parts[1]), phase.split(";")[0])] = t
    ranks = sorted({r for r, _ in stamps if r >= 0})
    workers = [r for r in ranks if r > 0]
    if not ranks or (-1, "exec") not in stamps:
        sys.exit("trace_split.py: no launcher or rank stamps (was RANKTUNE_TRACE=1 set, and stderr kept?)")

    def last(phase, among):
        ts = [stamps[(r, phase)] for r in among if (r, phase) in stamps]
        return max(ts) if ts else None

    def one(rank, phase):
        return stamps.get((rank, phase))

    begin, end = one(-1, "exec"), one(-1, "exit")
    wall = end - begin
    points = [
        ("launcher: start, config check", one(-1, "launcher: spawning mpirun")),
        ("mpirun starts the 9 ranks (last exec)", last("exec", ranks)),
        ("ranks' loader + static constructors", last("main: before MPI_Init", ranks)),
        ("MPI_Init (last worker out of it)", last("worker: MPI_Init done", workers)),
        ("rank 0: config load", one(0, "driver: MPI_Init done, config loaded")),
        ("Setup broadcast", one(0, "driver: Setup sent")),
        ("placement (host names gathered)", one(0, "driver: placed")),
        ("workers' set-up + Hellos", one(0, "driver: every Hello in")),
        ("stack capture", one(0, "driver: stack collected")),
        ("results file created", one(0, "driver: results file open")),
        ("first Starts sent", one(0, "driver: first Starts sent")),
        ("the experiment (about its span)", one(0, "driver: experiment finished")),
        ("Shutdown + every Bye", one(0, "driver: every Bye in")),
        ("final flush", one(0, "driver: final flush done")),
        ("results file closed", one(0, "driver: results file closed")),
        ("MPI_Finalize + exit (last rank)", last("exit", ranks)),
        ("mpirun exits", one(-1, "launcher: mpirun exited")),
        ("launcher exits", end),
    ]
    print(f"{sys.argv[1]}: {len(ranks)} ranks, launcher wall {wall:.3f} s")
    prev = begin
    outside = 0.0
    for label, t in points:
        if t is None:
            print(f"  {label:<40} (no stamp)")
            continue
        d = t - prev
        print(f"  {label:<40} {d:8.3f} s  {100 * d / wall:5.1f} %")
        if not label.startswith("the experiment"):
            outside += d
        prev = t
    print(f"  {'outside the experiment':<40} {outside:8.3f} s")
    loads = [stamps[(r, "main: before MPI_Init")] - stamps[(r, "exec")]
             for r in ranks if (r, "exec") in stamps and (r, "main: before MPI_Init") in stamps]
    if loads:
        print(f"  ranks' loader + static constructors per rank: median {statistics.median(loads):.3f} s, "
              f"slowest {max(loads):.3f} s (exec stamps have 10 ms resolution)")
    if trial_stamps:
        step = float(sys.argv[sys.argv.index("--step") + 1]) if "--step" in sys.argv else 0.05
        split_trials(trial_stamps, trial_rank, sorted(flushes), step)


if __name__ == "__main__":
    main()
