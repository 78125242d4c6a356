#include "io/config.h"
#include "io/schema.h"

#include "search/options.h"
#include "search/scheduler.h"
#include "search/searcher.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <toml.hpp>
#include <tuple>
#include <type_traits>
#include <unordered_set>

namespace ranktune::io {
namespace {

namespace fs = std::filesystem;

// Overrides are parsed as tiny TOML documents named "--set KEY=VALUE", so every value keeps
// its origin and errors in it point at the override instead of a line of the file.
const std::string kSetPrefix = "--set ";

// Columns of /trials in the results file; a parameter of the same name would collide.
const std::vector<std::string> kReservedColumns = trial_column_names();

// The experiment's name names the results file, and files beside it add to it (".logs",
// ".control", compact's ".NAME.compact-PID.tmp"): keep all of them under the 255 bytes a
// file name may have.
constexpr std::size_t kMaxNameLength = 128;
constexpr std::size_t kMaxResultsFileName = 200;
constexpr std::size_t kMaxResultsPath = 4000;  // of PATH_MAX = 4096, with room for the same

struct KindInfo {
  const char* name;
  search::DomainKind kind;
  std::size_t arity;  // 0: a list of values
  const char* hint;
};

const KindInfo kKinds[] = {
    {"uniform", search::DomainKind::Uniform, 2, "Write uniform = [low, high] with low < high."},
    {"loguniform", search::DomainKind::LogUniform, 2,
     "Use a positive lower bound such as 1e-6, below the upper bound."},
    {"quniform", search::DomainKind::QUniform, 3,
     "Write quniform = [low, high, q] with low < high and q > 0."},
    {"randint", search::DomainKind::RandInt, 2,
     "Write randint = [low, high] with integers low < high (high is excluded)."},
    {"choice", search::DomainKind::Choice, 0,
     "List at least one value: all numbers or all strings."},
    {"grid", search::DomainKind::Grid, 0, "List at least one value: all numbers or all strings."},
};

const KindInfo& kind_info(search::DomainKind k) {
  for (const auto& info : kKinds)
    if (info.kind == k) return info;
  throw std::logic_error("unknown DomainKind");
}

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
      return "\"" + search::excerpt(v.as_string().str) + "\"";
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

std::string toml_value(const search::Value& v) {
  if (const auto* d = std::get_if<double>(&v)) return toml_float(*d);
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  return toml_string(std::get<std::string>(v));
}

std::string toml_domain(const search::Domain& d) {
  std::string items;
  auto add = [&](const std::string& s) { items += (items.empty() ? "" : ", ") + s; };
  if (d.is_listed()) {
    for (const auto& v : d.values) add(toml_value(v));
  } else if (d.kind == search::DomainKind::RandInt) {
    add(std::to_string(static_cast<std::int64_t>(d.low)));
    add(std::to_string(static_cast<std::int64_t>(d.high)));
  } else {
    add(toml_float(d.low));
    add(toml_float(d.high));
    if (d.kind == search::DomainKind::QUniform) add(toml_float(d.q));
  }
  return std::string("{ ") + kind_info(d.kind).name + " = [" + items + "] }";
}

// --- before toml11 sees the text ---------------------------------------------------------

// Deeper than any config needs (a domain sits 5 levels deep), far below what toml11's
// recursive parser can take before it overflows the stack.
constexpr int kMaxDepth = 32;

// Maps offsets of the text toml11 parsed back to lines of the file, which differ where
// prepare_toml() broke a line.
class LineMap {
 public:
  LineMap() : line_of_(1, 1) {}
  // The file's line (1-based) of byte `offset` of the parsed text.
  int line_at(std::size_t offset) const {
    const auto k = std::lower_bound(newlines_.begin(), newlines_.end(), offset) - newlines_.begin();
    return line_of_[static_cast<std::size_t>(k)];
  }
  // The file's line of line `parsed` (1-based) of the parsed text.
  int file_line(std::size_t parsed) const {
    return parsed == 0 ? 0 : line_of_[std::min(parsed, line_of_.size()) - 1];
  }
  void newline(std::size_t offset, int next_file_line) {
    newlines_.push_back(offset);
    line_of_.push_back(next_file_line);
  }

 private:
  std::vector<std::size_t> newlines_;  // offsets of '\n' in the parsed text
  std::vector<int> line_of_;           // line of the parsed text (0-based) -> line of the file
};

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

// Parses `text` as the document `name`; `map` (when given) gets the way back to its lines.
toml::value parse_toml(const std::string& text, const std::string& name, LineMap* map = nullptr) {
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
std::string override_name(const std::string& ov) { return search::excerpt(kSetPrefix + ov, 200); }

// Counts the components of an override's key path (quoted keys may contain dots, so let the
// TOML parser split it).
std::size_t key_depth(const std::string& key, const std::string& name) {
  toml::value doc = parse_toml(key + " = 0", name);
  std::size_t depth = 0;
  for (const toml::value* v = &doc; v->is_table(); v = &v->as_table().begin()->second) ++depth;
  return depth;
}

// Applies one "a.b.c=VALUE" to the tree. The leaf replaces what was there (so a domain is
// replaced as a whole); missing tables on the way are taken from the override, which keeps
// their "--set" origin for the unknown-key check.
void apply_override(toml::value& root, const std::string& ov) {
  const std::string name = override_name(ov);
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

// --- the validating reader ---------------------------------------------------------------

class Parser {
 public:
  Parser(std::string file, const LineMap& lines, const std::vector<std::string>& overrides)
      : file_(std::move(file)), lines_(lines) {
    for (const auto& ov : overrides) set_names_.push_back(override_name(ov));
  }

  // Call on the file's tree before overrides, so a key an override replaces keeps its place.
  void remember_order(const toml::value& root) { remember_order({&root, ""}); }
  void parse(const toml::value& root, ExperimentConfig& cfg, const fs::path& config_dir);

 private:
  // A table being read, with its dotted path for messages. `v` is null for an absent
  // optional table, which then reads as empty.
  struct Table {
    const toml::value* v;
    std::string path;
    std::string key(const std::string& k) const { return path.empty() ? k : path + "." + k; }
  };
  using Entry = std::pair<const std::string*, const toml::value*>;

  // The document a value came from (the file, or an override's "--set ..." text) and its
  // byte offset there. Read from toml11's region directly: its location() counts the lines
  // from the top of the document on every call, which made reading a config quadratic.
  static std::pair<std::string, std::size_t> origin(const toml::value& v) {
    if (const auto* r = dynamic_cast<const toml::detail::region*>(toml::detail::get_region(v)))
      return {r->name(), static_cast<std::size_t>(r->first() - r->begin())};
    return {"", 0};
  }

  std::pair<std::string, int> where(const toml::value* v) const {
    if (v) {
      auto [name, offset] = origin(*v);
      if (name == file_) return {file_, lines_.line_at(offset)};
      if (name.rfind(kSetPrefix, 0) == 0) return {std::move(name), 0};
    }
    return {file_, 0};
  }

  [[noreturn]] void fail(const toml::value* at, const std::string& key,
                         const std::string& message) const {
    const auto [file, line] = where(at);
    throw ConfigError(file, line, key, message);
  }

  // Keys in the order they were written (toml11 stores tables unordered): the file first,
  // then keys that only overrides added, in override order. Parameter order and "first
  // error" both depend on it.
  std::vector<Entry> entries(const Table& t) const {
    std::vector<Entry> out;
    if (!t.v) return out;
    // Each entry's place is worked out once, not once per comparison of the sort.
    using Place = std::tuple<long, long, const std::string*>;
    std::vector<std::pair<Place, Entry>> placed;
    placed.reserve(t.v->as_table().size());
    for (const auto& [k, v] : t.v->as_table()) {
      Place place;
      if (const auto it = file_order_.find(t.key(k)); it != file_order_.end()) {
        place = {0L, it->second, &k};
      } else {
        const auto [name, offset] = origin(v);
        const auto set = std::find(set_names_.begin(), set_names_.end(), name);
        const long rank = name == file_ ? 0
                          : set != set_names_.end() ? 1 + (set - set_names_.begin())
                                                   : LONG_MAX;
        place = {rank, static_cast<long>(offset), &k};
      }
      placed.emplace_back(place, Entry{&k, &v});
    }
    std::sort(placed.begin(), placed.end(), [](const auto& a, const auto& b) {
      const auto& [ra, pa, ka] = a.first;
      const auto& [rb, pb, kb] = b.first;
      return std::tie(ra, pa, *ka) < std::tie(rb, pb, *kb);
    });
    out.reserve(placed.size());
    for (const auto& [place, e] : placed) out.push_back(e);
    return out;
  }

  void remember_order(const Table& t) {
    for (const auto& [k, v] : entries(t)) {
      file_order_.emplace(t.key(*k), static_cast<long>(file_order_.size()));
      if (v->is_table()) remember_order({v, t.key(*k)});
    }
  }

  void record_lines(const Table& t, std::map<std::string, int>& lines) const {
    for (const auto& [k, v] : entries(t)) {
      lines[t.key(*k)] = where(v).second;
      if (v->is_table()) record_lines({v, t.key(*k)}, lines);
    }
  }

  const toml::value* find(const Table& t, const std::string& k) const {
    if (!t.v) return nullptr;
    const auto& table = t.v->as_table();
    const auto it = table.find(k);
    return it == table.end() ? nullptr : &it->second;
  }

  Table sub(const Table& t, const std::string& k, bool required) const {
    const toml::value* v = find(t, k);
    if (!v && required)
      fail(t.v, t.key(k), "missing required table. Add a [" + t.key(k) + "] section");
    if (v && !v->is_table())
      fail(v, t.key(k),
           "expected a table, got " + type_name(*v) + ". Write it as [" + t.key(k) +
               "] followed by its keys");
    return {v, t.key(k)};
  }

  // The one place that rejects unknown keys. `misplaced` keys are valid elsewhere (the other
  // trainable kind) and get `misplaced_why` instead of a spelling suggestion.
  void check_keys(const Table& t, const std::vector<std::string>& allowed,
                  const std::vector<std::string>& misplaced = {},
                  const std::string& misplaced_why = "") const {
    for (const auto& [k, v] : entries(t)) {
      if (contains(allowed, *k)) continue;
      if (contains(misplaced, *k)) fail(v, t.key(*k), misplaced_why);
      std::string msg =
          t.path.empty() && v->is_table() ? "unknown section [" + search::excerpt(*k) + "]" : "unknown key";
      if (const auto s = did_you_mean(*k, allowed); !s.empty())
        msg += ". Did you mean '" + s + "'?";
      else
        msg += std::string(". Valid ") +
               (t.path.empty() ? "sections" : "keys in [" + t.path + "]") + ": " +
               quoted_list(allowed);
      fail(v, t.key(*k), msg);
    }
  }

  [[noreturn]] void wrong_type(const toml::value& v, const std::string& key,
                               const std::string& expected, const std::string& hint = "") const {
    fail(&v, key,
         "expected " + expected + ", got " + type_name(v) + " (" + human(v) + ")" +
             (hint.empty() ? "" : ". " + hint));
  }

  // Conversions behind read(): each checks the TOML type and names both types on mismatch.
  void convert(const toml::value& v, const std::string& key, std::string& out) const {
    if (!v.is_string()) wrong_type(v, key, "a string");
    out = v.as_string().str;
  }
  // Refuses a number toml11 clamped (see overflowed()).
  void check_fits(const toml::value& v, const std::string& key) const {
    if (const std::string text = overflowed(v); !text.empty())
      fail(&v, key,
           "is out of range (got " + search::excerpt(text) + "): " +
               (v.is_integer() ? "integers must lie in [-2^63, 2^63 - 1]"
                               : "numbers must lie within about +-1.8e308"));
  }
  void convert(const toml::value& v, const std::string& key, double& out) const {
    check_fits(v, key);
    if (v.is_integer()) {
      out = static_cast<double>(v.as_integer());
    } else if (v.is_floating()) {
      out = v.as_floating();
      if (!std::isfinite(out)) fail(&v, key, "must be a finite number (got " + human(out) + ")");
    } else {
      wrong_type(v, key, "a number");
    }
  }
  void convert(const toml::value& v, const std::string& key, bool& out) const {
    if (!v.is_boolean()) wrong_type(v, key, "true or false");
    out = v.as_boolean();
  }
  void convert(const toml::value& v, const std::string& key, std::int64_t& out) const {
    if (!v.is_integer()) wrong_type(v, key, "an integer");
    check_fits(v, key);
    out = v.as_integer();
  }
  void convert(const toml::value& v, const std::string& key, int& out) const {
    std::int64_t wide = 0;
    convert(v, key, wide);
    if (wide < INT_MIN || wide > INT_MAX) fail(&v, key, "is out of range (got " + human(v) + ")");
    out = static_cast<int>(wide);
  }
  void convert(const toml::value& v, const std::string& key, std::vector<std::string>& out) const {
    if (!v.is_array()) wrong_type(v, key, "an array of strings");
    out.clear();
    for (const auto& e : v.as_array()) {
      if (!e.is_string())
        wrong_type(e, key, "an array of strings, with an element that is a string");
      out.push_back(e.as_string().str);
    }
  }
  void convert(const toml::value& v, const std::string& key,
               std::map<std::string, std::string>& out) const {
    if (!v.is_table()) wrong_type(v, key, "a table of strings such as { NAME = \"value\" }");
    out.clear();
    for (const auto& [k, e] : entries({&v, key})) {
      if (k->empty() || k->find('=') != std::string::npos)
        fail(e, key + "." + *k, "is not a valid environment variable name");
      convert(*e, key + "." + *k, out[*k]);
    }
  }

  // Reads `k` of `t` into `out` when present; returns whether it was.
  template <class T>
  bool read(const Table& t, const std::string& k, T& out) const {
    const toml::value* v = find(t, k);
    if (v) convert(*v, t.key(k), out);
    return v != nullptr;
  }

  template <class T>
  void read_required(const Table& t, const std::string& k, T& out,
                     const std::string& example) const {
    if (!read(t, k, out))
      fail(t.v, t.key(k),
           "missing required key. Add " + k + " = " + example + " under [" + t.path + "]");
  }

  // Lower bound `min` (exclusive when `strict`), checked on the value as read.
  template <class T>
  void read_min(const Table& t, const std::string& k, T& out, T min, bool strict = false) const {
    if (!read(t, k, out) || (strict ? out > min : out >= min)) return;
    const std::string bound = (strict ? "> " : ">= ") + human(static_cast<double>(min));
    fail(find(t, k), t.key(k),
         "must be " + bound + " (got " + human(*find(t, k)) + "). Use a value " + bound);
  }

  // As read_min, and at most `max`: ranktune's limits (configs/README.md, "Limits") keep
  // counts from overflowing and durations from overflowing the clocks.
  template <class T>
  void read_range(const Table& t, const std::string& k, T& out, T min, T max,
                  bool strict = false) const {
    read_min(t, k, out, min, strict);
    if (out <= max) return;
    const std::string limit = std::is_integral_v<T> ? std::to_string(max) : human(static_cast<double>(max));
    fail(find(t, k), t.key(k),
         "must be <= " + limit + " (got " + human(*find(t, k)) +
             "); that is ranktune's limit (configs/README.md, \"Limits\")");
  }

  bool read_enum(const Table& t, const std::string& k, const std::vector<std::string>& valid,
                 std::string& out, bool required = false) const {
    if (required)
      read_required(t, k, out, "\"" + valid.front() + "\"");
    else if (!read(t, k, out))
      return false;
    if (contains(valid, out)) return true;
    std::string msg = "unknown value \"" + search::excerpt(out) + "\"";
    const auto s = did_you_mean(out, valid);
    msg += s.empty() ? "." : ". Did you mean \"" + s + "\"?";
    fail(find(t, k), t.key(k), msg + " Valid values: " + quoted_list(valid));
  }

  // Every key of `t` but `reserved` into `out`: integers and floats as numbers, strings as
  // strings, booleans as 0/1. Anything else is an error here, since no option takes it yet.
  void read_options(const Table& t, const std::vector<std::string>& reserved,
                    search::Options& out) const {
    for (const auto& [k, v] : entries(t)) {
      if (contains(reserved, *k)) continue;
      if (v->is_integer()) {
        check_fits(*v, t.key(*k));
        out[*k] = static_cast<std::int64_t>(v->as_integer());
      } else if (v->is_floating()) {
        double d = 0;
        convert(*v, t.key(*k), d);
        out[*k] = d;
      } else if (v->is_string()) {
        out[*k] = v->as_string().str;
      } else if (v->is_boolean()) {
        out[*k] = static_cast<std::int64_t>(v->as_boolean() ? 1 : 0);
      } else if (v->is_array() && v->as_array().size() == 2 && v->as_array()[0].is_floating() + v->as_array()[0].is_integer() +
                                                                      v->as_array()[1].is_floating() + v->as_array()[1].is_integer() == 2) {
        // A [low, high] pair (PBT's explore bounds): two options, KEY.low and KEY.high.
        const auto& a = v->as_array();
        check_fits(a[0], t.key(*k));
        check_fits(a[1], t.key(*k));
        out[*k + ".low"] = a[0].is_integer() ? static_cast<double>(a[0].as_integer()) : a[0].as_floating();
        out[*k + ".high"] = a[1].is_integer() ? static_cast<double>(a[1].as_integer()) : a[1].as_floating();
      } else if (v->is_table()) {
        // A sub-table (e.g. [scheduler.bounds]): its keys arrive as "TABLE.KEY".
        search::Options inner;
        read_options(Table{v, t.key(*k)}, {}, inner);
        for (auto& [ik, iv] : inner) out[*k + "." + ik] = std::move(iv);
      } else {
        wrong_type(*v, t.key(*k), "a number, a string, a boolean, a [low, high] pair or a table");
      }
    }
  }

  // The results file and the files beside it must be creatable: a name too long for the
  // file system failed only at `run`, with "File name too long".
  void check_results_path(const toml::value* at, const std::string& key, const std::string& path) const {
    const auto too_long = [&](const std::string& what, std::size_t size, std::size_t max) {
      fail(at, key,
           what + " is " + std::to_string(size) + " characters long; at most " + std::to_string(max) +
               " are allowed (got \"" + search::excerpt(path) +
               "\"). It and the files beside it must fit the file system's limits; use a shorter one");
    };
    if (path.size() > kMaxResultsPath) too_long("the results path", path.size(), kMaxResultsPath);
    const fs::path p(path);
    if (p.filename().string().size() > kMaxResultsFileName)
      too_long("the results file's name", p.filename().string().size(), kMaxResultsFileName);
    for (const auto& part : p)
      if (part.string().size() > NAME_MAX) too_long("a folder of the results path", part.string().size(), NAME_MAX);
  }

  // The trials the experiment plans, counted before any searcher is built: num_samples x the
  // grid x repeat wrapped around int64 (10^24 became 2003764205206896640), and a grid of 10^6
  // points with num_samples = 2^63 - 1 started no trial at all.
  void check_trial_count(const Table& e, const Table& s, const ExperimentConfig& cfg) const {
    const bool crossed = cfg.algorithm == "random" || cfg.algorithm == "grid";
    double points = 1;  // a double: the product of many axes overflows any integer
    for (const auto& p : cfg.space.params)
      if (crossed && (p.domain.kind == search::DomainKind::Grid ||
                      (cfg.algorithm == "grid" && p.domain.kind == search::DomainKind::Choice)))
        points *= static_cast<double>(p.domain.values.size());
    const auto max = static_cast<double>(search::kMaxTrials);
    if (points > max)
      fail(find(s, "space"), s.key("space"),
           "the grid has " + human(points) + " points (the product of the sizes of its axes); at most " +
               human(max) + " are allowed (configs/README.md, \"Limits\"). Use fewer values");
    double repeat = 1;
    if (const auto it = cfg.search_options.find("repeat"); it != cfg.search_options.end())
      if (const auto* r = std::get_if<std::int64_t>(&it->second); r && *r >= 1 && *r <= search::kMaxRepeat)
        repeat = static_cast<double>(*r);
    const double trials = static_cast<double>(cfg.num_samples) * points * repeat;
    if (trials > max)
      fail(find(e, "num_samples") ? find(e, "num_samples") : e.v, e.key("num_samples"),
           "num_samples (" + std::to_string(cfg.num_samples) + ") x grid points (" + human(points) +
               ") x repeat (" + human(repeat) + ") makes " + human(trials) + " trials; at most " + human(max) +
               " are allowed (configs/README.md, \"Limits\"). Lower num_samples");
  }

  search::Domain domain(const toml::value& v, const std::string& path) const;
  void read_space(const Table& t, search::Space& space) const;
  void read_trainable(const Table& t, ExperimentConfig& cfg, const fs::path& config_dir) const;

  std::string file_;
  const LineMap& lines_;  // of the file
  std::vector<std::string> set_names_;
  std::map<std::string, long> file_order_;  // key path -> position in the file
};

search::Domain Parser::domain(const toml::value& v, const std::string& path) const {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& info : kKinds) n.push_back(info.name);
    return n;
  }();
  const std::string example = "Write e.g. " + path.substr(path.rfind('.') + 1) +
                              " = { uniform = [0.0, 1.0] }; kinds: " + quoted_list(names);
  if (!v.is_table()) wrong_type(v, path, "an inline table naming one domain", example);
  const auto& table = v.as_table();
  if (table.size() != 1)
    fail(&v, path,
         "a domain names exactly one kind (got " + std::to_string(table.size()) + "). " + example);
  const auto& [name, arr] = *table.begin();
  const auto info = std::find_if(std::begin(kKinds), std::end(kKinds),
                                 [&](const KindInfo& i) { return name == i.name; });
  if (info == std::end(kKinds)) {
    const auto s = did_you_mean(name, names);
    fail(&arr, path,
         "unknown domain kind '" + name + "'. " +
             (s.empty() ? example : "Did you mean '" + s + "'?"));
  }
  if (!arr.is_array()) wrong_type(arr, path, std::string("an array after ") + info->name);
  const auto& items = arr.as_array();

  search::Domain d;
  d.kind = info->kind;
  if (info->arity != 0) {
    if (items.size() != info->arity)
      fail(&arr, path,
           std::string(info->name) + " takes " + std::to_string(info->arity) + " numbers (got " +
               std::to_string(items.size()) + "). " + info->hint);
    double nums[3] = {0, 0, 0};
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (d.kind == search::DomainKind::RandInt && !items[i].is_integer())
        fail(&arr, path, "randint bounds must be integers (got " + human(arr) + "). " + info->hint);
      convert(items[i], path, nums[i]);
    }
    d.low = nums[0];
    d.high = nums[1];
    d.q = nums[2];
  } else {
    // Numbers and strings cannot share a column; ints mixed with floats become floats.
    bool any_float = false, any_number = false, any_string = false;
    for (const auto& e : items) {
      check_fits(e, path);
      if (e.is_floating()) {
        any_float = true;
        double x;
        convert(e, path, x);  // rejects nan/inf
      }
      if (!e.is_integer() && !e.is_floating() && !e.is_string())
        fail(&e, path,
             std::string(info->name) + " values must be numbers or strings (got " + type_name(e) +
                 "). " + info->hint);
      (e.is_string() ? any_string : any_number) = true;
    }
    if (any_number && any_string)
      fail(&arr, path,
           std::string(info->name) + " values mix numbers and strings (got " + human(arr) + "). " +
               info->hint);
    for (const auto& e : items) {
      if (e.is_string())
        d.values.emplace_back(e.as_string().str);
      else if (any_float)
        d.values.emplace_back(e.is_integer() ? double(e.as_integer()) : e.as_floating());
      else
        d.values.emplace_back(e.as_integer());
    }
  }
  // The numeric invariants live in search::check_domain; only the wording of the hint is ours.
  if (std::string problem = search::check_domain(d); !problem.empty()) {
    while (!problem.empty() && (problem.back() == '.' || problem.back() == ' ')) problem.pop_back();
    if (problem.find("(got") == std::string::npos) problem += " (got " + human(arr) + ")";
    fail(&arr, path, problem + ". " + info->hint);
  }
  return d;
}

void Parser::read_space(const Table& t, search::Space& space) const {
  const auto params = entries(t);
  if (params.empty())
    fail(t.v, t.path, "no parameters. Add at least one, e.g. x = { uniform = [0.0, 1.0] }");
  for (const auto& [name, v] : params) {
    const std::string path = t.key(*name);
    const bool ident = !name->empty() && !std::isdigit(static_cast<unsigned char>(name->front())) &&
                       name->front() != '.' &&
                       std::all_of(name->begin(), name->end(), [](unsigned char c) {
                         return std::isalnum(c) || c == '_' || c == '.';
                       });
    if (!ident)
      fail(v, path,
           "parameter name \"" + search::excerpt(*name) +
               "\" is not an identifier. Use letters, digits, "
               "'_' and '.', starting with a letter or '_'");
    if (contains(kReservedColumns, *name))
      fail(v, path,
           "parameter name \"" + *name +
               "\" is reserved for a results column. "
               "Rename it (reserved: " +
               quoted_list(kReservedColumns) + ")");
    space.params.push_back({*name, domain(*v, path)});
  }
}

void Parser::read_trainable(const Table& t, ExperimentConfig& cfg,
                            const fs::path& config_dir) const {
  static const std::vector<std::string> kinds = {"synthetic", "command", "mlp"};
  static const std::vector<std::string> synthetic = {"function", "seconds_per_step", "noise"};
  static const std::vector<std::string> command = {"command", "workdir", "env", "step_timeout_s",
                                                   "max_log_mb", "kill_grace_s", "metrics", "checkpoint"};
  static const std::vector<std::string> mlp = {"data_dir",           "val_fraction", "batches_per_step",
                                               "threads_per_worker", "device",       "train_samples",
                                               "val_samples"};
  TrainableSpec& tr = cfg.trainable;
  read_enum(t, "kind", kinds, tr.kind, /*required=*/true);
  const bool is_command = tr.kind == "command";
  const auto keys_of = [&](const std::string& kind) -> const std::vector<std::string>& {
    return kind == "command" ? command : kind == "mlp" ? mlp : synthetic;
  };
  std::vector<std::string> allowed = {"kind"};
  allowed.insert(allowed.end(), keys_of(tr.kind).begin(), keys_of(tr.kind).end());
  // A key of another kind gets its own message rather than a spelling suggestion.
  for (const auto& [k, v] : entries(t)) {
    if (contains(allowed, *k)) continue;
    for (const auto& other : kinds)
      if (other != tr.kind && contains(keys_of(other), *k))
        fail(v, t.key(*k),
             "applies only to kind = \"" + other + "\" (this trainable is \"" + tr.kind +
                 "\"). Remove it, or set kind = \"" + other + "\"");
  }
  check_keys(t, allowed);

  if (tr.kind == "mlp") {
    std::string data_dir;
    if (read(t, "data_dir", data_dir)) {
      if (data_dir.empty())
        fail(find(t, "data_dir"), t.key("data_dir"),
             "must not be empty. Omit it to use Debian's dataset-fashion-mnist");
      tr.data_dir = (config_dir / data_dir).lexically_normal().string();
    }
    if (read(t, "val_fraction", tr.val_fraction) &&
        !(tr.val_fraction > 0 && tr.val_fraction < 1))
      fail(find(t, "val_fraction"), t.key("val_fraction"),
           "must be in (0, 1) (got " + human(tr.val_fraction) + "). Use e.g. 0.1");
    read_range(t, "batches_per_step", tr.batches_per_step, std::int64_t{0}, search::kMaxIterations);
    read_min(t, "threads_per_worker", tr.threads_per_worker, 1);
    if (tr.threads_per_worker > 1024)
      fail(find(t, "threads_per_worker"), t.key("threads_per_worker"),
           "must be <= 1024 (got " + std::to_string(tr.threads_per_worker) + ")");
    read_enum(t, "device", {"auto", "cpu", "cuda"}, tr.device);
    read_min(t, "train_samples", tr.train_samples, std::int64_t{0});
    read_min(t, "val_samples", tr.val_samples, std::int64_t{0});
    return;
  }
  if (!is_command) {
    read(t, "function", tr.function);
    // A longer sleep overflows the clock and sleeps not at all.
    read_range(t, "seconds_per_step", tr.seconds_per_step, 0.0, search::kMaxSeconds);
    read_min(t, "noise", tr.noise, 0.0);
    return;
  }
  read_required(t, "command", tr.command, "[\"python3\", \"train.py\"]");
  if (tr.command.empty() || tr.command.front().empty())
    fail(find(t, "command"), t.key("command"),
         "must start with a program to run. Write e.g. command = [\"python3\", \"train.py\"]");
  // A program named by a relative path with a '/' is next to the config, not wherever
  // ranktune happens to be started.
  if (const fs::path prog = tr.command.front();
      prog.is_relative() && tr.command.front().find('/') != std::string::npos)
    tr.command.front() = (config_dir / prog).lexically_normal().string();
  std::string workdir;
  read(t, "workdir", workdir);
  fs::path wd = (config_dir / workdir).lexically_normal();
  if (!wd.has_filename() && wd.has_relative_path()) wd = wd.parent_path();
  tr.workdir = wd.string();
  read(t, "env", tr.env);
  read_range(t, "step_timeout_s", tr.step_timeout_s, 0.0, search::kMaxSeconds);
  // A log is cut into a head and a tail of whole KiB; a million MiB (1 TiB) is past any
  // sane log and keeps the byte count far from overflow.
  read_min(t, "max_log_mb", tr.max_log_mb, 0.0);
  if (tr.max_log_mb != 0 && !(tr.max_log_mb >= 0.01 && tr.max_log_mb <= 1e6))
    fail(find(t, "max_log_mb"), t.key("max_log_mb"),
         "must be 0 (no cap) or between 0.01 and 1000000 MiB (got " + human(tr.max_log_mb) + "). Use e.g. 100");
  // Bounded: the worker waits this long for every stopped trial, and a huge value would
  // keep a graceful stop from ever ending.
  if (read(t, "kill_grace_s", tr.kill_grace_s) && !(tr.kill_grace_s >= 0 && tr.kill_grace_s <= kMaxKillGraceS))
    fail(find(t, "kill_grace_s"), t.key("kill_grace_s"),
         "must be between 0 and " + human(kMaxKillGraceS) + " seconds (got " + human(*find(t, "kill_grace_s")) +
             "): the time a stopped program has between SIGTERM and SIGKILL. Use e.g. 2");
  read(t, "checkpoint", tr.checkpoint);
  std::vector<std::string> listed;
  read(t, "metrics", listed);
  tr.metrics = {cfg.metric};
  std::unordered_set<std::string> seen = {cfg.metric};  // a linear scan per name was quadratic
  for (const auto& m : listed) {
    if (m.empty()) fail(find(t, "metrics"), t.key("metrics"), "metric names must not be empty");
    if (seen.insert(m).second) tr.metrics.push_back(m);
  }
}

void Parser::parse(const toml::value& root, ExperimentConfig& cfg, const fs::path& config_dir) {
  const Table top{&root, ""};
  record_lines(top, cfg.lines);
  check_keys(top, {"experiment", "search", "scheduler", "trainable", "stop", "resources", "checkpoint"});

  const Table e = sub(top, "experiment", true);
  check_keys(e, {"name", "metric", "mode", "seed", "num_samples", "results", "max_failures",
                 "non_finite", "flush_interval_ms", "status_interval_s"});
  read_required(e, "name", cfg.name, "\"my_experiment\"");
  if (cfg.name.empty() || !std::all_of(cfg.name.begin(), cfg.name.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '_' || c == '.' || c == '-';
      }))
    fail(find(e, "name"), e.key("name"),
         "must match [A-Za-z0-9_.-]+ (got \"" + search::excerpt(cfg.name) +
             "\"). It names the results file; use letters, "
             "digits, '_', '.' and '-'");
  if (cfg.name.size() > kMaxNameLength)
    fail(find(e, "name"), e.key("name"),
         "is " + std::to_string(cfg.name.size()) + " characters long; at most " +
             std::to_string(kMaxNameLength) + " are allowed (got \"" + search::excerpt(cfg.name) +
             "\"). It names the results file and the files beside it; use a shorter name");
  read_required(e, "metric", cfg.metric, "\"loss\"");
  if (cfg.metric.empty())
    fail(find(e, "metric"), e.key("metric"), "must not be empty. Name the metric to optimize");
  std::string mode;
  read_enum(e, "mode", {"max", "min"}, mode, /*required=*/true);
  cfg.mode = mode == "max" ? search::Mode::Max : search::Mode::Min;
  std::int64_t seed = 0;
  read_min(e, "seed", seed, std::int64_t{0});
  cfg.seed = static_cast<std::uint64_t>(seed);
  read_range(e, "num_samples", cfg.num_samples, std::int64_t{1}, search::kMaxTrials);
  std::string results = cfg.name + ".h5";
  if (read(e, "results", results) && results.empty())
    fail(find(e, "results"), e.key("results"),
         "must not be empty. Omit it to use \"" + cfg.name + ".h5\"");
  cfg.results = fs::absolute(results).lexically_normal().string();
  check_results_path(find(e, "results") ? find(e, "results") : find(e, "name"),
                     find(e, "results") ? e.key("results") : e.key("name"), cfg.results);
  read_min(e, "max_failures", cfg.max_failures, 0);
  read_enum(e, "non_finite", {"error", "worst"}, cfg.non_finite);
  read_range(e, "flush_interval_ms", cfg.flush_interval_ms, 0.0, search::kMaxSeconds * 1000, /*strict=*/true);
  read_range(e, "status_interval_s", cfg.status_interval_s, 0.0, search::kMaxSeconds, /*strict=*/true);

  // The algorithms own their options: the keys besides algorithm/kind pass through, and
  // the factories check them (see search/options.h).
  const Table s = sub(top, "search", true);
  read_enum(s, "algorithm", search::searcher_names(), cfg.algorithm);
  read_space(sub(s, "space", true), cfg.space);
  read_options(s, {"algorithm", "space"}, cfg.search_options);
  check_trial_count(e, s, cfg);

  const Table sch = sub(top, "scheduler", false);
  read_enum(sch, "kind", search::scheduler_names(), cfg.scheduler);
  read_options(sch, {"kind"}, cfg.scheduler_options);

  read_trainable(sub(top, "trainable", true), cfg, config_dir);

  const Table st = sub(top, "stop", false);
  check_keys(st, {"max_t", "time_budget_s", "target"});
  read_range(st, "max_t", cfg.max_t, std::int64_t{1}, search::kMaxIterations);
  read_range(st, "time_budget_s", cfg.time_budget_s, 0.0, search::kMaxSeconds);
  if (double target = 0; read(st, "target", target)) cfg.target = target;

  const Table ck = sub(top, "checkpoint", false);
  check_keys(ck, {"every", "at_end", "keep_last", "keep_best"});
  read_range(ck, "every", cfg.checkpoint_every, std::int64_t{0}, search::kMaxIterations);
  read(ck, "at_end", cfg.checkpoint_at_end);
  read_range(ck, "keep_last", cfg.checkpoint_keep_last, std::int64_t{0}, search::kMaxIterations);
  read_range(ck, "keep_best", cfg.checkpoint_keep_best, std::int64_t{0}, search::kMaxIterations);

  const Table r = sub(top, "resources", false);
  check_keys(r, {"ranks_per_trial"});
  read_min(r, "ranks_per_trial", cfg.ranks_per_trial, 1);
  // A command is one process of the user's: it cannot join the gang's communicator.
  if (cfg.ranks_per_trial > 1 && cfg.trainable.kind == "command")
    fail(find(r, "ranks_per_trial"), r.key("ranks_per_trial"),
         "gang trials (ranks_per_trial > 1) need a built-in trainable (mlp, synthetic): a command "
         "trainable runs as one process per trial. Use ranks_per_trial = 1, or launch your own "
         "distributed job from the command");
}

std::string display_name(const std::string& path) { return path.empty() ? "<config>" : path; }

}  // namespace

ConfigError::ConfigError(std::string file, int line, std::string key, const std::string& message)
    : std::runtime_error([&] {
        // An override names itself ("--set KEY=VALUE"): quote a long one shortly, as values are.
        std::string s = (file.rfind(kSetPrefix, 0) == 0 ? search::excerpt(file, 200) : file) +
                        (line > 0 ? ":" + std::to_string(line) : "") + ": " +
                        (key.empty() ? "" : search::excerpt(key, 200) + ": ") + message;
        std::replace(s.begin(), s.end(), '\n', ' ');
        return s;
      }()),
      file_(std::move(file)),
      line_(line),
      key_(std::move(key)) {}

void ExperimentConfig::fail(const std::string& key, const std::string& message) const {
  // The nearest recorded ancestor: a defaulted key is best pointed at by its section.
  for (std::string k = key;;) {
    if (const auto it = lines.find(k); it != lines.end()) {
      if (it->second > 0) throw ConfigError(display_name(path), it->second, key, message);
      // Line 0: the key came from an override; name the last one that set it.
      for (auto o = overrides.rbegin(); o != overrides.rend(); ++o) {
        const std::string set = trim(o->substr(0, o->find('=')));
        if (k == set || k.rfind(set + ".", 0) == 0 || set.rfind(k + ".", 0) == 0)
          throw ConfigError(kSetPrefix + *o, 0, key, message);
      }
      break;
    }
    const auto dot = k.rfind('.');
    if (dot == std::string::npos) break;
    k.resize(dot);
  }
  throw ConfigError(display_name(path), 0, key, message);
}

ExperimentConfig parse_config(const std::string& text, const std::string& path,
                              const std::vector<std::string>& overrides) {
  const std::string file = display_name(path);
  toml::value root;
  LineMap lines;
  try {
    root = parse_toml(text, file, &lines);
  } catch (const toml::exception& e) {
    throw syntax_error(e, file, lines);
  }
  Parser parser(file, lines, overrides);
  parser.remember_order(root);
  for (const auto& ov : overrides) apply_override(root, ov);

  ExperimentConfig cfg;
  cfg.path = path.empty() ? "" : fs::absolute(path).lexically_normal().string();
  cfg.text = text;
  cfg.overrides = overrides;
  const fs::path config_dir = path.empty() ? fs::current_path() : fs::path(cfg.path).parent_path();
  parser.parse(root, cfg, config_dir);
  return cfg;
}

ExperimentConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw ConfigError(path, 0, "", "no such file. Check the path (see configs/ for examples)");
  if (!fs::is_regular_file(path, ec))
    throw ConfigError(path, 0, "", "not a regular file. Pass the path of a .toml config");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, 0, "", std::string("cannot be read: ") + std::strerror(errno));
  // Not `text << in.rdbuf()`: it fails on an empty file, which then read as an error with
  // whatever errno was left ("No such file or directory").
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw ConfigError(path, 0, "", std::string("cannot be read: ") + std::strerror(errno));
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw ConfigError(path, 0, "",
                      std::string(text.empty() ? "is empty" : "holds only blank space") +
                          ". Write a config there (configs/quickstart.toml is a small one to start from)");
  return parse_config(text, path, overrides);
}

std::string render_config(const ExperimentConfig& c) {
  std::ostringstream o;
  auto kv = [&](const std::string& k, const std::string& v) {
    o << toml_key(k) << " = " << v << "\n";
  };
  auto str = toml_string;
  auto num = [](auto x) { return std::to_string(x); };
  auto strings = [&](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ", ") + str(s);
    return "[" + out + "]";
  };

  o << "# Resolved by ranktune: every default filled in, every path absolute.\n";
  for (const auto& ov : c.overrides) o << "# --set " << ov << "\n";
  o << "\n[experiment]\n";
  kv("name", str(c.name));
  kv("metric", str(c.metric));
  kv("mode", str(search::to_string(c.mode)));
  kv("seed", num(c.seed));
  kv("num_samples", num(c.num_samples));
  kv("results", str(c.results));
  kv("max_failures", num(c.max_failures));
  kv("non_finite", str(c.non_finite));
  kv("flush_interval_ms", toml_float(c.flush_interval_ms));
  kv("status_interval_s", toml_float(c.status_interval_s));

  auto option = [&](const search::Value& v) {
    if (const auto* d = std::get_if<double>(&v)) return toml_float(*d);
    if (const auto* i = std::get_if<std::int64_t>(&v)) return num(*i);
    return str(std::get<std::string>(v));
  };
  o << "\n[search]\n";
  kv("algorithm", str(c.algorithm));
  for (const auto& [k, v] : c.search_options) kv(k, option(v));
  o << "\n[search.space]\n";
  for (const auto& p : c.space.params) kv(p.name, toml_domain(p.domain));

  o << "\n[scheduler]\n";
  kv("kind", str(c.scheduler));
  for (const auto& [k, v] : c.scheduler_options) kv(k, option(v));

  const TrainableSpec& t = c.trainable;
  o << "\n[trainable]\n";
  kv("kind", str(t.kind));
  if (t.kind == "command") {
    kv("command", strings(t.command));
    kv("workdir", str(t.workdir));
    std::string env;
    for (const auto& [k, v] : t.env)
      env += (env.empty() ? " " : ", ") + toml_key(k) + " = " + str(v);
    kv("env", "{" + env + (env.empty() ? "}" : " }"));
    kv("step_timeout_s", toml_float(t.step_timeout_s));
    kv("max_log_mb", toml_float(t.max_log_mb));
    kv("kill_grace_s", toml_float(t.kill_grace_s));
    kv("checkpoint", t.checkpoint ? "true" : "false");
    kv("metrics", strings(t.metrics));
  } else if (t.kind == "mlp") {
    if (t.data_dir.empty())
      o << "# data_dir: not set ($RANKTUNE_DATA_DIR, else /usr/share/datasets/fashion-mnist)\n";
    else
      kv("data_dir", str(t.data_dir));
    kv("val_fraction", toml_float(t.val_fraction));
    kv("batches_per_step", num(t.batches_per_step));
    kv("threads_per_worker", num(t.threads_per_worker));
    kv("device", str(t.device));
    kv("train_samples", num(t.train_samples));
    kv("val_samples", num(t.val_samples));
  } else {
    kv("function", str(t.function));
    kv("seconds_per_step", toml_float(t.seconds_per_step));
    kv("noise", toml_float(t.noise));
  }

  o << "\n[stop]\n";
  kv("max_t", num(c.max_t));
  kv("time_budget_s", toml_float(c.time_budget_s));
  if (c.target)
    kv("target", toml_float(*c.target));
  else
    o << "# target: not set\n";

  o << "\n[checkpoint]\n";
  kv("every", num(c.checkpoint_every));
  kv("at_end", c.checkpoint_at_end ? "true" : "false");
  kv("keep_last", num(c.checkpoint_keep_last));
  kv("keep_best", num(c.checkpoint_keep_best));

  o << "\n[resources]\n";
  kv("ranks_per_trial", num(c.ranks_per_trial));
  return o.str();
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  return search::closest_name(word, candidates);
}

search::SchedulerContext scheduler_context(const ExperimentConfig& cfg) {
  return {cfg.metric, cfg.mode, cfg.max_t, &cfg.space, cfg.seed};
}

}  // namespace ranktune::io
