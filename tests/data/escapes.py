"""A command trainable for tests/cli/terminal_escapes.sh: a trial whose text is full of
terminal escape sequences. Trial 1 reports a metric whose name holds one (undeclared, so rank
0 warns about it) and ends; trial 2 prints escape sequences and fails with one in its error,
so its log tail and error carry them."""
import sys

import ranktune

ESC = "\x1b"
trial = ranktune.trial_id()
if trial == 1:
    for i in range(2):
        ranktune.report(loss=1.0 + i, **{ESC + "]0;pwned" + "\x07red" + ESC + "[31m": 2.0, "c1\u009b2J": 3.0})
    sys.exit(0)
sys.stdout.buffer.write(b"clearing the screen\x1b[2J\x1b[H, then a bell\x07 and a lone \xff byte\n")
sys.stdout.buffer.write(b"second line\r\x1b[Kover it\n")
sys.stdout.flush()
raise RuntimeError("failed with " + ESC + "[1mbold" + ESC + "[0m text")
