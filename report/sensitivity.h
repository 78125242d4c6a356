#pragma once
/// Pipeline sensitivity (MLModelScope's finding that small changes to the evaluation
/// pipeline move accuracy): the evaluations one `ranktune eval --manifest` run recorded, one
/// per pipeline, side by side, each metric's change against the manifest's first pipeline,
/// the reference. Pure: works on evaluations as read (io/evaluations.h).

#include <optional>
#include <vector>

#include "io/evaluations.h"
#include "report/grid.h"

namespace ranktune::report {

/// The evaluations of the newest sensitivity group in `evaluations` (those whose manifests
/// carry the same "sensitivity"."group"), in pipeline order; empty when the newest
/// evaluation is not part of a group of two or more pipelines.
std::vector<const io::Evaluation*> newest_sensitivity_group(const std::vector<io::Evaluation>& evaluations);

/// Rows: trial_id, iteration, pipeline, normalize, input_dtype, then each held-out metric,
/// then for each one the change against the reference pipeline's value for the same trial
/// and checkpoint ("Δ metric"; accuracies in percentage points, others as they are). Blank
/// where the reference did not evaluate that trial. std::nullopt when `group` is empty.
std::optional<Grid> sensitivity_grid(const std::vector<const io::Evaluation*>& group);

}  // namespace ranktune::report
