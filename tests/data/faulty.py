"""A trainable that misbehaves as its `fault` hyperparameter says (for the fault tests).

It imports the helper without touching sys.path: ranktune puts it on PYTHONPATH."""
import json
import os
import resource
import signal
import sys

import ranktune

fault = ranktune.config()["fault"]
report = os.fdopen(int(os.environ["RANKTUNE_REPORT_FD"]), "w", buffering=1)
print(f"trial {os.environ['RANKTUNE_TRIAL_ID']} starting with fault={fault}", file=sys.stderr)
report.write(json.dumps({"loss": 1.0}) + "\n")
if fault == "segv":
    print("about to crash", file=sys.stderr)
    sys.stderr.flush()
    # No core file: the tests run with core dumps on (tests/mpi/lib.sh), and this crash,
    # on purpose, would leave one in the config's folder, the source tree.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.kill(os.getpid(), signal.SIGSEGV)
elif fault == "exit":
    print("giving up with exit code 3", file=sys.stderr)
    sys.exit(3)
elif fault == "garbage":
    report.write("this is not json\n")
elif fault == "nan":
    report.write(json.dumps({"loss": float("nan")}) + "\n")
for epoch in range(2, 5):
    report.write(json.dumps({"loss": 1.0 / epoch}) + "\n")
