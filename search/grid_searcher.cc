// The grid searcher: the random searcher with every listed domain made a grid axis
// (search/grid_searcher.h).
#include "search/grid_searcher.h"

#include "search/random_searcher.h"

namespace ranktune::search {

std::unique_ptr<Searcher> make_grid_searcher(const Space& space, const SearcherOptions& options) {
  // Grid search is random search with the choices promoted to axes; reusing it keeps a
  // single enumeration order and a single resume state.
  Space crossed = space;
  for (auto& p : crossed.params) {
    if (p.domain.kind == DomainKind::Choice) p.domain.kind = DomainKind::Grid;
  }
  return std::make_unique<RandomSearcher>(std::move(crossed), options);
}

}  // namespace ranktune::search
