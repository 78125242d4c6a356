#include "search/searcher.h"

#include <stdexcept>

#include "search/grid_searcher.h"
#include "search/random_searcher.h"
#include "search/tpe_searcher.h"

namespace ranktune::search {

std::vector<std::string> searcher_names() { return {"random", "grid", "tpe"}; }

std::unique_ptr<Searcher> make_searcher(const std::string& name, const Space& space,
                                        const SearcherOptions& options,
                                        const Options& algorithm_options) {
  if (name == "random" || name == "grid") {
    OptionReader(algorithm_options, name).finish();  // neither takes options
    return name == "random" ? std::make_unique<RandomSearcher>(space, options)
                            : make_grid_searcher(space, options);
  }
  if (name == "tpe") {
    return std::make_unique<TpeSearcher>(space, options, TpeOptions::read(algorithm_options));
  }
  std::string valid;
  for (const auto& n : searcher_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown search algorithm '" + name + "'; valid: " + valid);
}

}  // namespace ranktune::search
