"""A command trainable that ignores ranktune.should_stop() (for mpi.stop_grace).

Each iteration reports loss = x, then "trains" for 30 * x seconds without looking at
should_stop(): a long epoch of a script that never checks. Under tests/data/ignores_stop.toml
the trial with x = 1 is stopped by ASHA at its first report and is still sleeping when the
grace period ([trainable] stop_grace_s) runs out, so ranktune must end it with SIGTERM.
With the config key obey = 1 it checks should_stop() after every report and exits at once.
Standard library only; it imports the helper without touching sys.path (ranktune puts it on
PYTHONPATH)."""
import time

import ranktune

cfg = ranktune.config()
x, obey = float(cfg["x"]), int(cfg.get("obey", 0))
for it in range(ranktune.iteration(), 4):
    ranktune.report(loss=x)
    if obey and ranktune.should_stop():
        print(f"should_stop() after iteration {it}: ending", flush=True)
        break
    print(f"iteration {it}: working {30 * x:g} s without looking at should_stop()", flush=True)
    time.sleep(30 * x)
