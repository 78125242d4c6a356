// JSON forms of values and configs, and a command trainable's reported lines parsed into
// metrics (io/json.h).
#include "io/json.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

namespace ranktune::io {

nlohmann::json to_json(const search::Value& v) {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, v);
}

nlohmann::json to_json(const search::Config& config) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : config) j[k] = to_json(v);
  return j;
}

search::Config config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("config JSON is not an object");
  search::Config c;
  for (const auto& [k, v] : j.items()) {
    if (v.is_number_integer()) {
      c[k] = v.get<std::int64_t>();
    } else if (v.is_number()) {
      c[k] = v.get<double>();
    } else if (v.is_string()) {
      c[k] = v.get<std::string>();
    } else {
      throw std::invalid_argument("config value '" + k + "' is not a number or a string");
    }
  }
  return c;
}

namespace {

// The spellings of non-finite numbers that reports may use as strings.
std::optional<double> non_finite(const std::string& s) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (s == "nan" || s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf" || s == "Infinity") return inf;
  if (s == "-inf" || s == "-Infinity") return -inf;
  return std::nullopt;
}

// "a string (\"0.5\")", "a boolean (true)", "an object", "an array": what a value is.
std::string json_type(const nlohmann::json& v) {
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    return "a string (\"" + (s.size() > 40 ? s.substr(0, 40) + "..." : s) + "\")";
  }
  if (v.is_boolean()) return std::string("a boolean (") + (v.get<bool>() ? "true" : "false") + ")";
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  return std::string("a JSON ") + v.type_name();
}

}  // namespace

search::Metrics metrics_from_json_line(const std::string& line, const std::vector<std::string>& recorded) {
  // JSON has no NaN or Infinity; Python's json.dumps writes them bare, so accept those
  // spellings too rather than fail a trial over a common idiom.
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    std::string fixed = line;
    for (const auto& [from, to] : {std::pair{"-Infinity", "\"-inf\""},
                                   std::pair{"Infinity", "\"inf\""}, std::pair{"NaN", "\"nan\""}}) {
      for (auto pos = fixed.find(from); pos != std::string::npos; pos = fixed.find(from, pos + 5)) {
        fixed.replace(pos, std::char_traits<char>::length(from), to);
      }
    }
    j = nlohmann::json::parse(fixed, nullptr, false);
    if (j.is_discarded()) throw std::invalid_argument("not valid JSON");
  }
  if (!j.is_object()) throw std::invalid_argument("a JSON line must be an object of metrics");
  search::Metrics m;
  for (const auto& [k, v] : j.items()) {
    if (v.is_number()) {
      m[k] = v.get<double>();
    } else if (v.is_null()) {
      m[k] = std::numeric_limits<double>::quiet_NaN();
    } else if (v.is_string() && non_finite(v.get_ref<const std::string&>())) {
      m[k] = *non_finite(v.get_ref<const std::string&>());
    } else if (std::find(recorded.begin(), recorded.end(), k) != recorded.end()) {
      throw std::invalid_argument("'" + (k.size() > 60 ? k.substr(0, 60) + "..." : k) + "' is " + json_type(v) + ", not a number (report numbers; NaN and "
                                  "infinities as null, \"nan\", \"inf\" or \"-inf\")");
    }
  }
  return m;
}

}  // namespace ranktune::io
