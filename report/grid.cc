// A Grid of text cells rendered as a fixed-width table, Markdown, CSV or HTML, with the
// escaping each needs (report/grid.h).
#include "report/grid.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sys/printable.h"

namespace ranktune::report {
namespace {

// Display columns, counting UTF-8 code points rather than bytes.
std::size_t display_width(const std::string& s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

std::string pad(const std::string& s, std::size_t width, bool right) {
  std::string fill(width - std::min(width, display_width(s)), ' ');
  return right ? fill + s : s + fill;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_html_table(const Grid& g, const std::string& css_class) {
  std::string out = (css_class.empty() ? "<table>" : "<table class=\"" + html_escape(css_class) + "\">") + "\n<thead><tr>";
  for (std::size_t c = 0; c < g.head.size(); ++c)
    out += std::string(g.numeric[c] ? "<th class=\"n\">" : "<th>") + html_escape(g.head[c]) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : g.body) {
    out += "<tr>";
    for (std::size_t c = 0; c < row.size(); ++c)
      out += std::string(g.numeric[c] ? "<td class=\"n\">" : "<td>") + html_escape(one_line(row[c])) + "</td>";
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

std::string value_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string cell_text(double v) { return std::isfinite(v) ? value_text(v) : std::string(); }

// Parameter strings and messages come from the file: keep one row on one line, and show
// the other control characters (a trial's escape sequences) rather than send them to the
// terminal.
std::string one_line(std::string s) {
  std::replace_if(s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r' || c == '\t'; }, ' ');
  return sys::printable(s);
}

std::string render_table(const Grid& g) {
  std::vector<std::size_t> width(g.head.size());
  for (std::size_t c = 0; c < g.head.size(); ++c) {
    width[c] = display_width(g.head[c]);
    for (const auto& row : g.body) width[c] = std::max(width[c], display_width(one_line(row[c])));
  }
  auto line = [&](auto text_of) {
    std::string out;
    for (std::size_t c = 0; c < g.head.size(); ++c) {
      if (c) out += "  ";
      out += pad(one_line(text_of(c)), width[c], g.numeric[c]);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line([&](std::size_t c) { return g.head[c]; });
  out += line([&](std::size_t c) { return std::string(width[c], '-'); });
  for (const auto& row : g.body) out += line([&](std::size_t c) { return row[c]; });
  return out;
}

std::string markdown_escape(const std::string& s) {
  std::string out;
  for (char c : one_line(s)) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string render_markdown_table(const Grid& g) {
  auto line = [](const std::vector<std::string>& cells) {
    return "| " + join(cells, " | ", markdown_escape) + " |\n";
  };
  std::string out = line(g.head) + "|";
  for (bool right : g.numeric) out += right ? "---:|" : "---|";
  out += "\n";
  for (const auto& row : g.body) out += line(row);
  return out;
}

std::string render_csv(const Grid& g) {
  // Quoted fields keep their lines; other control characters are shown (sys/printable.h).
  auto field = [](const std::string& s) { return csv_field(sys::printable(s, sys::Lines::Keep)); };
  auto line = [&](const std::vector<std::string>& fields) { return join(fields, ",", field) + "\n"; };
  std::string out = line(g.head);
  for (const auto& row : g.body) out += line(row);
  return out;
}

}  // namespace ranktune::report
