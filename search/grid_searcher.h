#pragma once
/// Grid search: every listed domain (`grid` and `choice`) becomes a grid axis, the axes are
/// crossed, and each point is repeated num_samples times. Continuous domains are still
/// drawn at random per trial, so a grid over some parameters can explore the others.

#include <memory>

#include "search/searcher.h"

namespace ranktune::search {

std::unique_ptr<Searcher> make_grid_searcher(const Space& space, const SearcherOptions& options);

}  // namespace ranktune::search
