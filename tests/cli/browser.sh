# Shared by the tests that open the HTML report in a real browser: Debian's chromium,
# headless, a fresh profile, nothing that reaches out (no QUIC, first-run, background
# networking, component updates or sync). Sourced after tests/mpi/lib.sh; skips the test
# (exit 77) where there is no chromium or it cannot start.
BROWSER=$(command -v chromium || command -v chromium-browser || true)
[[ -n $BROWSER ]] || { echo "SKIP: no chromium (scripts/setup.sh installs Debian's chromium)"; exit 77; }
# headless CHROMIUM-ARGS...: a fresh profile each time, stderr kept for script errors.
headless() { rm -rf "$WORK/profile"; timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --disable-quic \
  --no-first-run --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$WORK/profile" --enable-logging=stderr --v=0 "$@" 2>>"$WORK/browser.err"; }
# load_page URL: the DOM chromium builds from URL into $WORK/dom.html; fails on a script error
# in the page or on a request that leaves it (tests/cli/page_requests.py reads the net log).
load_page() {
  headless --log-net-log="$WORK/net.json" --dump-dom "$1" > "$WORK/dom.html" || fail "chromium could not load the page"
  if grep -i "uncaught" "$WORK/browser.err"; then fail "a script error in the page"; fi
  "$PY" "$SRC/tests/cli/page_requests.py" "$WORK/net.json" > "$WORK/requests.txt" \
    || { cat "$WORK/requests.txt"; fail "requests left the page"; }
}
"$BROWSER" --headless --no-sandbox --disable-gpu --user-data-dir="$WORK/probe" --dump-dom about:blank > /dev/null 2>&1 \
  || { echo "SKIP: chromium is installed but cannot start here"; exit 77; }

# not_blank PNG: fails unless more than 1% of the screenshot's pixels are darker than the page.
not_blank() {
  "$PY" - "$1" <<'PY'
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("L")
hist = im.histogram()
ink = sum(hist[:200]) / sum(hist)  # pixels darker than the white page
assert ink > 0.01, f"the screenshot is blank ({ink:.4f} of its pixels have ink)"
print(f"ok: screenshot {im.size}, {100 * ink:.1f}% of its pixels have ink")
PY
}
