// JSON forms of values and configs, and a command trainable's reported lines parsed into
// metrics (io/json.h).
#include "io/json.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
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

// Stands for the overflowing number `overflow[N]` in a line that replace_overflows rewrote:
// a string no report holds (it starts with a control character).
const std::string kOverflowTag = "\x01ranktune overflow ";

// Replaces each number of `line` (outside strings) that is too large for a double with the
// string kOverflowTag + its index in `numbers`, where its text goes. JSON numbers have no
// limit, but nlohmann::json refuses one that overflows, so that `1e309` failed a trial as
// "not valid JSON". Returns whether it replaced any.
bool replace_overflows(std::string& line, std::vector<std::string>& numbers) {
  std::string out;
  bool in_string = false, escaped = false, replaced = false;
  for (std::size_t i = 0; i < line.size();) {
    const char c = line[i];
    if (in_string) {
      in_string = escaped || c != '"';
      escaped = !escaped && c == '\\';
      out += line[i++];
      continue;
    }
    if (c == '"') in_string = true;
    if (c != '-' && (c < '0' || c > '9')) {
      out += line[i++];
      continue;
    }
    const std::size_t end = line.find_first_not_of("0123456789+-.eE", i);
    const std::string number = line.substr(i, end == std::string::npos ? std::string::npos : end - i);
    i += number.size();
    // strtod, as nlohmann::json reads numbers: an overflow gives +-HUGE_VAL (inf), an
    // underflow a finite value, which the parser takes.
    if (const double v = std::strtod(number.c_str(), nullptr); std::isinf(v)) {
      nlohmann::json tag = kOverflowTag + std::to_string(numbers.size());
      out += tag.dump();
      numbers.push_back(number);
      replaced = true;
    } else {
      out += number;
    }
  }
  line = std::move(out);
  return replaced;
}

}  // namespace

search::Metrics metrics_from_json_line(const std::string& line, const std::vector<std::string>& recorded,
                                       std::vector<std::string>* overflowed) {
  // JSON has no NaN or Infinity; Python's json.dumps writes them bare, so accept those
  // spellings too rather than fail a trial over a common idiom.
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  std::vector<std::string> numbers;  // the overflowing numbers' texts (replace_overflows)
  if (j.is_discarded()) {
    std::string fixed = line;
    for (const auto& [from, to] : {std::pair{"-Infinity", "\"-inf\""},
                                   std::pair{"Infinity", "\"inf\""}, std::pair{"NaN", "\"nan\""}}) {
      for (auto pos = fixed.find(from); pos != std::string::npos; pos = fixed.find(from, pos + 5)) {
        fixed.replace(pos, std::char_traits<char>::length(from), to);
      }
    }
    j = nlohmann::json::parse(fixed, nullptr, false);
    if (j.is_discarded() && replace_overflows(fixed, numbers)) j = nlohmann::json::parse(fixed, nullptr, false);
    if (j.is_discarded()) throw std::invalid_argument("not valid JSON");
  }
  if (!j.is_object()) throw std::invalid_argument("a JSON line must be an object of metrics");
  search::Metrics m;
  for (const auto& [k, v] : j.items()) {
    if (v.is_string() && !numbers.empty() && v.get_ref<const std::string&>().rfind(kOverflowTag, 0) == 0) {
      const std::string& number = numbers.at(std::stoul(v.get_ref<const std::string&>().substr(kOverflowTag.size())));
      m[k] = number[0] == '-' ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
      if (overflowed != nullptr)
        overflowed->push_back("'" + (k.size() > 60 ? k.substr(0, 60) + "..." : k) + "' = " + number.substr(0, 40));
    } else if (v.is_number()) {
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
