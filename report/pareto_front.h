#pragma once
/// The Pareto front of a multi-objective results file, as the reports show it: each trial's
/// objectives and feasibility, its rank and crowding distance, the order of the leaderboard
/// (Pareto rank, then crowding distance: the order MO-ASHA and NSGA-II select by), the
/// hypervolume of the front against a stated reference point, and its history over wall time.
///
/// The ranks are /trials' pareto_rank, as the controller computed them (Deb's constrained
/// non-dominated sort of the finished trials by their last results, search/pareto.h), read,
/// never recomputed: what a report prints is what the file holds. The values come from each
/// trial's last row of /results, which is the result the controller ranked the trial by
/// (Trial::last_metrics, of which /trials keeps the objectives but not the constrained
/// metrics). Pure: a results file in, numbers out.

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "io/store.h"
#include "search/objectives.h"
#include "search/pareto.h"

namespace ranktune::report {

/// Each trial's last result (the last /results row of its latest attempt): its metrics, the
/// ones the row lacks (NaN) left out.
std::map<search::TrialId, search::Metrics> last_results(const io::ResultsFile& file);

/// The reference point the reports use when none is given, in minimization form (pareto.h):
/// per objective, the worst value of `points` plus a tenth of the range of its values, so that
/// the extreme points of the front add to the hypervolume too (a point on the reference adds
/// nothing); an objective of one value moves by a tenth of its size, or by 1 when it is 0.
/// `points`: the finished trials' feasible points (minimization form, finite). Empty when there
/// is none. Throws std::invalid_argument when the points differ in size.
std::vector<double> default_reference(std::span<const std::vector<double>> points);

/// A feasible point (minimization form) and the time it became known (its trial's end_time).
struct TimedPoint {
  double time = 0;
  std::vector<double> point;
};

/// The hypervolume (search/hypervolume.h) against `reference` of the front of the points known
/// by each time: one (time, hypervolume) for each point that changed it, in time order (ties in
/// the given order). A point that is dominated by (or equal to) one known before, that does not
/// strictly dominate the reference, or that has a non-finite coordinate changes nothing. The
/// front is kept as the points arrive (a new point drops those it dominates), so each step costs
/// one hypervolume of the current front, not of every point. Throws what hypervolume() throws.
std::vector<std::pair<double, double>> hypervolume_history(std::vector<TimedPoint> points,
                                                           const std::vector<double>& reference);

/// One trial as the Pareto reports show it.
struct ParetoEntry {
  const search::Trial* trial = nullptr;
  std::vector<double> values;       ///< each objective's value, its own direction; NaN: not reported
  std::vector<double> constrained;  ///< each constraint's metric value; NaN: not reported
  search::ParetoPoint point;        ///< Objectives::point of its last result
  int rank = -1;                    ///< /trials' pareto_rank: 0 the front, -1 not ranked
  double crowding = 0;              ///< crowding distance within its front; 0 when not ranked
  bool feasible() const { return point.feasible(); }
};

struct ParetoView {
  search::Objectives objectives;
  /// Every trial: the ranked ones (rank >= 0) by rank, then crowding distance (largest first:
  /// the most isolated), then id; then the others in the single-objective leaderboard's order
  /// (report::best_first), which puts the failed ones last.
  std::vector<ParetoEntry> entries;
  std::size_t ranked = 0;  ///< entries [0, ranked) have a rank
  std::size_t front = 0;   ///< entries [0, front) are the front (rank 0)
  /// The reference point, in the objectives' own directions; empty when there is none (no
  /// ranked trial has a feasible point and none was given).
  std::vector<double> reference;
  bool reference_given = false;  ///< given by the caller (`report --reference`)
  /// The hypervolume of the front's feasible points against `reference`; NaN when it cannot
  /// be computed (`hypervolume_note` says why).
  double hypervolume = 0;
  std::string hypervolume_note;

  /// How the reference point was chosen, in a sentence: "(f1 1.1, f2 5.3): ...".
  std::string reference_text() const;
  /// The reference point alone: "(f1 1.1, f2 5.3)"; "none" without one.
  std::string reference_point_text() const;
  /// "f1 (min), f2 (min)"
  std::string objectives_text() const;
  /// "latency_ms <= 2" ...; "" without constraints.
  std::string constraints_text() const;
  /// The (end_time, hypervolume) history of the ranked trials' feasible points against
  /// `reference` (hypervolume_history). Empty without a reference. Throws std::invalid_argument
  /// past the hypervolume's cap for 4 objectives or more.
  std::vector<std::pair<double, double>> history() const;
};

/// The Pareto view of `file` under `objectives` (the stored config's, RunConfig::objectives);
/// nullopt when they are not multi() (a single-objective experiment, or a file of an older
/// ranktune). `reference`: one value per objective in its own direction, or empty for
/// default_reference. Throws std::invalid_argument for a reference of another size, or with a
/// value that is not finite.
std::optional<ParetoView> pareto_view(const io::ResultsFile& file, const search::Objectives& objectives,
                                      const std::vector<double>& reference = {});

/// Parses `--reference "1.1,5.3"`: comma-separated numbers. Throws std::invalid_argument
/// saying what is wrong.
std::vector<double> parse_reference(const std::string& text);

}  // namespace ranktune::report
