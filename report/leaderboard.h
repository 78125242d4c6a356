#pragma once
/// The leaderboard: the trials of a results file ranked by the best value of the
/// experiment's metric, as a fixed-width table, CSV, JSON or GitHub Markdown.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "io/store.h"
#include "report/pareto_front.h"

namespace ranktune::report {

enum class Format { Table, Csv, Json, Markdown };

/// "table", "csv", "json", "markdown" (or "md"); nullopt for anything else.
std::optional<Format> parse_format(const std::string& name);

struct LeaderboardOptions {
  std::size_t top = 10;  ///< rows to show; 0 shows every trial
  Format format = Format::Table;
  /// A multi-objective experiment's Pareto view (pareto_view): the rows go in its order
  /// (Pareto rank, then crowding distance) with its columns, and the text has a "Pareto front"
  /// section. nullptr: one objective, ranked as below.
  const ParetoView* pareto = nullptr;
};

/// The trials of `file` in leaderboard order: best value first by meta.mode, trials
/// without a finite best after them, then the trials that ended in ERROR (in the same
/// order among themselves); ties by id.
std::vector<const search::Trial*> best_first(const io::ResultsFile& file);

struct Grid;
/// The leaderboard as a grid (the rows of render_leaderboard), `digits` significant digits;
/// with `pareto`, in its order and with its columns.
Grid leaderboard_grid(const io::ResultsFile& file, std::size_t top, int digits, const ParetoView* pareto = nullptr);
/// The front of a multi-objective experiment as a grid: trial_id, each objective, each
/// constrained metric that is not an objective (once) and `feasible` (when there are
/// constraints), crowding; at most `top`
/// rows (0: all), in the view's order.
Grid pareto_front_grid(const ParetoView& pareto, std::size_t top, int digits);
/// "8 trials of 60 ranked; hypervolume 0.71 against the reference point (...): how chosen".
std::string pareto_summary(const ParetoView& pareto);
/// One line about the run's machines: hosts, MPI library, HDF5, device mode and workers.
std::string stack_summary(const io::ResultsFile& file);
/// "TERMINATED 14, ERROR 2", in lifecycle order.
std::string counts_line(const io::ResultsFile& file);
/// "max_t 10, stopped 3, budget 1", the ended trials by why they ended ("" when none has).
std::string ends_line(const io::ResultsFile& file);
/// A trial's end reason in JSON: its name, or null while it has not ended.
nlohmann::json end_json(search::TrialEnd e);

/// Renders the leaderboard of `file`. Rows: rank, trial_id, status, end_reason (why it ended:
/// search::TrialEnd's names, blank while it runs), best (the best metric value),
/// best_iteration, iterations, wall_s, then one column per hyperparameter.
/// Order: best value first by meta.mode (max: descending, min: ascending); trials without
/// a finite best come next, by id; trials that ended in ERROR come last (best_first). wall_s is end_time - start_time, or for an unfinished
/// trial the time of its last result - start_time, else blank (null in JSON).
/// Table and Markdown start with a header (experiment, metric and mode, counts by status and
/// by end reason, a one-line stack summary); CSV is a header row plus data rows (RFC 4180
/// quoting); JSON is one object {experiment, metric, mode, counts, end_reasons, trials: [...]}
/// with non-finite numbers (and the end reason of a trial that has not ended) as null. The text ends with a newline. When the run recorded warnings ("warning"
/// and "revert" events: a `ctl set` never applied, undeclared metrics dropped, a trial sent
/// back to its old values), Table and Markdown end with them (the last 20) and JSON has a
/// "warnings" array of them all.
/// With LeaderboardOptions::pareto (a multi-objective experiment): the rows are in Pareto order
/// (rank 0 first, then by crowding distance, largest first; trials without a rank after them,
/// in the order above), with columns pareto_rank (blank: not ranked, -1 in /trials), crowding
/// (inf at the ends of a front), one per objective (its last result's value, what the trial
/// is ranked by) and, with constraints, feasible (yes/no); the header names the objectives
/// and constraints in place of the metric, and Table and Markdown show the front first (its
/// trials, the hypervolume and its reference point). JSON adds "objectives", "constraints",
/// "pareto" {front: [trial ids], hypervolume, hypervolume_note, reference, reference_rule}
/// and per trial pareto_rank, crowding (null when infinite, or when not ranked), objectives
/// {METRIC: value} and feasible (null when not ranked).
std::string render_leaderboard(const io::ResultsFile& file, const LeaderboardOptions& opt);

}  // namespace ranktune::report
