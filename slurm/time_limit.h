#pragma once
/// Slurm's time-limit syntax (`--time`), parsed so that a script generator can check the
/// warning lead against the limit before anything is submitted.

#include <cstdint>
#include <optional>
#include <string>

namespace ranktune::slurm {

/// Seconds in `text`, one of the forms sbatch accepts: "M", "M:S", "H:M:S", "D-H",
/// "D-H:M", "D-H:M:S" (a bare number is minutes), or "UNLIMITED"/"INFINITE" (nullopt).
/// Throws std::invalid_argument naming the text and the accepted forms.
std::optional<std::int64_t> parse_time_limit(const std::string& text);

}  // namespace ranktune::slurm
