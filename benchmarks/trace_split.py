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
import statistics
import sys


TRIAL_PHASES = ("driver: Start out", "worker: Start in", "worker: step begins", "worker: step ends",
                "driver: Result in", "worker: decision in")


def split_trials(trial_stamps, flushes, step):
    """Medians and means (microseconds) of each leg of a one-step trial's round trip."""
    legs = [
        ("Start out -> worker has it", "driver: Start out", "worker: Start in"),
        ("worker: trainable set-up", "worker: Start in", "worker: step begins"),
        (f"step beyond its {step * 1e3:g} ms (sleep overshoot)", "worker: step begins", "worker: step ends"),
        ("step end -> driver has the Result", "worker: step ends", "driver: Result in"),
        ("Result in -> worker has the Stop", "driver: Result in", "worker: decision in"),
    ]
    print(f"per-trial legs over {len(trial_stamps)} trials, us (median / mean / p99):")
    total_med = 0.0
    for label, a, b in legs:
        ds = [(t[b] - t[a] - (step if "overshoot" in label else 0)) * 1e6
              for t in trial_stamps.values() if a in t and b in t]
        if not ds:
            continue
        ds.sort()
        med = statistics.median(ds)
        if not label.startswith("Result in"):
            total_med += med
        print(f"  {label:<42} {med:8.1f} {statistics.mean(ds):8.1f} {ds[int(0.99 * (len(ds) - 1))]:9.1f}")
    print(f"  {'Start out -> Result in, sum of medians':<42} {total_med:8.1f}  (the file's end - start - step)")
    if flushes:
        fl = sorted(d * 1e6 for d in flushes)
        print(f"  driver flushes: {len(fl)}, median {statistics.median(fl):.1f} us, mean {statistics.mean(fl):.1f} us, "
              f"p99 {fl[int(0.99 * (len(fl) - 1))]:.1f} us, {sum(fl) / 1e6:.3f} s in all")


def main():
    stamps = {}  # (rank, phase) -> seconds
    trial_stamps = {}  # trial -> {phase: seconds} (the last attempt's)
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
        elif head == "driver: flush begins":
            flush_began = t
        elif head == "driver: flush ends" and flush_began is not None:
            flushes.append(t - flush_began)
        else:  # "PHASE; more" (the doorbell counts) counts as PHASE
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
        split_trials(trial_stamps, flushes, step)


if __name__ == "__main__":
    main()
