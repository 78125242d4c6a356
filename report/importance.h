#pragma once
/// The hyperparameter importance of a results file's trials (analysis/importance.h does the
/// arithmetic), as a section of `ranktune report` and of the HTML report.

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
  std::size_t trials = 0;  ///< trials with a finite best value, the ones judged
  std::vector<analysis::Score> scores;
  /// Said under the figures: domains guessed from the values (the stored config did not
  /// parse), or too few trials for the figures to mean much.
  std::string note;
};

/// The search space of `config`; without one, or when it did not parse (a data file moved,
/// say), one guessed from the values (numbers linear over their range, strings listed),
/// and `note` says so.
search::Space space_of(const io::ResultsFile& file, const RunConfig* config, std::string* note);

/// "ped-anova" or "fanova"; nullopt for anything else.
std::optional<analysis::Method> parse_importance_method(const std::string& name);

/// Each trial's best value (the leaderboard's) against its config, over space_of(file, config).
ImportanceReport importance_of(const io::ResultsFile& file, const analysis::Options& options,
                               const RunConfig* config);

/// The section for people: a bar per hyperparameter (Table, Markdown), most important first.
std::string render_importance(const ImportanceReport& r, Format format);
/// The same as JSON: {"method", "quantile" or "trees", "trials", "scores":
/// [{"name", "share"}, ...] most important first, "note"}.
std::string importance_json(const ImportanceReport& r);

}  // namespace ranktune::report
