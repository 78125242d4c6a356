#pragma once
/// JSON forms of configs and metrics: the command trainable's RANKTUNE_CONFIG, the JSON
/// lines it reports, and config text on the wire.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/types.h"

namespace ranktune::io {

nlohmann::json to_json(const search::Value& v);
nlohmann::json to_json(const search::Config& config);

/// Inverse of to_json(Config): numbers that are integral JSON become Int, other numbers
/// Float, strings String. Throws std::invalid_argument on other JSON types.
search::Config config_from_json(const nlohmann::json& j);

/// Parses one reported JSON line into metrics. Numbers (and null / "nan" / "inf" / "-inf",
/// which become non-finite doubles) are metrics. Throws std::invalid_argument with a short
/// reason when the line is not a JSON object, or when a key of `recorded` (the metrics the
/// experiment records) has any other value (a string such as "0.5", a boolean, an object,
/// an array): read as missing it would pass for an iteration with a NaN metric, even with
/// non_finite = "error". Other keys with such values are not metrics and are left out, so a
/// script may report `"phase": "train"` beside its numbers. A number too large for a double
/// (`1e309`: valid JSON, which JSON parsers refuse as an overflow) becomes +-inf, and its key
/// and text ("'loss' = 1e309") are added to `overflowed` when given, for a warning.
search::Metrics metrics_from_json_line(const std::string& line, const std::vector<std::string>& recorded,
                                       std::vector<std::string>* overflowed = nullptr);

}  // namespace ranktune::io
