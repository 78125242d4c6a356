"""Checks a `ranktune report --html` page: every element closed in order (a page that a
browser has to repair is a bug), no external reference (it must be self-contained), and
the sections and inline SVG charts the caller expects.

usage: check_html.py PAGE [--section TITLE]... [--svgs N]"""
import argparse
from html.parser import HTMLParser

VOID = {"meta", "br", "img", "hr", "input", "link"}


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.svgs, self.h2, self.external = [], 0, [], []
        self._in_h2 = False

    def handle_starttag(self, tag, attrs):
        if tag == "svg":
            self.svgs += 1
        for name, value in attrs:
            if name in ("src", "href") and value and not value.startswith("#"):
                self.external.append(value)
        if tag == "h2":
            self._in_h2 = True
            self.h2.append("")
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        pass  # <polyline ... />: complete in itself

    def handle_data(self, data):
        if self._in_h2:
            self.h2[-1] += data

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()
        if tag == "h2":
            self._in_h2 = False


a = argparse.ArgumentParser()
a.add_argument("page")
a.add_argument("--section", action="append", default=[])
a.add_argument("--svgs", type=int)
args = a.parse_args()
p = Page()
p.feed(open(args.page, encoding="utf-8").read())
p.close()
assert not p.stack, f"unclosed: {p.stack}"
assert not p.external, f"external references: {p.external}"
for title in args.section:
    assert any(h.startswith(title) for h in p.h2), (title, p.h2)
if args.svgs is not None:
    assert p.svgs == args.svgs, (p.svgs, args.svgs)
print(f"ok: {args.page}: sections {p.h2}, {p.svgs} charts")
