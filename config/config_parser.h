#pragma once
// Inside io/ only: the validating reader of a parsed TOML tree. It reads typed keys (each
// conversion names both types on a mismatch), applies bounds, rejects unknown keys with a
// did-you-mean, keeps the order keys were written in, and points every error at the key's
// file:line or at the --set that gave it. config.cc reads the sections with it.

#include <climits>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "config/config_detail.h"
#include "search/options.h"
#include "sys/text.h"

namespace ranktune::config::config_detail {

class Parser {
 public:
  Parser(std::string file, LineMap lines, const std::vector<std::string>& overrides,
         const std::map<std::string, std::string>& shown)
      : file_(std::move(file)), lines_(std::move(lines)) {
    for (const auto& ov : overrides) set_names_.push_back(override_name(ov, shown));
  }

  const std::string& file() const { return file_; }

  // Call on the file's tree before overrides, so a key an override replaces keeps its place.
  void remember_order(const toml::value& root) { remember_order({&root, ""}); }
  void parse(const toml::value& root, ExperimentConfig& cfg);

  // The readers below are public for TrainableKeys (trainable_keys.cc), which reads the
  // [trainable] table on train/'s behalf with the same words as the rest of the config.
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
      if (std::find(set_names_.begin(), set_names_.end(), name) != set_names_.end()) return {std::move(name), 0};
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
          t.path.empty() && v->is_table() ? "unknown section [" + sys::excerpt(*k) + "]" : "unknown key";
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
           "is out of range (got " + sys::excerpt(text) + "): " +
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
    std::string msg = "unknown value \"" + sys::excerpt(out) + "\"";
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

  // The results file and the files beside it must be creatable (config.cc).
  void check_results_path(const toml::value* at, const std::string& key, const std::string& path) const;
  // The trials the experiment plans must stay within ranktune's limit (config.cc).
  void check_trial_count(const Table& e, const Table& s, const ExperimentConfig& cfg) const;

  search::Domain domain(const toml::value& v, const std::string& path) const;
  void read_space(const Table& t, search::Space& space) const;
  search::Param param(const std::string& name, const toml::value& v, const std::string& path) const;
  void check_conditions(const Table& t, const search::Space& space) const;
  void read_mutable(const Table& sch, ExperimentConfig& cfg) const;
  void read_points(const Table& s, ExperimentConfig& cfg) const;
  void read_trainable(const Table& t, ExperimentConfig& cfg) const;
  // `metric` and `mode` (a string each, or lists of the same length) and `constraints`.
  void read_objectives(const Table& e, ExperimentConfig& cfg) const;

 private:
  std::string file_;
  LineMap lines_;  // of the file
  std::vector<std::string> set_names_;
  std::map<std::string, long> file_order_;  // key path -> position in the file
};

}  // namespace ranktune::config::config_detail

namespace ranktune::config {

// What TrainableKeys shares: the reader (for its lines and key order) and [trainable] as
// written, overrides applied.
struct TrainableKeys::Impl {
  config_detail::Parser parser;
  toml::value table;
};

}  // namespace ranktune::config
