#pragma once
/// The Searcher interface (Tune's narrow waist): it proposes configs; it never runs them.

#include <memory>
#include <string>
#include <vector>

#include "search/objectives.h"
#include "search/options.h"
#include "search/space.h"
#include "search/types.h"

namespace ranktune::search {

/// What a searcher answers when asked for a new trial.
struct Suggestion {
  enum class Kind {
    Config,    ///< `config` holds a new trial's hyperparameters
    NotNow,    ///< nothing now, ask again after the next result (e.g. concurrency limit)
    Finished,  ///< the searcher will never suggest again
  };
  Kind kind = Kind::Finished;
  Config config;
};

class Searcher {
 public:
  virtual ~Searcher() = default;
  /// Proposes the config of trial `id`. Called once per new trial id.
  virtual Suggestion suggest(TrialId id) = 0;
  /// A trial reported the result of its iteration `iteration` (from 1; a trial resumed from
  /// a checkpoint goes on counting from it).
  virtual void on_trial_result(TrialId id, std::int64_t iteration, const Metrics& metrics) {}
  /// A trial finished; `error` tells whether it failed for good.
  virtual void on_trial_complete(TrialId id, const Metrics& last, bool error) {}
  /// Trial `id` runs with `config`, which this searcher did not propose (`[search]
  /// points_to_evaluate`, or an earlier experiment's trial for warm start): the model-based
  /// searchers (tpe, bohb, gp) take its results as they take their own. Others ignore it.
  virtual void adopt(TrialId id, const Config& config) {}
  /// Total number of trials this searcher will propose, or -1 when not known in advance.
  virtual std::int64_t total() const { return -1; }
  /// Proposes `n` (>= 1) trials more than planned (`ranktune ctl add --count`): random
  /// and grid search go on with their enumeration (a grid starts another pass over its
  /// points), TPE and BOHB with their models. Returns "" when it will, else why not. Not
  /// part of save(): the caller re-applies it after a restore.
  virtual std::string extend(std::int64_t n) {
    return "this search algorithm cannot propose more trials than it planned";
  }
  /// Serializes the searcher's state (for resume).
  virtual std::string save() const = 0;
  /// Restores a state that save() produced. Throws std::invalid_argument on a bad state.
  virtual void restore(const std::string& state) = 0;
};

/// A completed trial of an earlier experiment (`[search] warm_start`): its config (within
/// this space), its last metrics and how far it got. Not run again, not counted anywhere.
struct WarmObservation {
  Config config;
  Metrics last;
  std::int64_t iterations = 0;
};

/// Options common to the built-in searchers.
struct SearcherOptions {
  std::uint64_t seed = 0;
  std::int64_t num_samples = 1;  ///< trials per grid point (or trials, without a grid)
  std::string metric;            ///< the experiment metric, for model-based searchers
  Mode mode = Mode::Max;
  /// `[stop] max_t`: the iteration at which the controller stops a trial, so that a trial
  /// that ended before it was stopped early (a scheduler, `ctl stop`, the experiment's end).
  /// 0 when unknown; only "cmaes" reads it.
  std::int64_t max_t = 0;
  /// `[search] points_to_evaluate`: configs suggested first, in order, counted in the
  /// trials the algorithm plans (its total()); the algorithm proposes the rest and learns
  /// from these as from its own (Searcher::adopt).
  std::vector<Config> points_to_evaluate;
  /// `[search] warm_start`: earlier experiments' observations the algorithm starts from.
  std::vector<WarmObservation> warm;
  /// Several objectives or constraints (Objectives::multi()): only a kind with
  /// SearcherKind::multi_objective takes them; `metric` and `mode` are then the first
  /// objective's. Empty for a single-objective experiment.
  Objectives objectives;
};

/// One registered search algorithm: its `[search] algorithm`, one line of help, and its
/// factory (which reads and checks its own options; make_searcher has taken the generic
/// keys `repeat` and `max_concurrent` out before).
struct SearcherKind {
  const char* name;
  const char* help;
  std::unique_ptr<Searcher> (*make)(const Space& space, const SearcherOptions& options,
                                    const Options& algorithm_options);
  /// It takes SearcherOptions::objectives with several objectives or constraints (it
  /// ignores them, as random and grid do, or models them).
  bool multi_objective = false;
};

/// Every search algorithm, in the order messages list them. Adding one is one line of this
/// table (searcher.cc); the tests that run over every searcher read it.
const std::vector<SearcherKind>& searchers();

/// The names of searchers(), accepted by make_searcher.
std::vector<std::string> searcher_names();

/// The names of the searchers with SearcherKind::multi_objective, in searchers() order.
std::vector<std::string> multi_objective_searcher_names();

/// Builds a searcher by name with its `[search]` options. Throws std::invalid_argument
/// listing the valid names, or, for multi-objective `options.objectives` and an algorithm
/// that cannot take them, naming those that can; OptionError for a bad option. The keys `repeat` and
/// `max_concurrent` apply to every algorithm: they wrap it in a Repeater, then a
/// ConcurrencyLimiter, and the algorithm never sees them.
std::unique_ptr<Searcher> make_searcher(const std::string& name, const Space& space,
                                        const SearcherOptions& options,
                                        const Options& algorithm_options = {});

/// The options make_searcher runs with: `repeat` (and `max_concurrent` when set), then each
/// key the algorithm reads, as given or its default, in the order read (`ranktune check`
/// prints them). Throws as make_searcher does.
std::vector<ResolvedOption> resolved_searcher_options(const std::string& name, const Space& space,
                                                      const SearcherOptions& options,
                                                      const Options& algorithm_options = {});

}  // namespace ranktune::search
