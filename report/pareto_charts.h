#pragma once
/// The charts of a multi-objective experiment on the HTML report (`ranktune report --html`):
/// the Pareto front, the hypervolume against wall time, and the held-out front of an
/// evaluation (`ranktune eval --front`) beside the validation front. Inline SVG drawn with
/// report/svg_canvas.h; each point's <title> names its trial and values. Pure.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "io/evaluations.h"
#include "report/pareto_front.h"

namespace ranktune::report {

/// The ranked trials as points, one panel for 2 objectives and a matrix of the pairs (the
/// upper triangle) for 3 or more: the front (rank 0) in colour, dominated trials faded,
/// infeasible trials (a constraint violated) as a red cross in place of a dot; for 2
/// objectives the front's feasible points joined by a step line (the boundary of what they
/// dominate). At most 1500 trials of each kind drawn (the front's by crowding distance, the
/// others an even spread), the rest counted in the caption.
std::string pareto_front_chart(const ParetoView& pareto);

/// The hypervolume of the front of the trials finished by each time (their end_time, seconds
/// since the experiment began) against the view's reference point, a step line. "" when there
/// is no reference point; throws std::invalid_argument past the hypervolume's cap.
std::string hypervolume_chart(const ParetoView& pareto);

/// Which held-out metric of an evaluation stands for which objective: the first objective
/// whose name, with a leading "val_" made "test_" (or as it is), is a metric of the evaluation
/// (val_accuracy: test_accuracy); else the evaluation's first metric, with the first
/// objective's mode. nullopt when the evaluation has no metric.
struct HeldOutMetric {
  std::string metric;     ///< the evaluation's metric
  std::size_t objective;  ///< the objective it stands for
  search::Mode mode;
};
std::optional<HeldOutMetric> held_out_metric(const search::Objectives& objectives, const io::Evaluation& evaluation);

/// The held-out front beside the validation front: on the left the ranked trials by the
/// objective the held-out metric stands for against the next objective (validation), the
/// evaluated trials ringed; then, per batch size evaluated (at most 3), the evaluated trials
/// by the held-out metric against their p50 latency per sample (p50 of a batch / batch size),
/// the held-out front (non-dominated by that metric and latency) in colour and joined by a step
/// line, the others faded. "" when the evaluation has no metric or no latency.
std::string held_out_front_chart(const ParetoView& pareto, const io::Evaluation& evaluation);

/// The trials on the held-out front of `evaluation` at `batch_size`: those not dominated by
/// another evaluated trial in (held-out metric, p50 latency per sample), ascending ids.
std::vector<search::TrialId> held_out_front(const ParetoView& pareto, const io::Evaluation& evaluation,
                                            std::int64_t batch_size);

}  // namespace ranktune::report
