#pragma once
/// A table of text cells and its renderings for people and tools: fixed-width text,
/// GitHub Markdown and CSV (RFC 4180 quoting). Shared by the leaderboard and the
/// evaluation tables.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace ranktune::report {

struct Grid {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> body;  ///< each row has head.size() cells
  std::vector<bool> numeric;                   ///< per column: right-aligned
};

/// Fixed-width columns two spaces apart, a dashed rule under the header, numeric columns
/// right-aligned, widths in UTF-8 code points; every line ends in a newline.
/// The cells of each go through one_line (CSV: sys::printable, keeping newlines and tabs).
std::string render_table(const Grid& g);
std::string render_markdown_table(const Grid& g);
std::string render_csv(const Grid& g);

/// `s` with &, <, > and " escaped for HTML and SVG text and attributes.
std::string html_escape(const std::string& s);
/// The grid as an HTML <table> (a header row in <thead>, the rows in <tbody>, numeric
/// columns right-aligned), cells escaped, with `css_class` on the table when not empty.
std::string render_html_table(const Grid& g, const std::string& css_class = "");

/// A metric value for people: 6 significant digits ("nan" and "inf" as printf gives them).
std::string value_text(double v);
/// The same for a table cell: blank when not finite (no value yet).
std::string cell_text(double v);

/// `s` with newlines and tabs made spaces, and its other control characters shown visibly
/// (sys::printable): strings from a file stay on one row, and cannot drive the terminal.
std::string one_line(std::string s);
/// one_line(s) with '|' escaped for a Markdown cell.
std::string markdown_escape(const std::string& s);

/// The items' texts joined by `separator`.
template <class Range, class Text>
std::string join(const Range& items, const char* separator, Text text) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!std::exchange(first, false)) out += separator;
    out += text(item);
  }
  return out;
}
inline constexpr auto as_is = [](const std::string& s) -> const std::string& { return s; };

}  // namespace ranktune::report
