#pragma once
/// The hyperparameter importance of a results file's trials (analysis/importance.h does the
/// arithmetic), as a section of `ranktune report` and of the HTML report.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/store.h"
#include "report/leaderboard.h"
#include "report/run_config.h"
#include "analysis/importance.h"

namespace ranktune::report {

struct ImportanceReport {
  analysis::Options options;
  /// Method, trials judged, why that method, intervals, noise floor, scores (none when too
  /// few trials).
  analysis::Importance result;
  /// Which budget the values came from: each trial's best when every trial ran as many
  /// iterations; else the value at one iteration count (values_for_importance).
  std::string budget;
  /// Said under the figures: domains guessed from the values (the stored config did not parse).
  std::string note;
};

/// The search space of `config`; without one, or when it did not parse (a data file moved,
/// say), one guessed from the values (numbers linear over their range, strings listed),
/// and `note` says so.
search::Space space_of(const io::ResultsFile& file, const RunConfig* config, std::string* note);

/// "auto" (also an empty name: `--importance` without a value), "ped-anova" or "fanova";
/// nullopt for anything else.
std::optional<analysis::Method> parse_importance_method(const std::string& name);

/// The trials' values importance judges, never from mixed budgets: when every trial with a
/// value reported as many iterations, each one's best; else (ASHA, HyperBand, trials that
/// ended early) each one's best up to iteration B, the most that at least half of them
/// reached, and those that stopped before B left out. `budget` says which, in words.
struct BudgetValues {
  std::vector<search::Config> configs;
  std::vector<double> values;
  std::int64_t iteration = 0;  ///< B, or 0 for each trial's best
  std::string budget;
};
BudgetValues values_for_importance(const io::ResultsFile& file);

/// The importance of values_for_importance(file) over space_of(file, config).
ImportanceReport importance_of(const io::ResultsFile& file, const analysis::Options& options,
                               const RunConfig* config);

/// "fANOVA over 60 trials: a forest of 64 trees", "PED-ANOVA over 600 trials: what set the
/// top 10% apart", or "no shares" when there were too few trials.
std::string importance_title(const ImportanceReport& r);

/// The parameters whose share could be noise, and a sentence that says so ("" when none).
std::string noise_sentence(const ImportanceReport& r);

/// The section for people (Table, Markdown): method, trials and why; a row per
/// hyperparameter, most important first, with its interval, a bar (Table), and a mark when
/// it could be noise; the noise floor.
std::string render_importance(const ImportanceReport& r, Format format);
/// The same as JSON: {"method", "trials", "reason", "noise_floor", "level", "resamples",
/// "budget", "quantile" or "trees", "scores": [{"name", "share", "low", "high",
/// "below_noise"}, ...] most important first (empty when too few trials), "note"}.
std::string importance_json(const ImportanceReport& r);

}  // namespace ranktune::report
