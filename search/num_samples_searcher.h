#pragma once
/// The base of the searchers that plan `num_samples` trials and no grid (tpe, bohb, cmaes,
/// gp): each proposes until it has made num_samples suggestions, so the trials it plans
/// (total()) are num_samples, and `ranktune ctl add --count N` (extend()) raises them by N
/// with the model going on as before. (random and grid enumerate a grid instead,
/// search/random_searcher.h.)

#include <cstdint>
#include <string>
#include <utility>

#include "search/searcher.h"

namespace ranktune::search {

class NumSamplesSearcher : public Searcher {
 public:
  std::int64_t total() const override { return options_.num_samples; }
  std::string extend(std::int64_t n) override {
    options_.num_samples += n;
    return "";
  }

 protected:
  explicit NumSamplesSearcher(SearcherOptions options) : options_(std::move(options)) {}

  SearcherOptions options_;
};

}  // namespace ranktune::search
