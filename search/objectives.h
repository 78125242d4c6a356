#pragma once
/// The objectives and constraints of a multi-objective experiment, and the Pareto point
/// (search/pareto.h) of a trial's result under them: what the multi-objective schedulers and
/// searchers read from a trial instead of one metric and mode.
///
/// A constraint bounds a reported metric ("latency_ms <= 2.0"); its value in pareto.h's sense
/// (holds when <= 0) is metric - bound for "<=" and bound - metric for ">=", so the total
/// violation is how far past their bounds the metrics are, in their own units.
///
/// A result that lacks an objective or a constrained metric, or reports NaN or an infinity for
/// one, gives a failed point (pareto.h's rule: infeasible with an infinite violation), which
/// every trial with finite values dominates.

#include <string>
#include <vector>

#include "search/metrics.h"
#include "search/pareto.h"
#include "search/types.h"

namespace ranktune::search {

/// `metric <= bound` (at_most) or `metric >= bound`.
struct Constraint {
  std::string metric;
  bool at_most = true;
  double bound = 0;

  /// The constraint value of a metric value v: <= 0 when the constraint holds.
  double value(double v) const { return at_most ? v - bound : bound - v; }
  /// "latency_ms <= 2": as the config writes it, and as messages show it.
  std::string text() const;
  friend bool operator==(const Constraint&, const Constraint&) = default;
};

struct Objectives {
  std::vector<std::string> metrics;  ///< the objectives' metric names
  std::vector<Mode> modes;           ///< one per metric
  std::vector<Constraint> constraints;

  /// Throws std::invalid_argument saying what is wrong: no objective, a mode count that
  /// differs from the metric count, an empty or repeated objective name, a constraint on no
  /// metric or with a bound that is not finite.
  void check() const;
  /// Whether these objectives need a multi-objective algorithm: several objectives, or any
  /// constraint. An experiment with one metric and no constraint has empty objectives
  /// (SchedulerContext, SearcherOptions) and runs the single-objective algorithms.
  bool multi() const { return metrics.size() > 1 || !constraints.empty(); }
  /// "val_accuracy max, params_m min; latency_ms <= 2": for messages, and to tell whether a
  /// saved state was made with the same objectives.
  std::string describe() const;
  /// Whether a result reports at least one of the objectives: one that reports none (a
  /// result of other metrics only) is not a judgement of the trial at all.
  bool any_reported(const Metrics& m) const;
  /// The Pareto point of a result: objectives by pareto.h's conventions, missing values NaN.
  ParetoPoint point(const Metrics& m) const;

  friend bool operator==(const Objectives&, const Objectives&) = default;
};

class StateWriter;
class StateReader;

/// Writes `o` into a saved state (search/saved_state.h): "objectives" with the count and a
/// line per objective (its metric, and its mode as 1 for max), then "constraints" likewise
/// (metric, 1 for "<=", bound). Empty objectives (a single-objective run) write two zero
/// counts. The multi-objective algorithms record them so that a resume with other
/// objectives is refused instead of ranking old points by new rules.
void write_objectives(StateWriter& w, const Objectives& o);
/// Reads what write_objectives wrote, and refuses (through `r`) objectives other than
/// `expected`, naming both: "saved with other objectives (X; this experiment has Y)".
void read_objectives(StateReader& r, const Objectives& expected);
/// A Pareto point in a saved state: its violation, then its objectives (minimization form).
StateWriter& write_pareto_point(StateWriter& w, const ParetoPoint& p);
/// Reads what write_pareto_point wrote, with `count` objectives; refuses a violation that is
/// NaN or below 0.
ParetoPoint read_pareto_point(StateReader& r, std::size_t count);

}  // namespace ranktune::search
