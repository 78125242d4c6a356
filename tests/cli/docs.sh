#!/usr/bin/env bash
# The documentation a newcomer reads (issue 28.4): the README opens with the two commands and
# stays short; the TOML it shows is configs/quickstart.toml (comments aside), which `ranktune
# check` accepts; every relative link of the repository's Markdown leads to a file that exists
# and, with an anchor, to a heading of it; docs/architecture.md points nowhere outside the
# repository.
source "$SRC/tests/mpi/lib.sh"
"$RANKTUNE" check "$SRC/configs/quickstart.toml" > "$WORK/check.txt" 2>&1 || { cat "$WORK/check.txt"; fail "check of configs/quickstart.toml"; }
"$PY" - "$SRC" <<'PY'
import glob, os, re, sys
src = sys.argv[1]
readme = open(f"{src}/README.md").read()
lines = readme.splitlines()
head = "\n".join(lines[:40])
assert "./scripts/quickstart.sh" in head and "./scripts/test.sh" in head, "the README's first 40 lines lack the two commands"
assert len(lines) <= 250, f"the README has {len(lines)} lines (at most 250)"

def settings(text):  # a TOML text without its comment lines and blank lines
    return [l for l in text.split("\n") if l.strip() and not l.lstrip().startswith("#")]
shown = [settings(b) for b in re.findall(r"```toml\n(.*?)```", readme, re.S)]
assert settings(open(f"{src}/configs/quickstart.toml").read()) in shown, \
    "the README's TOML is not configs/quickstart.toml (comment lines aside)"

def slug(heading):  # GitHub's anchor of a heading
    h = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return h.replace(" ", "-")
def anchors(path):
    text = re.sub(r"```.*?```", "", open(path).read(), flags=re.S)
    return {slug(m) for m in re.findall(r"^#{1,6} (.*)$", text, re.M)}
pages = [f"{src}/README.md", f"{src}/CHANGELOG.md"] + glob.glob(f"{src}/docs/**/*.md", recursive=True) \
    + [f"{src}/{d}/README.md" for d in ("configs", "examples", "benchmarks", "python", "tests/fault")]
bad, n = [], 0
for page in pages:
    text = re.sub(r"```.*?```", "", open(page).read(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # a URL: not this check's business
        n += 1
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        where = os.path.relpath(page, src)
        if not full.startswith(src + os.sep):
            bad.append(f"{where}: {target} leads out of the repository")
        elif not os.path.exists(full):
            bad.append(f"{where}: {target}: no such file")
        elif anchor and full.endswith(".md") and anchor not in anchors(full):
            bad.append(f"{where}: {target}: no heading with that anchor")
arch = open(f"{src}/docs/architecture.md").read()
bad += [f"docs/architecture.md: {m}" for m in re.findall(r"https?://\S+|\.\./shared\S*|/work/\S+", arch)]
assert not bad, "\n".join(bad)
print(f"ok: README {len(lines)} lines, opens with both commands, shows configs/quickstart.toml; {n} links in {len(pages)} pages lead somewhere")
PY
