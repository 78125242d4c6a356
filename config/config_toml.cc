// Preparing and parsing the config's TOML text (config_detail.h): the one-pass depth check
// and line breaking before toml11 sees the text, the map back to the file's lines, syntax
// errors, --set overrides, numbers toml11 clamped, and the small text helpers that the
// reader's messages and the renderer share.

#include "config/config_detail.h"

#include "sys/text.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>

namespace ranktune::config::config_detail {

const std::string kSetPrefix = "--set ";

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string quoted_list(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "\"" : ", \"") + s + "\"";
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::string human(double d) {
  std::ostringstream os;
  os << d;
  return os.str();
}

std::string type_name(const toml::value& v) {
  switch (v.type()) {
    case toml::value_t::boolean:
      return "boolean";
    case toml::value_t::integer:
      return "integer";
    case toml::value_t::floating:
      return "float";
    case toml::value_t::string:
      return "string";
    case toml::value_t::array:
      return "array";
    case toml::value_t::table:
      return "table";
    case toml::value_t::empty:
      return "nothing";
    default:
      return "date/time";
  }
}

// A short rendering of what the user wrote, for "(got ...)" in messages.
std::string human(const toml::value& v) {
  switch (v.type()) {
    case toml::value_t::integer:
      return std::to_string(v.as_integer());
    case toml::value_t::floating: {
      // 1.0 must not read as the integer 1 in "randint bounds must be integers (got [1.0, 5])".
      std::string s = human(v.as_floating());
      return s.find_first_of(".eni") == std::string::npos ? s + ".0" : s;
    }
    case toml::value_t::string:
      return "\"" + sys::excerpt(v.as_string().str) + "\"";
    case toml::value_t::array: {
      // The first few values: a message quotes what the user wrote, not all of it.
      const auto& a = v.as_array();
      std::string out;
      for (std::size_t i = 0; i < a.size() && i < 8; ++i) out += (i == 0 ? "" : ", ") + human(a[i]);
      if (a.size() > 8) out += ", ... (" + std::to_string(a.size()) + " values)";
      return "[" + out + "]";
    }
    default:
      return type_name(v);
  }
}

// --- TOML output -------------------------------------------------------------------------

std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string toml_key(const std::string& k) {
  const bool bare = !k.empty() && std::all_of(k.begin(), k.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-';
  });
  return bare ? k : toml_string(k);
}

// Shortest text that reads back as the same double, and always as a TOML float (never an
// integer), so a choice of floats stays floats after a round trip.
std::string toml_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string display_name(const std::string& path) { return path.empty() ? "<config>" : path; }

// --- before toml11 sees the text ---------------------------------------------------------

namespace {

// One pass over the text, without recursion, before toml11 parses it:
// - refuses nesting deeper than kMaxDepth (arrays, inline tables, dotted keys and [a.b]
//   headers all count), since toml11 recurses per level and a file nested thousands deep
//   crashes it;
// - breaks the line after each comma between array elements. toml11 copies the current line
//   for every value it reads (for its messages), so a long line of many values costs the
//   square of its length; a newline there is whitespace, so the document is the same.
// `map` gets the way back to the file's lines. `name` and `with_lines` are for the error.
std::string prepare_toml(const std::string& in, const std::string& name, bool with_lines,
                         LineMap& map) {
  std::string out;
  out.reserve(in.size() + in.size() / 8);
  int line = 1;  // of the file, at in[i]
  auto emit = [&](char c) {
    if (c == '\n') map.newline(out.size(), line + 1);
    out += c;
  };
  struct Frame {
    char kind;     // '[' array or '{' inline table
    int depth;     // depth of its elements (an inline table's keys add their parts)
    bool in_key;   // inline table: reading a key
  };
  std::vector<Frame> stack;
  enum class Top { LineStart, Header, Key, Value } top = Top::LineStart;
  int table_depth = 0;   // of the current [header]
  int header_parts = 1;
  int key_parts = 1;
  int value_depth = 0;   // depth of the value being read
  auto check = [&](int depth) {
    if (depth <= kMaxDepth) return;
    throw ConfigError(name, with_lines ? line : 0, "",
                      "nested more than " + std::to_string(kMaxDepth) +
                          " levels deep (arrays, inline tables and the parts of dotted keys "
                          "all count). No config needs this; flatten it");
  };
  const std::size_t n = in.size();
  for (std::size_t i = 0; i < n; ++i) {
    const char c = in[i];
    if (c == '\n') {
      emit(c);
      ++line;
      if (stack.empty()) top = Top::LineStart;
      continue;
    }
    if (c == '#') {  // a comment, to the end of the line
      for (; i < n && in[i] != '\n'; ++i) out += in[i];
      --i;
      continue;
    }
    if (c == '"' || c == '\'') {  // a string or quoted key: copied, nothing inside counts
      if (stack.empty() && top == Top::LineStart) {
        top = Top::Key;
        key_parts = 1;
      }
      const bool basic = c == '"';
      const bool multi = in.compare(i, 3, std::string(3, c)) == 0;
      std::size_t j = i + (multi ? 3 : 1);
      for (std::size_t k = i; k < j; ++k) out += in[k];
      for (; j < n; ++j) {
        if (basic && in[j] == '\\' && j + 1 < n) {
          out += in[j++];
          emit(in[j]);
          if (in[j] == '\n') ++line;
          continue;
        }
        if (!multi && (in[j] == c || in[j] == '\n')) break;
        if (multi && in.compare(j, 3, std::string(3, c)) == 0) {
          // Up to two more quotes may close it: """a"""" is the string a".
          std::size_t end = j + 3;
          while (end < n && end < j + 5 && in[end] == c) ++end;
          out.append(in, j, end - j);
          j = end;
          break;
        }
        emit(in[j]);
        if (in[j] == '\n') ++line;
      }
      if (!multi && j < n && in[j] == c) out += in[j++];
      i = j - 1;  // a '\n' that ended an open string is read again as a newline
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      out += c;
      continue;
    }
    out += c;
    if (stack.empty()) {
      switch (top) {
        case Top::LineStart:
          if (c == '[') {
            top = Top::Header;
            header_parts = 1;
            break;
          }
          top = Top::Key;
          key_parts = 1;
          [[fallthrough]];
        case Top::Key:
          if (c == '.') check(table_depth + ++key_parts);
          if (c == '=') {
            top = Top::Value;
            value_depth = table_depth + key_parts;
            check(value_depth);
          }
          break;
        case Top::Header:
          if (c == '.') check(++header_parts);
          if (c == ']') {
            const bool array = i + 1 < n && in[i + 1] == ']';
            table_depth = header_parts + (array ? 1 : 0);
            check(table_depth);
            top = Top::Value;  // the rest of the line is a comment or an error
          }
          break;
        case Top::Value:
          if (c == '[' || c == '{') {
            stack.push_back({c, c == '[' ? value_depth + 1 : value_depth, true});
            key_parts = 1;
            check(stack.back().depth);
          }
          break;
      }
      continue;
    }
    Frame& f = stack.back();
    if (f.kind == '{' && f.in_key) {
      if (c == '.') check(f.depth + ++key_parts);
      if (c == '=') {
        f.in_key = false;
        value_depth = f.depth + key_parts;
        check(value_depth);
      }
      if (c == '}') stack.pop_back();
      continue;
    }
    if (c == '[' || c == '{') {
      const int base = f.kind == '[' ? f.depth : value_depth;
      stack.push_back({c, c == '[' ? base + 1 : base, true});
      key_parts = 1;
      check(stack.back().depth);
    } else if ((c == ']' && f.kind == '[') || (c == '}' && f.kind == '{')) {
      stack.pop_back();
    } else if (c == ',' && f.kind == '{') {
      f.in_key = true;
      key_parts = 1;
    } else if (c == ',' && f.kind == '[' && i + 1 < n && in[i + 1] != '\n' && in[i + 1] != '\r') {
      map.newline(out.size(), line);  // the next line of the parsed text is still this one
      out += '\n';
    }
  }
  return out;
}

}  // namespace

// Parses `text` as the document `name`; `map` (when given) gets the way back to its lines.
toml::value parse_toml(const std::string& text, const std::string& name, LineMap* map) {
  LineMap local;
  std::istringstream in(prepare_toml(text, name, map != nullptr, map ? *map : local));
  return toml::parse(in, name);
}

// toml11's messages span several lines with an ASCII-art excerpt; keep the headline and the
// last caret note ("^--- expected `=`"), which together say what is wrong on that line.
ConfigError syntax_error(const toml::exception& e, const std::string& file, const LineMap& map) {
  std::istringstream in(e.what());
  std::string line, head, note;
  while (std::getline(in, line)) {
    if (head.empty() && line.rfind("[error]", 0) == 0) {
      head = line.substr(7);
      if (const auto p = head.find(": "); p != std::string::npos && head.find("toml::") < p)
        head = head.substr(p + 2);
      head = trim(head);
      while (!head.empty() && head.back() == '.') head.pop_back();
    }
    for (const char* mark : {"^---", "~~~"})
      if (const auto p = line.find(mark); p != std::string::npos)
        note = trim(line.substr(line.find_first_not_of("^-~ ", p)));
  }
  std::string msg = "TOML syntax error: " + (head.empty() ? std::string("invalid TOML") : head);
  if (!note.empty() && note != head) msg += " (" + note + ")";
  return ConfigError(file, map.file_line(e.location().line()), "",
                     msg + ". Fix the TOML syntax on this line.");
}

// The name of an override's document, "--set KEY=VALUE", for messages. A long one is cut:
// toml11 copies the name into every region it makes while parsing, so a 1 MB --set took
// minutes to parse (quadratic) and its errors were 1 MB long.
std::string override_name(const std::string& ov, const std::map<std::string, std::string>& shown) {
  const auto it = shown.find(ov);
  return sys::excerpt(it != shown.end() ? it->second : kSetPrefix + ov, 200);
}

namespace {

// Counts the components of an override's key path (quoted keys may contain dots, so let the
// TOML parser split it).
std::size_t key_depth(const std::string& key, const std::string& name) {
  toml::value doc = parse_toml(key + " = 0", name);
  std::size_t depth = 0;
  for (const toml::value* v = &doc; v->is_table(); v = &v->as_table().begin()->second) ++depth;
  return depth;
}

}  // namespace

// Applies one "a.b.c=VALUE" to the tree. The leaf replaces what was there (so a domain is
// replaced as a whole); missing tables on the way are taken from the override, which keeps
// their "--set" origin for the unknown-key check.
void apply_override(toml::value& root, const std::string& ov, const std::string& name) {
  const auto eq = ov.find('=');
  const std::string key = trim(ov.substr(0, eq));
  if (eq == std::string::npos || key.empty() || ov.find('\n') != std::string::npos)
    throw ConfigError(name, 0, "",
                      "malformed override: expected KEY=VALUE on one line. "
                      "Write e.g. --set experiment.seed=3");
  const std::string value = trim(ov.substr(eq + 1));
  toml::value doc;
  std::size_t depth = 0;
  try {
    depth = key_depth(key, name);
    try {
      doc = parse_toml(key + " = " + value, name);
    } catch (const toml::exception&) {
      // Convenience: `experiment.name=foo` means the string "foo".
      doc = parse_toml(key + " = " + toml_string(value), name);
    }
  } catch (const toml::exception&) {
    throw ConfigError(name, 0, key,
                      "malformed override: the key is not a dotted key path. "
                      "Write e.g. --set experiment.seed=3");
  }
  toml::value* dst = &root;
  const toml::value* src = &doc;
  for (std::size_t i = 0; i < depth; ++i) {
    const auto& [k, sub] = *src->as_table().begin();
    auto& table = dst->as_table();
    const auto it = table.find(k);
    if (i + 1 == depth || it == table.end() || !it->second.is_table()) {
      table[k] = sub;
      return;
    }
    dst = &it->second;
    src = &sub;
  }
}

// toml11 reads a number that does not fit as the nearest limit (9223372036854775808 as
// INT64_MAX, 1e309 as DBL_MAX) without a word; read its text again to tell. "" if it fits,
// else the text.
std::string overflowed(const toml::value& v) {
  const bool at_limit =
      v.is_integer() ? v.as_integer() == INT64_MAX || v.as_integer() == INT64_MIN
                     : v.is_floating() && std::fabs(v.as_floating()) == std::numeric_limits<double>::max();
  const auto* r = at_limit ? dynamic_cast<const toml::detail::region*>(toml::detail::get_region(v)) : nullptr;
  if (!r) return "";
  std::string s;
  for (const char c : r->str())
    if (c != '_') s += c;
  if (v.is_floating()) {
    errno = 0;
    const double d = std::strtod(s.c_str(), nullptr);
    return errno == ERANGE && std::isinf(d) ? s : "";
  }
  std::string digits = s;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
    negative = digits[0] == '-';
    digits.erase(0, 1);
  }
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' && std::strchr("xob", digits[1])) {
    base = digits[1] == 'x' ? 16 : digits[1] == 'o' ? 8 : 2;
    digits.erase(0, 2);
  }
  if (negative) digits.insert(0, "-");
  std::int64_t x = 0;
  const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), x, base);
  return res.ec == std::errc::result_out_of_range ? s : "";
}

}  // namespace ranktune::config::config_detail

namespace ranktune::config {

std::string number_text(double d) { return config_detail::human(d); }

}  // namespace ranktune::config
