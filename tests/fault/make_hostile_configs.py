#!/usr/bin/env python3
"""Writes hostile configs for hostile_configs.sh: usage make_hostile_configs.py DIR.

Each NAME.toml comes with NAME.expect, one line: "ok" (check must accept it) or
"refused LINE FRAGMENT" (check must exit 2, name NAME.toml:LINE: (LINE "-": NAME.toml: with no
line) and contain FRAGMENT).
"""
import os
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)

HEAD = """[experiment]
name = "hostile"
metric = "loss"
mode = "min"
{experiment}
[search]
algorithm = "{algorithm}"
{search}
[search.space]
x1 = {{ uniform = [-5.0, 10.0] }}
x2 = {{ uniform = [0.0, 15.0] }}
{space}
[scheduler]
{scheduler}
[trainable]
{trainable}
[stop]
max_t = 100
"""


def config(experiment="", algorithm="random", search="", space="", scheduler='kind = "fifo"',
           trainable='kind = "synthetic"\nfunction = "branin"'):
    return HEAD.format(experiment=experiment, algorithm=algorithm, search=search, space=space,
                       scheduler=scheduler, trainable=trainable)


def line_of(text, needle):
    return text[: text.index(needle)].count("\n") + 1


def write(name, text, expect):
    with open(os.path.join(out, name + ".toml"), "w") as f:
        f.write(text)
    with open(os.path.join(out, name + ".expect"), "w") as f:
        f.write(expect + "\n")


def refused(name, text, needle, fragment):
    """`needle`: the text on the line the error must name (None: no line)."""
    line = line_of(text, needle) if needle else "-"
    write(name, text, "refused %s %s" % (line, fragment))


# Item 9: nesting 10,000 deep crashed toml11 (SIGSEGV).
t = config(space="x3 = { uniform = " + "[" * 10000 + "]" * 10000 + " }")
refused("deep_arrays", t, "x3 =", "nested more than 32 levels deep")
t = config(space="x3 = " + "{a=" * 10000 + "1" + "}" * 10000)
refused("deep_tables", t, "x3 =", "nested more than 32 levels deep")
t = config() + ".".join(["a"] * 50000) + " = 1\n"
refused("dotted_50k", t, "a.a.a", "nested more than 32 levels deep")
t = config() + "[" + ".".join(["b"] * 50000) + "]\n"
refused("header_50k", t, "[b.b.b", "nested more than 32 levels deep")

# Item 10: a reduction factor just above 1 made check run for minutes.
t = config(scheduler='kind = "asha"\nreduction_factor = 1.0000000000000002')
refused("asha_tiny_rf", t, "reduction_factor", "rungs; at most 64 are allowed")
t = config(scheduler='kind = "asha"\nvariant = "promotion"\nreduction_factor = 1.0000000000000002')
refused("asha_promotion_tiny_rf", t, "reduction_factor", "rungs; at most 64 are allowed")
t = config(scheduler='kind = "hyperband"\nreduction_factor = 1.000000001')
refused("hyperband_tiny_rf", t, "reduction_factor", "brackets; at most 64 are allowed")
t = config(scheduler='kind = "asha"\nbrackets = 1000000000000')
refused("asha_brackets", t, "brackets", "must be <= 64")

# Item 11: counts without an upper bound.
t = config(algorithm="tpe", search="n_ei_candidates = 1000000000000")
refused("tpe_candidates", t, "n_ei_candidates", "must be <= 10000")
t = config(algorithm="bohb", search="n_ei_candidates = 1000000000000")
refused("bohb_candidates", t, "n_ei_candidates", "must be <= 10000")
t = config(search="repeat = 1000000000000")
refused("repeat", t, "repeat", "must be <= 10000")

# Item 13: silent overflow and wrong values.
t = config(experiment="num_samples = 9223372036854775808")
refused("num_samples_overflow", t, "num_samples", "is out of range (got 9223372036854775808)")
t = config(trainable='kind = "synthetic"\nfunction = "branin"\nnoise = 1e309')
refused("noise_overflow", t, "noise = 1e309", "is out of range (got 1e309)")
t = config(experiment="num_samples = 1000000000", search="repeat = 1000")
refused("samples_times_repeat", t, "num_samples", "makes 1e+12 trials; at most 1e+09")
grid = "[" + ", ".join(str(i) for i in range(1000)) + "]"
t = config(experiment="num_samples = 9223372036854775807", algorithm="grid",
           space="g1 = { grid = %s }\ng2 = { grid = %s }" % (grid, grid))
refused("grid_max_samples", t, "num_samples", "must be <= 1000000000")
t = config(experiment="num_samples = 2000", algorithm="grid",
           space="g1 = { grid = %s }\ng2 = { grid = %s }" % (grid, grid))
refused("grid_times_samples", t, "num_samples", "makes 2e+09 trials")
t = config(space="x3 = { uniform = [-1.7e308, 1.7e308] }")
refused("uniform_overflow", t, "x3 =", "high - low overflows")
t = config(space="x3 = { quniform = [0.0, 1.0, 5e-324] }")
refused("quniform_tiny_q", t, "x3 =", "is too small for [0, 1]")
t = config(trainable='kind = "synthetic"\nfunction = "branin"\nseconds_per_step = 1e300')
refused("seconds_per_step", t, "seconds_per_step", "must be <= 1e+09")

# Item 18: names that cannot make a file, and huge values in messages.
t = config().replace('name = "hostile"', 'name = "%s"' % ("n" * 300))
refused("long_name", t, "name =", "is 300 characters long; at most 128")
t = config().replace('name = "hostile"', 'name = "%s!"' % ("n" * 1000000))
refused("huge_name", t, "name =", "(1000001 characters)")
write("empty", "", "refused - is empty")

# Item 12: big configs must be read in linear time (these took minutes). Issue 27 item 8: and
# refused, since `run` could not run them (HDF5 cannot hold so many columns); `check` said OK.
params = "\n".join("x%d = { uniform = [0.0, 1.0] }" % i for i in range(3, 50000))
t = config(space=params, trainable='kind = "synthetic"\nfunction = "sphere"')
refused("params_50k", t, "[search.space]", "49999 parameters; at most 1000 are allowed")
metrics = "[" + ", ".join('"m%d"' % i for i in range(100000)) + "]"
t = config(trainable='kind = "command"\ncommand = ["true"]\nmetrics = ' + metrics)
refused("metrics_100k", t, "metrics = [", "100001 metrics to record; at most 1000 are allowed")

# Issue 27 item 8: configs that `check` passed and `run` could not run.
params = "\n".join("x%d = { uniform = [0.0, 1.0] }" % i for i in range(3, 8001))
t = config(space=params, trainable='kind = "synthetic"\nfunction = "sphere"')
refused("params_8000", t, "[search.space]", "8000 parameters; at most 1000 are allowed")
t = config(space='s = { choice = ["%s", "b"] }' % ("a" * 70000))
refused("choice_70k", t, "s = {", "a listed value is 70000 bytes long; at most 65536")
t = config(space="\n".join('s%d = { choice = ["%s"] }' % (i, "a" * 20000) for i in range(4)))
refused("choices_wide", t, "s3 = {", "take 80016 bytes of each row of the results file")
t = config(space="\n".join("p%d%s = { uniform = [0.0, 1.0] }" % (i, "_" * 90) for i in range(900)))
refused("param_names_long", t, "p539_", "bytes of the results file's /trials header")
metrics = "[" + ", ".join('"m%d%s"' % (i, "_" * 90) for i in range(900)) + "]"
t = config(trainable='kind = "command"\ncommand = ["true"]\nmetrics = ' + metrics)
refused("metric_names_long", t, "metrics = [", "bytes of the results file's /results header")
# At the limits: accepted (tests/mpi/... and results_layout_test run them).
params = "\n".join("x%d = { uniform = [0.0, 1.0] }" % i for i in range(3, 1001))
write("params_1000", config(space=params, trainable='kind = "synthetic"\nfunction = "sphere"'), "ok")
