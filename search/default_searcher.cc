#include "search/default_searcher.h"

#include <algorithm>
#include <vector>

namespace ranktune::search {

DefaultSearcher default_searcher(const Space& space) {
  const auto& all = space.params;
  if (std::any_of(all.begin(), all.end(), [](const Param& p) { return p.domain.kind == DomainKind::Grid; }))
    return {"random", "random, since the space has grid axes to cross (a model-based searcher does not cross them)"};
  if (space.conditional())
    return {"tpe", "tpe, since the space has conditional parameters, which tpe models where they are active "
                   "(gp models only the unconditional ones)"};
  // Fixed values are in every config and no searcher chooses them: they do not count.
  std::vector<const Param*> ps;
  for (const Param& p : all)
    if (!p.fixed) ps.push_back(&p);
  const auto categorical = static_cast<std::size_t>(
      std::count_if(ps.begin(), ps.end(), [](const Param* p) { return p->domain.kind == DomainKind::Choice; }));
  if (ps.size() > kMaxGpParams)
    return {"tpe", "tpe, since the space has " + std::to_string(ps.size()) + " parameters (gp is the default up to " +
                       std::to_string(kMaxGpParams) + ")"};
  if (2 * categorical > ps.size())
    return {"tpe", "tpe, since " + std::to_string(categorical) + " of the " + std::to_string(ps.size()) +
                       " parameters are categorical (gp is the default when at most half are)"};
  return {"gp", "gp, the best measured searcher for a mostly numeric space of up to " + std::to_string(kMaxGpParams) +
                    " parameters (benchmarks/RESULTS.md)"};
}

}  // namespace ranktune::search
