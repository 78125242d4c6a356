// Search space domains: their checks, draws, per-index generators, quantization and grid
// points (search/space.h).
#include "search/space.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace ranktune::search {

namespace {
// Doubles hold every integer up to 2^53 exactly.
constexpr double kMaxExactInt = 9007199254740992.0;
}  // namespace

ValueType Domain::type() const {
  switch (kind) {
    case DomainKind::Uniform:
    case DomainKind::LogUniform:
    case DomainKind::QUniform: return ValueType::Float;
    case DomainKind::RandInt: return ValueType::Int;
    case DomainKind::Choice:
    case DomainKind::Grid: break;
  }
  // Listed values are homogeneous (check_domain), except that ints mixed with floats
  // widen to Float.
  ValueType t = ValueType::Int;
  for (const auto& v : values) {
    if (std::holds_alternative<std::string>(v)) return ValueType::String;
    if (std::holds_alternative<double>(v)) t = ValueType::Float;
  }
  return t;
}

const Param* Space::find(const std::string& name) const {
  for (const auto& p : params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

bool Space::conditional() const {
  return std::any_of(params.begin(), params.end(), [](const Param& p) { return p.conditional(); });
}

bool Space::may_mutate(const std::string& name) const {
  return mutable_params.empty() || std::find(mutable_params.begin(), mutable_params.end(), name) != mutable_params.end();
}

std::size_t Space::grid_size() const {
  std::size_t n = 1;
  for (const auto& p : params) {
    if (p.domain.kind != DomainKind::Grid) continue;
    // Saturates rather than wraps (the config refuses a grid over 10^9 points anyway).
    const std::size_t k = p.domain.values.size();
    n = k != 0 && n > std::numeric_limits<std::size_t>::max() / k ? std::numeric_limits<std::size_t>::max() : n * k;
  }
  return n;
}

std::string check_domain(const Domain& d) {
  std::ostringstream why;
  switch (d.kind) {
    case DomainKind::Uniform:
    case DomainKind::QUniform:
    case DomainKind::RandInt:
    case DomainKind::LogUniform:
      if (!std::isfinite(d.low) || !std::isfinite(d.high)) {
        why << "bounds must be finite numbers";
      } else if (!(d.low < d.high)) {
        why << "low must be < high (got [" << d.low << ", " << d.high << "])";
      } else if (!std::isfinite(d.high - d.low)) {
        // Sampling draws low + u * (high - low): every sample would be inf.
        why << "high - low overflows (got [" << d.low << ", " << d.high
            << "]); keep the range below about 1.8e308";
      } else if (d.kind == DomainKind::RandInt &&
                 (std::fabs(d.low) > kMaxExactInt || std::fabs(d.high) > kMaxExactInt)) {
        why << "randint bounds must lie within +-2^53 = 9007199254740992 (got [" << d.low << ", " << d.high
            << "]), where every integer is a double";
      } else if (d.kind == DomainKind::LogUniform && d.low <= 0) {
        why << "loguniform bounds must be > 0 (got [" << d.low << ", " << d.high << "])";
      } else if (d.kind == DomainKind::QUniform && !(d.q > 0 && std::isfinite(d.q))) {
        why << "quniform step q must be > 0 (got " << d.q << ")";
      } else if (d.kind == DomainKind::QUniform &&
                 !(std::max(std::fabs(d.low), std::fabs(d.high)) / d.q <= kMaxExactInt)) {
        // Quantizing divides by q: a q this small makes x / q inf (5e-324), or finer than
        // a double can tell apart at these bounds.
        why << "quniform step q = " << d.q << " is too small for [" << d.low << ", " << d.high
            << "]: max(|low|, |high|) / q must be <= 2^53 = 9007199254740992";
      } else if (d.kind == DomainKind::QUniform && std::ceil(d.low / d.q) * d.q > d.high) {
        why << "no multiple of q = " << d.q << " lies in [" << d.low << ", " << d.high << "]";
      } else if (d.kind == DomainKind::RandInt &&
                 (d.low != std::floor(d.low) || d.high != std::floor(d.high))) {
        why << "randint bounds must be integers";
      }
      break;
    case DomainKind::Choice:
    case DomainKind::Grid: {
      if (d.values.empty()) {
        why << to_string(d.kind) << " needs at least one value";
        break;
      }
      const bool first_is_string = std::holds_alternative<std::string>(d.values.front());
      for (const auto& v : d.values) {
        if (std::holds_alternative<std::string>(v) != first_is_string) {
          why << to_string(d.kind) << " values must be all numbers or all strings";
          break;
        }
      }
      break;
    }
  }
  return why.str();
}

Rng index_rng(std::uint64_t seed, std::uint64_t index) {
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                    static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32)};
  return Rng(seq);
}

double quantize(const Domain& d, double x) {
  // Rounding can step outside [low, high] when the bounds are not multiples of q;
  // step back inside so values stay both multiples of q and within bounds.
  double r = std::round(x / d.q) * d.q;
  if (r > d.high) r -= d.q;
  if (r < d.low) r += d.q;
  return r;
}

double to_unit(const Domain& d, double raw) {
  switch (d.kind) {
    case DomainKind::Uniform:
    case DomainKind::QUniform: return (raw - d.low) / (d.high - d.low);
    case DomainKind::LogUniform: return (std::log(raw) - std::log(d.low)) / (std::log(d.high) - std::log(d.low));
    case DomainKind::RandInt: return (raw - d.low + 0.5) / (d.high - d.low);
    case DomainKind::Choice:
    case DomainKind::Grid: break;
  }
  return raw;
}

double from_unit(const Domain& d, double u) {
  switch (d.kind) {
    case DomainKind::Uniform: return std::clamp(d.low + u * (d.high - d.low), d.low, d.high);
    case DomainKind::QUniform: return quantize(d, std::clamp(d.low + u * (d.high - d.low), d.low, d.high));
    case DomainKind::LogUniform:
      return std::clamp(std::exp(std::log(d.low) + u * (std::log(d.high) - std::log(d.low))), d.low, d.high);
    case DomainKind::RandInt: return std::clamp(std::floor(d.low + u * (d.high - d.low)), d.low, d.high - 1);
    case DomainKind::Choice:
    case DomainKind::Grid: break;
  }
  return std::clamp(std::round(u), 0.0, static_cast<double>(d.values.size() - 1));
}

Value sample(const Domain& d, Rng& rng) {
  switch (d.kind) {
    case DomainKind::Uniform:
      return std::uniform_real_distribution<double>(d.low, d.high)(rng);
    case DomainKind::LogUniform:
      return std::exp(std::uniform_real_distribution<double>(std::log(d.low), std::log(d.high))(rng));
    case DomainKind::QUniform:
      return quantize(d, std::uniform_real_distribution<double>(d.low, d.high)(rng));
    case DomainKind::RandInt:
      return std::uniform_int_distribution<std::int64_t>(static_cast<std::int64_t>(d.low),
                                                         static_cast<std::int64_t>(d.high) - 1)(rng);
    case DomainKind::Choice:
    case DomainKind::Grid: {
      const auto i = std::uniform_int_distribution<std::size_t>(0, d.values.size() - 1)(rng);
      const Value& v = d.values[i];
      // A numeric list with any float yields floats, so the column type is stable.
      if (d.type() == ValueType::Float) return to_double(v);
      return v;
    }
  }
  return 0.0;
}

std::string outside_domain(const Domain& d, const Value& v) {
  if (d.is_listed()) {
    for (const Value& x : d.values) {
      const bool text = std::holds_alternative<std::string>(x) || std::holds_alternative<std::string>(v);
      if (text ? x == v : to_double(x) == to_double(v)) return "";
    }
    std::string values;
    for (const Value& x : d.values) values += (values.empty() ? "" : ", ") + to_string(x);
    return to_string(v) + " is not one of its values (" + values + ")";
  }
  const double x = to_double(v);
  const bool inside = d.kind == DomainKind::RandInt ? x >= d.low && x < d.high && x == std::floor(x)
                                                    : x >= d.low && x <= d.high;
  if (inside) return "";
  std::ostringstream why;
  why << to_string(v) << " is outside its domain " << to_string(d.kind) << " [" << d.low << ", " << d.high
      << (d.kind == DomainKind::RandInt ? ")" : "]");
  return why.str();
}

void settle_conditions(const Space& space, Config& config, Rng& rng) {
  if (!space.conditional()) return;
  for (const Param& p : space.params)
    if (!config.contains(p.name)) config[p.name] = sample(p.domain, rng);
  drop_inactive(space, config);
}

Config grid_point(const Space& space, std::size_t index) {
  Config point;
  // Walk the axes last-to-first so the first declared axis varies slowest.
  for (auto it = space.params.rbegin(); it != space.params.rend(); ++it) {
    const Domain& d = it->domain;
    if (d.kind != DomainKind::Grid) continue;
    const Value& v = d.values[index % d.values.size()];
    point[it->name] = d.type() == ValueType::Float ? Value(to_double(v)) : v;
    index /= d.values.size();
  }
  return point;
}

}  // namespace ranktune::search
