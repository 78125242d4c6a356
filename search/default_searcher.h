#pragma once
/// The searcher ranktune runs when a config names no `[search] algorithm`: the one the
/// side-by-side suite (benchmarks/quality/, benchmarks/RESULTS.md) measured best for the
/// kind of space, in the spirit of Optuna's AutoSampler, which also picks a sampler from the
/// space rather than using one for all.
///
///   - a grid axis: "random", which crosses the grid axes as the user asked (a model-based
///     searcher treats an axis as one more categorical and would not cross it);
///   - at most kMaxGpParams parameters, at most half of them categorical (`choice`): "gp".
///     Fixed values (`epochs = 20`) are not counted: no searcher chooses them.
///     On the suite's numeric spaces gp+asha was better than Optuna's best pair in 11 of 12
///     cells and tied in the 12th, where TPE's best pair only tied;
///   - conditional parameters (`when`): "tpe", which models each where it is active, as
///     Optuna's TPE does; gp models only the unconditional ones;
///   - otherwise "tpe": many parameters or mostly categorical ones are where a Gaussian
///     process's distances mean least and TPE's per-parameter densities hold up (Optuna's
///     advice too); the suite has no such space, so this side of the rule is not measured.
///
/// Pure: the space in, the name and a sentence saying why out.

#include <string>

#include "search/space.h"

namespace ranktune::search {

/// Above this many parameters the default is TPE: a Gaussian process with one lengthscale per
/// dimension needs many more observations than a budget of hundreds of trials gives.
inline constexpr std::size_t kMaxGpParams = 20;

struct DefaultSearcher {
  std::string algorithm;  ///< one of searcher_names()
  std::string reason;     ///< why, for `ranktune check` ("gp: ...")
};

DefaultSearcher default_searcher(const Space& space);

}  // namespace ranktune::search
