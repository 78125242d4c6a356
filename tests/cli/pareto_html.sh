#!/usr/bin/env bash
# The HTML report of a multi-objective experiment in a real browser (Debian's chromium,
# headless, as tests/cli/report_html.sh runs it): a real run (mpirun) of ZDT1 under a
# constraint. In the DOM chromium built: the sections and charts, the Pareto scatter with a
# dot per trial on the front as h5py's /trials has it, a cross per infeasible trial, the step
# line, the hypervolume against wall time; the leaderboard in Pareto order; no request leaves
# the page and no script error; the screenshot is not blank. Three objectives (DTLZ2): a matrix
# of the three pairs, each with a dot per front trial.
source "$(dirname "$0")/../mpi/lib.sh"
R="$RANKTUNE"
source "$(dirname "$0")/browser.sh"

"$R" run "$SRC/tests/data/pareto_zdt1.toml" --np 3 --results "$WORK/mo.h5" > "$WORK/run.txt" 2>&1 \
  || { cat "$WORK/run.txt"; fail "the multi-objective run failed"; }
"$R" report "$WORK/mo.h5" --top 0 --html "$WORK/mo.html" > /dev/null || fail "report --html failed"
load_page "file://$WORK/mo.html"
# The six charts of every page, the front and the hypervolume.
"$PY" "$SRC/tests/cli/check_html.py" "$WORK/dom.html" --section Leaderboard --section "Pareto front" \
  --section "Hypervolume against wall time" --section "Learning curves" --svgs 8 \
  || fail "the DOM chromium built lacks a section or chart"
"$PY" - "$WORK/mo.h5" "$WORK/dom.html" <<'PY' || fail "the Pareto charts in chromium disagree with /trials"
import re, sys, h5py, numpy as np
from html.parser import HTMLParser
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][()]
front = set(t["trial_id"][t["pareto_rank"] == 0].tolist())
ranked = t["pareto_rank"] >= 0
infeasible = set(t["trial_id"][ranked & (t["objective:f2"] > 5)].tolist())  # constraints = ["f2 <= 5"]

class Marks(HTMLParser):
    """The marks of each <svg> (by its aria-label): (tag, attributes, title)."""
    def __init__(self):
        super().__init__()
        self.svgs, self.svg, self.mark, self.in_title = {}, None, None, False
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.svg = self.svgs.setdefault(a.get("aria-label"), [])
        elif tag == "title" and self.svg is not None:
            self.in_title = True
        elif self.svg is not None:
            self.mark = [tag, a, ""]
            self.svg.append(self.mark)
    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg = None
        elif tag == "title":
            self.in_title = False
    def handle_data(self, data):
        if self.in_title and self.mark is not None:
            self.mark[2] += data
m = Marks()
m.feed(open(sys.argv[2]).read())
marks = m.svgs["Pareto front"]
dots = [int(re.match(r"trial (\d+)", t).group(1)) for tag, a, t in marks if tag == "circle" and "(front): f1" in t]
assert sorted(dots) == sorted(front), (dots, front)
faded = [t for tag, a, t in marks if tag == "circle" and "pareto_rank" in t and "(front)" not in t]
assert all(a.get("opacity") == "0.35" for tag, a, t in marks if tag == "circle" and t in faded), "a dominated dot not faded"
crosses = {int(re.match(r"trial (\d+)", t).group(1)) for tag, a, t in marks if tag == "polyline" and ", infeasible:" in t}
assert infeasible and crosses == infeasible, (crosses, infeasible)
steps = [a for tag, a, t in marks if tag == "polyline" and t.startswith("the front's step line")]
assert len(steps) == 1 and len(steps[0]["points"].split()) == 2 * len(front) - 1, steps
legend = " ".join(t for tag, a, t in marks if tag == "text")
hv = m.svgs["hypervolume against wall time"]
assert any(tag == "polyline" for tag, a, t in hv) and any(t.startswith("hypervolume ") for tag, a, t in hv)
page = open(sys.argv[2]).read()
table = page[page.index('class="sortable"'):]
table = table[:table.index("</table>")]
head = re.findall(r"<th[^>]*>([^<]*)</th>", table)
rows = re.findall(r"<tr>(.*?)</tr>", table[table.index("<tbody>"):], re.S)
ranks = [re.findall(r"<td[^>]*>([^<]*)</td>", r)[head.index("pareto_rank")] for r in rows]
ranks = [int(x) for x in ranks if x]
assert ranks == sorted(ranks) and ranks.count(0) == len(front), ranks
print(f"ok: {len(dots)} front dots, {len(faded)} faded, {len(crosses)} crosses, a step line of {len(front)} points")
PY
# The legend, in the page as written (the DOM keeps SVG text as it is).
for want in "on the front (pareto_rank 0)" "dominated (faded)" "infeasible (a constraint violated)" \
            "reference point of the hypervolume" "the front's step line"; do
  grep -qF "$want" "$WORK/mo.html" || fail "the front's legend lacks '$want'"
done
headless --window-size=1280,3000 --screenshot="$WORK/mo.png" "file://$WORK/mo.html" > /dev/null || fail "no screenshot"
not_blank "$WORK/mo.png" || fail "the screenshot is blank"

# Three objectives: a matrix of the pairs.
sed -e 's/^name = .*/name = "pareto_dtlz2"/' -e 's/^metric = .*/metric = ["f1", "f2", "f3"]/' \
    -e 's/^mode = .*/mode = ["min", "min", "min"]/' -e '/^constraints/d' -e 's/"zdt1"/"dtlz2"/' \
    "$SRC/tests/data/pareto_zdt1.toml" > "$WORK/dtlz2.toml"
"$R" run "$WORK/dtlz2.toml" --np 3 --results "$WORK/d3.h5" > "$WORK/run3.txt" 2>&1 \
  || { cat "$WORK/run3.txt"; fail "the 3-objective run failed"; }
"$R" report "$WORK/d3.h5" --html "$WORK/d3.html" > /dev/null || fail "report --html of 3 objectives failed"
headless --dump-dom "file://$WORK/d3.html" > "$WORK/d3_dom.html" || fail "chromium could not load the 3-objective page"
"$PY" - "$WORK/d3.h5" "$WORK/d3_dom.html" <<'PY' || fail "the matrix of pairs is wrong"
import re, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][()]
front = t["trial_id"][t["pareto_rank"] == 0].tolist()
page = open(sys.argv[2]).read()
svg = page[page.index('aria-label="Pareto front"'):]
svg = svg[:svg.index("</svg>")]
for pair in ("f1 vs f2", "f1 vs f3", "f2 vs f3"):
    assert pair in svg, pair
dots = re.findall(r"<title>trial (\d+), pareto_rank 0 \(front\): f1", svg)
assert sorted(map(int, dots)) == sorted(front * 3), (len(dots), len(front))
assert "step line</title>" not in svg and "no step line" in svg
print(f"ok: 3 panels of {len(front)} front trials each")
PY
echo "ok: the multi-objective page in chromium"
