// Slurm's `--time` syntax parsed into seconds (slurm/time_limit.h).
#include "slurm/time_limit.h"

#include <stdexcept>
#include <vector>

namespace ranktune::slurm {
namespace {

[[noreturn]] void bad(const std::string& text) {
  throw std::invalid_argument("--time '" + text +
                              "' is not a Slurm time limit; use minutes (90), M:S, H:M:S, D-H, D-H:M or "
                              "D-H:M:S (2-00:00:00)");
}

// Digits only: std::stoll would also take signs, spaces and trailing junk.
std::int64_t number(const std::string& part, const std::string& text) {
  if (part.empty() || part.size() > 9) bad(text);
  std::int64_t v = 0;
  for (char c : part) {
    if (c < '0' || c > '9') bad(text);
    v = v * 10 + (c - '0');
  }
  return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == sep) parts.emplace_back();
    else parts.back() += c;
  }
  return parts;
}

}  // namespace

std::optional<std::int64_t> parse_time_limit(const std::string& text) {
  if (text == "UNLIMITED" || text == "INFINITE" || text == "unlimited" || text == "infinite") return std::nullopt;
  const auto dash = text.find('-');
  if (dash != std::string::npos) {
    // With days, the fields after the dash are hours[:minutes[:seconds]].
    const std::int64_t days = number(text.substr(0, dash), text);
    const auto rest = split(text.substr(dash + 1), ':');
    if (rest.size() > 3) bad(text);
    std::int64_t s = days * 86400 + number(rest[0], text) * 3600;
    if (rest.size() > 1) s += number(rest[1], text) * 60;
    if (rest.size() > 2) s += number(rest[2], text);
    return s;
  }
  // Without days, one field is minutes, two are minutes:seconds, three hours:minutes:seconds.
  const auto f = split(text, ':');
  if (f.size() == 1) return number(f[0], text) * 60;
  if (f.size() == 2) return number(f[0], text) * 60 + number(f[1], text);
  if (f.size() == 3) return number(f[0], text) * 3600 + number(f[1], text) * 60 + number(f[2], text);
  bad(text);
}

}  // namespace ranktune::slurm
