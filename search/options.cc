// OptionReader: reads and checks an algorithm's `[search]` or `[scheduler]` keys, and names
// the closest known key for an unknown one (search/options.h).
#include "search/options.h"

#include <algorithm>

#include "sys/text.h"

namespace ranktune::search {

namespace {
thread_local OptionLog* t_log = nullptr;

void note(const std::string& key, const Value& value, bool flag = false) {
  if (t_log != nullptr) t_log->note(key, value, flag);
}
}  // namespace

OptionLog::OptionLog() : outer_(t_log) { t_log = this; }
OptionLog::~OptionLog() { t_log = outer_; }

void OptionLog::note(const std::string& key, const Value& value, bool flag) {
  // A key read twice (asha's variant) keeps its first place and its last value.
  for (ResolvedOption& o : options_)
    if (o.key == key) {
      o.value = value;
      o.flag = flag;
      return;
    }
  options_.push_back({key, value, flag});
}

OptionReader::OptionReader(const Options& options, std::string owner)
    : options_(options), owner_(std::move(owner)) {}

const Value* OptionReader::find(const std::string& key) {
  known_.push_back(key);
  const auto it = options_.find(key);
  return it == options_.end() ? nullptr : &it->second;
}

double OptionReader::number(const std::string& key, double fallback) {
  const Value* v = find(key);
  if (v == nullptr) {
    note(key, fallback);
    return fallback;
  }
  if (std::holds_alternative<std::string>(*v)) {
    throw OptionError(key, owner_ + " option '" + key + "' must be a number (got \"" +
                               sys::excerpt(std::get<std::string>(*v)) + "\")");
  }
  note(key, to_double(*v));
  return to_double(*v);
}

std::int64_t OptionReader::integer(const std::string& key, std::int64_t fallback) {
  const Value* v = find(key);
  if (v == nullptr) {
    note(key, fallback);
    return fallback;
  }
  if (!std::holds_alternative<std::int64_t>(*v)) {
    throw OptionError(key, owner_ + " option '" + key + "' must be an integer (got " +
                               sys::excerpt(to_string(*v)) + ")");
  }
  note(key, *v);
  return std::get<std::int64_t>(*v);
}

std::string OptionReader::text(const std::string& key, const std::string& fallback,
                               const std::vector<std::string>& valid) {
  const Value* v = find(key);
  if (v == nullptr) {
    note(key, fallback);
    return fallback;
  }
  if (!std::holds_alternative<std::string>(*v)) {
    throw OptionError(key, owner_ + " option '" + key + "' must be a string (got " + sys::excerpt(to_string(*v)) + ")");
  }
  const auto& s = std::get<std::string>(*v);
  if (!valid.empty() && std::find(valid.begin(), valid.end(), s) == valid.end()) {
    std::string list;
    for (const auto& x : valid) list += (list.empty() ? "\"" : ", \"") + x + "\"";
    const auto near = sys::closest_name(s, valid);
    throw OptionError(key, owner_ + " option '" + key + "': unknown value \"" + sys::excerpt(s) + "\"" +
                               (near.empty() ? "" : ". Did you mean \"" + near + "\"?") +
                               " Valid values: " + list);
  }
  note(key, s);
  return s;
}

bool OptionReader::flag(const std::string& key, bool fallback) {
  const Value* v = find(key);
  if (v == nullptr) {
    note(key, std::int64_t{fallback ? 1 : 0}, true);
    return fallback;
  }
  const auto* i = std::get_if<std::int64_t>(v);
  if (i == nullptr || (*i != 0 && *i != 1)) {
    throw OptionError(key, owner_ + " option '" + key + "' must be true or false");
  }
  note(key, *v, true);
  return *i == 1;
}

void OptionReader::require(bool ok, const std::string& key, const std::string& message) const {
  if (!ok) throw OptionError(key, owner_ + " option '" + key + "' " + message);
}

void OptionReader::at_most(const std::string& key, std::int64_t value, std::int64_t max) const {
  require(value <= max, key,
          "must be <= " + std::to_string(max) + " (got " + std::to_string(value) +
              "); that is ranktune's limit (configs/README.md, \"Limits\")");
}

std::int64_t OptionReader::positive_integer(const std::string& key, std::int64_t fallback, std::int64_t max) {
  const std::int64_t v = integer(key, fallback);
  require(v >= 1, key, "must be >= 1 (got " + std::to_string(v) + ")");
  at_most(key, v, max);
  return v;
}

std::vector<std::string> OptionReader::keys_with_prefix(const std::string& prefix) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : options_) {
    if (key.rfind(prefix, 0) != 0) continue;
    keys.push_back(key);
    known_.push_back(key);
    note(key, value);
  }
  return keys;
}

void OptionReader::finish() const {
  for (const auto& [key, value] : options_) {
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    std::string msg = "unknown option for " + owner_;
    if (const auto near = sys::closest_name(key, known_); !near.empty()) {
      msg += ". Did you mean '" + near + "'?";
    } else if (known_.empty()) {
      msg += ", which takes no options";
    } else {
      std::string list;
      for (const auto& k : known_) list += (list.empty() ? "" : ", ") + k;
      msg += ". Valid options: " + list;
    }
    throw OptionError(key, msg);
  }
}

}  // namespace ranktune::search
