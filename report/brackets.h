#pragma once
/// A bracket scheduler's brackets as they ran (search::SchedulerTraits::brackets: HyperBand,
/// Li et al., JMLR 2018): which trials each bracket held, its rungs, how many trials stopped
/// at each rung and reached max_t, and its best trial. Rebuilt from the stored config (the
/// scheduler's own bracket shapes, search::BracketLayout) and the trials in creation order,
/// which is how brackets fill. Pure.

#include <optional>

#include "io/store.h"
#include "report/grid.h"
#include "report/run_config.h"

namespace ranktune::report {

/// One row per bracket opened: bracket (in order of opening), s, trials (first-last id),
/// rungs (iterations), ended at each rung (counts, "/"-separated), best trial and value.
/// nullopt when the run's scheduler has no brackets or its options no longer make one.
std::optional<Grid> run_brackets(const io::ResultsFile& file, const RunConfig& config);

}  // namespace ranktune::report
