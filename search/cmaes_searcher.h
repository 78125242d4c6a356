#pragma once
/// The "cmaes" searcher: CMA-ES (Hansen, "The CMA Evolution Strategy: A Tutorial", 2016; the
/// mathematics is search/cmaes.h) run asynchronously as Optuna's CmaEsSampler runs it, with the
/// IPOP restarts of Auger and Hansen, "A Restart CMA Evolution Strategy With Increasing
/// Population Size" (IEEE CEC 2005) as an option.
///
/// The space. CMA-ES searches the box [0, 1]^n of the numeric parameters, one coordinate each
/// in declaration order: uniform and quniform linearly, loguniform on the log scale, randint
/// [low, high) as high - low cells of equal width. A suggestion decodes its point: quniform
/// values are rounded to q, randint values are the cell's integer; CMA-ES learns from the
/// point it drew, not the rounded value (so rounding does not bias its step size). When the
/// step size shrinks below one integer cell, that parameter stops moving: there is no margin
/// correction (Hamano et al., GECCO 2022, Optuna's `with_margin`). Choice and grid parameters
/// are not in the box: each suggestion draws them uniformly at random, independently of
/// everything learnt (Optuna's CmaEsSampler falls back to independent sampling the same
/// way), and a grid is not enumerated (total() is num_samples). A space without a numeric
/// parameter is refused.
///
/// Asynchrony. Every suggestion is a new member of the current generation, drawn from the
/// current distribution, however many are in flight. The first lambda members of the
/// current generation that complete are its results, in any order; they update the
/// distribution and a new generation begins. Members of an older generation that complete
/// later are ignored. Each suggestion draws from its own generator, seeded by (seed,
/// suggestion index), so a suggestion depends only on the seed, its index and the results
/// completed before it.
///
/// Results. A member's value is the experiment metric's last value (on_trial_complete), made
/// "smaller is better" by the mode. A failed member, or one without a finite value, gets the
/// worst value seen so far (+inf before any) and ranks below every other member of its
/// generation, so that a generation completes despite failures. Under a multi-fidelity
/// scheduler a trial that ended before SearcherOptions::max_t was stopped early, and its last
/// value is at a lower fidelity than the others': with `stopped_trials = "ignore"` (the
/// default, as Optuna's CmaEsSampler ignores pruned trials) it is not a result; with "rank"
/// it is one, ranked below every member that reached max_t, members stopped later above
/// those stopped earlier, then by value (the scheduler already judged it worse than those it
/// let go on). A trial whose iterations the searcher never saw (behind `repeat`, or walked
/// over by a resume that found no saved state) counts as having reached max_t.
///
/// Restarts. With `restart = "ipop"`, a generation after which one of Hansen's termination
/// criteria holds (tolfun, tolx, tolxup, noeffectaxis, noeffectcoord, conditioncov) ends the
/// run: a new one starts from a uniformly random mean with sigma0, C = I and twice the
/// population. With "none" the run goes on: a converged run keeps sampling near its optimum.

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "search/cmaes.h"
#include "search/num_samples_searcher.h"

namespace ranktune::search {

/// The `[search]` options of algorithm "cmaes".
struct CmaesOptions {
  enum class Restart { None, Ipop };
  enum class Stopped { Ignore, Rank };

  double sigma0 = 1.0 / 6.0;  ///< initial step size, as a fraction of each parameter's range
  std::int64_t popsize = 0;   ///< lambda of the first run; 0: 4 + floor(3 ln n)
  Restart restart = Restart::None;
  Stopped stopped = Stopped::Ignore;  ///< what a trial stopped before max_t is
  double tolfun = 1e-12;      ///< TolFun of the restart criteria, in metric units
  double tolx = 1e-12 / 6.0;  ///< TolX, in box units; read()'s default is 1e-12 x sigma0

  /// Reads and range-checks the options for a box of `dims` >= 1 dimensions; throws
  /// OptionError for a bad or unknown key.
  static CmaesOptions read(const Options& options, std::size_t dims);
  CmaTolerances tolerances() const { return {sigma0, tolx, tolfun}; }
};

class CmaesSearcher final : public NumSamplesSearcher {
 public:
  /// `cmaes` as read() returned it for this space. Throws OptionError (key "space") when
  /// the space has no numeric parameter.
  CmaesSearcher(Space space, SearcherOptions options, CmaesOptions cmaes);

  /// The indices of the parameters CMA-ES searches (every one but choice and grid), in
  /// order; their count is the box's dimension. Throws OptionError (key "space", saying
  /// what to use instead) when there is none.
  static std::vector<std::size_t> numeric_params(const Space& space);

  Suggestion suggest(TrialId id) override;
  void on_trial_result(TrialId id, std::int64_t iteration, const Metrics& metrics) override;
  void on_trial_complete(TrialId id, const Metrics& last, bool error) override;
  /// Before its first suggestion (warm start), a foreign trial's result can move the first
  /// run's mean: it starts at the best such point instead of the box's centre (the mean
  /// part of Nomura et al.'s warm-starting CMA-ES, AAAI 2021, which Optuna's sampler offers).
  /// Later ones (points_to_evaluate past the first) are not members of a generation.
  void adopt(TrialId id, const Config& config) override;
  /// Text: the suggestion count, the generation, the restarts, the distribution (mean, C,
  /// paths, sigma, TolFun history), the members in flight (generation, last iteration,
  /// point) and the current generation's results.
  std::string save() const override;
  /// Throws std::invalid_argument on a damaged state, or one saved for another space or
  /// population (another config).
  void restore(const std::string& state) override;

  /// Generations completed, over all runs.
  std::int64_t generation() const { return generation_; }
  /// IPOP restarts so far, and the criterion that caused the last ("" before the first).
  std::int64_t restarts() const { return restarts_; }
  const std::string& restart_reason() const { return restart_reason_; }
  /// The population size of the current run.
  std::int64_t popsize() const { return es_.lambda(); }
  /// The current run's distribution.
  const CmaEs& distribution() const { return es_; }

 private:
  struct Member {
    std::int64_t generation = 0;
    std::int64_t iteration = 0;  ///< the last one reported; 0 when none was
    Eigen::VectorXd x;           ///< the point drawn, in the box
  };
  struct Result {
    TrialId id = 0;
    std::int64_t tier = 0;  ///< ranks first: kReachedEnd, the iteration of a stopped trial, kFailed
    double value = 0;       ///< then this, smaller is better
    Eigen::VectorXd x;
  };
  static constexpr std::int64_t kReachedEnd = std::numeric_limits<std::int64_t>::max();
  static constexpr std::int64_t kFailed = -1;

  Config decode(const Eigen::VectorXd& x, Rng& rng) const;
  /// Updates the distribution from the complete generation, and restarts when IPOP says so.
  void update();
  /// The population of the run after `restarts` restarts.
  std::int64_t popsize_after(std::int64_t restarts) const;

  Space space_;
  CmaesOptions cmaes_;
  std::vector<std::size_t> numeric_;  ///< the parameters in the box, by index in space_
  std::int64_t next_ = 0;             ///< suggestions made so far
  std::int64_t generation_ = 0;
  std::int64_t restarts_ = 0;
  std::string restart_reason_;
  double worst_;  ///< the worst value of a result so far; -inf before any
  CmaEs es_;
  std::map<TrialId, Member> members_;  ///< suggested, not yet complete
  std::vector<Result> results_;        ///< the current generation's, in completion order
  std::map<TrialId, Eigen::VectorXd> foreign_;  ///< adopted before the first suggestion
  double warm_best_ = std::numeric_limits<double>::infinity();  ///< the best of their values (smaller is better)
};

}  // namespace ranktune::search
