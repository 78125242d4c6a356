#pragma once
/// Core value types shared by every layer: hyperparameter values, configs, metrics, modes.
/// Pure data: nothing here touches MPI, files or clocks.

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <variant>

#include "search/metrics.h"

namespace ranktune::search {

/// Identifies a trial within one experiment. Ids start at 1 and are never reused.
using TrialId = std::int64_t;

/// One hyperparameter value. The type is fixed per parameter by its domain (see ValueType).
using Value = std::variant<double, std::int64_t, std::string>;

/// The column type a parameter takes in the results file and in JSON.
enum class ValueType { Float, Int, String };

/// A trial's hyperparameters, by name.
using Config = std::map<std::string, Value>;


/// Whether the experiment's metric is maximized or minimized.
enum class Mode { Max, Min };

/// "max" or "min", as in configs and results files.
inline const char* to_string(Mode m) { return m == Mode::Max ? "max" : "min"; }

/// +1 for Max and -1 for Min: `sign(mode) * value` is always "bigger is better".
inline double sign(Mode m) { return m == Mode::Max ? 1.0 : -1.0; }

/// True when `a` is strictly better than `b` under `mode`. NaN is never better.
inline bool better(double a, double b, Mode mode) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return sign(mode) * a > sign(mode) * b;
}

/// Renders a value for people: doubles with up to 6 significant digits.
std::string to_string(const Value& v);

/// Renders a value as a double where that makes sense (Float and Int), NaN for strings.
double to_double(const Value& v);

/// Name of a value type as it appears in error messages.
const char* to_string(ValueType t);

}  // namespace ranktune::search
