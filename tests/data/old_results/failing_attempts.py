"""The command trainable that made tests/data/old_results/failed_attempts.h5.gz: trials of
mode "raise" print 60 lines, then die of an exception whose message is about 1 KB (an error
and a log tail in /trials); mode "ok" reports 3 iterations with 20 metrics the config does
not declare (a warning event longer than a row of /events)."""
import ranktune

cfg = ranktune.config()
for i in range(60):
    print(f"line {i} of trial {ranktune.trial_id()} attempt {ranktune.attempt()} ({cfg['mode']})", flush=True)
if cfg["mode"] == "raise":
    raise RuntimeError("the model diverged: " + ", ".join(f"layer{i}.weight has NaN" for i in range(40)))
for it in range(1, 4):
    extra = {f"an_undeclared_metric_number_{i}": 1.0 for i in range(20)}
    ranktune.report(loss=float(cfg["x"]) + 1.0 / it, **extra)
