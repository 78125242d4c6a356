#pragma once
/// Random search (Bergstra & Bengio, JMLR 2012), crossed with grid axes as in Tune's
/// BasicVariantGenerator: every point of the crossed `grid` axes is repeated num_samples
/// times, and every other parameter is drawn independently for each trial.

#include "search/searcher.h"

namespace ranktune::search {

class RandomSearcher final : public Searcher {
 public:
  RandomSearcher(Space space, SearcherOptions options);

  Suggestion suggest(TrialId id) override;
  std::int64_t total() const override { return total_; }
  std::string extend(std::int64_t n) override {
    total_ += n;
    return "";
  }
  std::string save() const override;
  void restore(const std::string& state) override;

 private:
  Space space_;
  SearcherOptions options_;
  std::int64_t total_;
  std::int64_t next_ = 0;  ///< suggestions made so far
};

}  // namespace ranktune::search
