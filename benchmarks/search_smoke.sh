#!/usr/bin/env bash
# ctest smoke test for bench_schedulers and the search-quality suite. bench_schedulers must
# print a row for every scheduler; `run_all.sh --smoke` (the quality suite on a tiny plan,
# beside Optuna) must write a well-formed RESULTS.md: its header, the summary table with a
# row per cell, a section per cell with a row per pair of both tools, and an SVG plot per
# cell that parses, the same tables of the multi-objective suite (quality/mo_suite.py
# --smoke: hypervolumes of ranktune's random pairs and Optuna's two samplers, after its check
# that both sides compute the same objectives), and the Fashion-MNIST mlp search's table
# (quality/mlp_suite.py --smoke: a row per tool, each with a test accuracy). No timing or quality assertions: the figures are
# only checked to be there.
set -euo pipefail
schedulers=${1:?usage: search_smoke.sh PATH/TO/bench_schedulers BUILD_DIR}
build=${2:?usage: search_smoke.sh PATH/TO/bench_schedulers BUILD_DIR}
here="$(cd "$(dirname "$0")" && pwd)"
out=$("$schedulers" 1000)
printf '%s\n' "$out"
for name in fifo asha asha_promotion hyperband pbt median_stopping; do
  grep -Eq "^$name +1000 +[0-9.]+$" <<<"$out" || { echo "FAIL: no bench_schedulers row for $name" >&2; exit 1; }
done
/usr/bin/python3 -c 'import optuna, scipy' 2>/dev/null || { echo "SKIP: no python3-optuna/python3-scipy"; exit 77; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$here/run_all.sh" --smoke --out "$work/RESULTS.md" "$build"
cat "$work/RESULTS.md"
/usr/bin/python3 - "$work" <<'PY'
import os, re, sys, xml.etree.ElementTree as ET
work = sys.argv[1]
text = open(os.path.join(work, "RESULTS.md")).read()
assert text.startswith("# Side-by-side results\n"), "no title"
assert "Failed (exit" not in text, "a section failed"
assert re.search(r"^Written by `benchmarks/run_all.sh --smoke` on \d{4}-\d\d-\d\d,", text, re.M), "no provenance line"
rows = [l for l in text.splitlines() if re.match(r"^\| branin \| 81 \| [12] \| ", l)]
assert len(rows) == 2, f"summary rows: {rows}"
for row in rows:
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert len(cells) == 11, cells
    assert re.match(r"^(ranktune|optuna|tie) \([0-9.e-]+\)$", cells[5]), cells[5]
for w in (1, 2):
    head = f"### branin, 81 steps, {w} worker"
    assert head in text, head
    part = text.split(head, 1)[1].split("###", 1)[0]
    pairs = re.findall(r"^\| ((?:optuna )?[a-z]+\+[a-z]+)(?: \*\*\(best\)\*\*)? \| ([0-9.e+-]+|inf) \|", part, re.M)
    names = {p for p, _ in pairs}
    for want in ("tpe+asha", "random+fifo", "optuna tpe+sha", "optuna tpe+hyperband", "optuna random+none"):
        assert want in names, (want, names)
    svg = os.path.join(work, "results", f"quality-branin-81-{w}.svg")
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg") and root.findall(".//{http://www.w3.org/2000/svg}path"), svg
    assert f"(results/quality-branin-81-{w}.svg)" in part, "no link to the plot"
mo = text.split("## Search quality against Optuna, multi-objective (smoke plan)", 1)
assert len(mo) == 2, "no multi-objective quality section"
mo = mo[1].split("\n## ", 1)[0]
for fn in ("zdt1", "dtlz2"):
    row = re.search(r"^\| " + fn + r" \| 2 \|(.*)\|$", mo, re.M)
    assert row, f"no multi-objective summary row for {fn}"
    cells = [c.strip() for c in row.group(1).split("|")]
    assert len(cells) == 7, cells
    assert re.match(r"^[a-z0-9]+\+[a-z]+$", cells[0]) and cells[2].startswith("optuna "), cells
    assert all(re.match(r"^\d+\.\d{4}$", cells[i]) for i in (1, 3, 6)), f"{fn}: hypervolumes {cells}"
    assert cells[4] in ("yes", "no") and re.match(r"^(ranktune|optuna|tie) \([0-9.e-]+\)$", cells[5]), cells
    part = mo.split(f"### {fn}, 2 workers", 1)
    assert len(part) == 2, f"no multi-objective section for {fn}"
    names = set(re.findall(r"^\| ((?:optuna )?[a-z0-9+]+)(?: \*\*\(best\)\*\*)? \| \d+\.\d{4} \|", part[1].split("###", 1)[0], re.M))
    for want in ("random+fifo", "random+asha", "optuna nsga2", "optuna tpe"):
        assert want in names, (fn, want, names)
mlp = text.split("## Search of the Fashion-MNIST mlp against Optuna at equal wall time (smoke plan)", 1)
assert len(mlp) == 2, "no mlp search section"
mlp = mlp[1].split("\n## ", 1)[0]
if "Skipped: no Fashion-MNIST" in mlp:
    print("NOTE: no Fashion-MNIST data: the mlp search was skipped, as RESULTS.md says")
    tools = ()
else:
    tools = ("ranktune tpe+asha", "optuna tpe+hyperband")
for tool in tools:
    row = re.search(r"^\| " + re.escape(tool) + r" \|(.*)\|$", mlp, re.M)
    assert row, f"no mlp row for {tool}"
    cells = [c.strip() for c in row.group(1).split("|")]
    assert len(cells) == 7, cells
    assert re.match(r"^0\.\d{4}$", cells[0]), f"{tool}: test accuracy {cells[0]}"
    assert all(re.match(r"^\d+$", c) for c in cells[3:]), f"{tool}: counts {cells[3:]}"
assert "do not train alike" not in mlp, "a retrained trial differs from the search's"
print("PASS: RESULTS.md is well formed")
PY
