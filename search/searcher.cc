// The searcher factory: each `[search] algorithm` by name, wrapped in the repeat and
// concurrency decorators its options ask for (search/searcher.h).
#include "search/searcher.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "search/bohb_searcher.h"
#include "search/cmaes_searcher.h"
#include "search/enqueued.h"
#include "search/concurrency_limiter.h"
#include "search/gp_searcher.h"
#include "search/grid_searcher.h"
#include "search/nsga2_searcher.h"
#include "search/random_searcher.h"
#include "search/repeater.h"
#include "search/tpe_searcher.h"
#include "sys/text.h"

namespace ranktune::search {

namespace {

/// The `[search]` keys that apply to every algorithm: they wrap the algorithm's searcher.
struct Decorators {
  std::int64_t repeat = 1;
  std::optional<std::int64_t> max_concurrent;  ///< none: no limit
};

/// Moves the generic keys out of `options`, so that the algorithm's own OptionReader sees
/// only its keys (and still rejects unknown ones).
Decorators take_decorators(Options& options) {
  Options generic;
  for (const char* key : {"repeat", "max_concurrent"}) {
    if (auto node = options.extract(key)) generic.insert(std::move(node));
  }
  OptionReader r(generic, "search");
  Decorators d;
  d.repeat = r.integer("repeat", 1);
  r.require(d.repeat >= 1, "repeat", "must be >= 1 (got " + std::to_string(d.repeat) + ")");
  r.at_most("repeat", d.repeat, kMaxRepeat);
  if (generic.contains("max_concurrent")) {
    d.max_concurrent = r.integer("max_concurrent", 0);
    r.require(*d.max_concurrent >= 1, "max_concurrent",
              "must be >= 1 (got " + std::to_string(*d.max_concurrent) + ")");
    r.at_most("max_concurrent", *d.max_concurrent, kMaxTrials);
  }
  return d;
}

std::unique_ptr<Searcher> make_random(const Space& space, const SearcherOptions& options, const Options& algorithm) {
  OptionReader(algorithm, "random").finish();  // it takes no options
  return std::make_unique<RandomSearcher>(space, options);
}

std::unique_ptr<Searcher> make_grid(const Space& space, const SearcherOptions& options, const Options& algorithm) {
  OptionReader(algorithm, "grid").finish();  // it takes no options
  return make_grid_searcher(space, options);
}

std::unique_ptr<Searcher> make_tpe(const Space& space, const SearcherOptions& options, const Options& algorithm) {
  return std::make_unique<TpeSearcher>(space, options, TpeOptions::read(algorithm));
}

std::unique_ptr<Searcher> make_gp(const Space& space, const SearcherOptions& options, const Options& algorithm) {
  return std::make_unique<GpSearcher>(space, options, GpOptions::read(algorithm));
}

std::unique_ptr<Searcher> make_bohb(const Space& space, const SearcherOptions& options, const Options& algorithm) {
  return std::make_unique<BohbSearcher>(space, options, BohbOptions::read(algorithm, space.params.size()));
}

std::unique_ptr<Searcher> make_cmaes(const Space& space, const SearcherOptions& options, const Options& algorithm) {
  const std::size_t dims = CmaesSearcher::numeric_params(space).size();
  return std::make_unique<CmaesSearcher>(space, options, CmaesOptions::read(algorithm, dims));
}

std::unique_ptr<Searcher> make_nsga2(const Space& space, const SearcherOptions& options, const Options& algorithm) {
  return std::make_unique<Nsga2Searcher>(space, options, Nsga2Options::read(algorithm, Nsga2Options::varying_params(space)));
}

}  // namespace

const std::vector<SearcherKind>& searchers() {
  static const std::vector<SearcherKind> table = {
      {"random", "samples each parameter from its domain, num_samples times per grid point", make_random, true},
      {"grid", "every combination of the grid and choice values, num_samples times", make_grid, true},
      {"tpe", "tree-structured Parzen estimator (Optuna's default) over the completed trials; MOTPE with several "
              "objectives or constraints", make_tpe, true},
      {"bohb", "TPE over the results at the largest budget with enough of them (BOHB), for HyperBand "
               "or ASHA; MOTPE's split with several objectives or constraints", make_bohb, true},
      {"cmaes", "CMA-ES (Hansen) over the numeric parameters, asynchronous generations, optional IPOP "
                "restarts; choice parameters at random", make_cmaes},
      {"gp", "Gaussian-process Bayesian optimization: log expected improvement under a Matern-5/2 kernel "
             "fitted by marginal likelihood", make_gp},
      {"nsga2", "NSGA-II (Deb et al.), steady-state: each suggestion bred from the best completed trials by "
                "Pareto rank and crowding; for several objectives and constraints", make_nsga2, true},
  };
  return table;
}

std::vector<std::string> searcher_names() {
  std::vector<std::string> out;
  for (const auto& k : searchers()) out.emplace_back(k.name);
  return out;
}

std::vector<std::string> multi_objective_searcher_names() {
  std::vector<std::string> out;
  for (const auto& k : searchers())
    if (k.multi_objective) out.emplace_back(k.name);
  return out;
}

std::unique_ptr<Searcher> make_searcher(const std::string& name, const Space& space,
                                        const SearcherOptions& options,
                                        const Options& algorithm_options) {
  Options rest = algorithm_options;
  const Decorators d = take_decorators(rest);
  // Repeats average one metric (repeater.h); averaging a Pareto point is not defined here.
  if (options.objectives.multi() && d.repeat > 1)
    throw OptionError("repeat", "averages one metric over the repeats; it cannot be used with several objectives "
                                "or constraints. Remove it, or give one metric");
  std::unique_ptr<Searcher> searcher;
  try {
    const auto& table = searchers();
    const auto kind = std::find_if(table.begin(), table.end(), [&](const SearcherKind& k) { return name == k.name; });
    if (kind == table.end()) {
      throw std::invalid_argument("unknown search algorithm '" + name + "'; valid: " + sys::comma_list(searcher_names()));
    }
    if (options.objectives.multi() && !kind->multi_objective)
      throw std::invalid_argument("search algorithm '" + name + "' optimizes one metric, and this experiment has " +
                                  options.objectives.describe() + ". With several objectives or constraints use " +
                                  sys::comma_list(multi_objective_searcher_names()) +
                                  ", or give one metric and no constraints");
    searcher = kind->make(space, options, rest);
  } catch (const OptionError& e) {
    // The algorithm only knows its own keys; a typo of a generic key deserves its hint.
    const auto near = sys::closest_name(e.key(), {"repeat", "max_concurrent"});
    if (near.empty()) throw;
    throw OptionError(e.key(), "unknown option. Did you mean '" + near + "'?");
  }
  // Earlier experiments' trials, as if this searcher had run them, under ids no trial of
  // this experiment has (ids count from 1). Its saved state holds them from then on, so a
  // resume restores rather than repeats this.
  TrialId warm_id = 0;
  for (const WarmObservation& o : options.warm) {
    --warm_id;
    searcher->adopt(warm_id, o.config);
    if (o.iterations > 0) searcher->on_trial_result(warm_id, o.iterations, o.last);
    searcher->on_trial_complete(warm_id, o.last, false);
  }
  // Inside the others: a point is one trial of the algorithm's plan (repeated by repeat).
  if (!options.points_to_evaluate.empty())
    searcher = std::make_unique<Enqueued>(std::move(searcher), options.points_to_evaluate);
  // The limiter goes outside: it counts the trials the controller runs, not the groups.
  if (d.repeat > 1) searcher = std::make_unique<Repeater>(std::move(searcher), d.repeat, options.metric);
  if (d.max_concurrent) {
    searcher = std::make_unique<ConcurrencyLimiter>(std::move(searcher), *d.max_concurrent);
  }
  return searcher;
}

std::vector<ResolvedOption> resolved_searcher_options(const std::string& name, const Space& space,
                                                      const SearcherOptions& options,
                                                      const Options& algorithm_options) {
  const OptionLog log;
  make_searcher(name, space, options, algorithm_options);
  return log.options();
}

}  // namespace ranktune::search
