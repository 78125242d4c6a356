#include "io/json.h"

#include <cmath>
#include <limits>
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

search::Metrics metrics_from_json_line(const std::string& line) {
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
  constexpr double inf = std::numeric_limits<double>::infinity();
  for (const auto& [k, v] : j.items()) {
    if (v.is_number()) {
      m[k] = v.get<double>();
    } else if (v.is_null()) {
      m[k] = std::numeric_limits<double>::quiet_NaN();
    } else if (v.is_string()) {
      const auto s = v.get<std::string>();
      if (s == "nan" || s == "NaN") m[k] = std::numeric_limits<double>::quiet_NaN();
      else if (s == "inf" || s == "Infinity") m[k] = inf;
      else if (s == "-inf" || s == "-Infinity") m[k] = -inf;
    }
  }
  return m;
}

}  // namespace ranktune::io
