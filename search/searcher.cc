#include "search/searcher.h"

#include <optional>
#include <stdexcept>

#include "search/bohb_searcher.h"
#include "search/concurrency_limiter.h"
#include "search/grid_searcher.h"
#include "search/random_searcher.h"
#include "search/repeater.h"
#include "search/tpe_searcher.h"

namespace ranktune::search {

std::vector<std::string> searcher_names() { return {"random", "grid", "tpe", "bohb"}; }

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

std::unique_ptr<Searcher> make_algorithm(const std::string& name, const Space& space,
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
  if (name == "bohb") {
    return std::make_unique<BohbSearcher>(space, options, BohbOptions::read(algorithm_options, space.params.size()));
  }
  throw std::invalid_argument("unknown search algorithm '" + name + "'; valid: " +
                              comma_list(searcher_names()));
}

}  // namespace

std::unique_ptr<Searcher> make_searcher(const std::string& name, const Space& space,
                                        const SearcherOptions& options,
                                        const Options& algorithm_options) {
  Options rest = algorithm_options;
  const Decorators d = take_decorators(rest);
  std::unique_ptr<Searcher> searcher;
  try {
    searcher = make_algorithm(name, space, options, rest);
  } catch (const OptionError& e) {
    // The algorithm only knows its own keys; a typo of a generic key deserves its hint.
    const auto near = closest_name(e.key(), {"repeat", "max_concurrent"});
    if (near.empty()) throw;
    throw OptionError(e.key(), "unknown option. Did you mean '" + near + "'?");
  }
  // The limiter goes outside: it counts the trials the controller runs, not the groups.
  if (d.repeat > 1) searcher = std::make_unique<Repeater>(std::move(searcher), d.repeat, options.metric);
  if (d.max_concurrent) {
    searcher = std::make_unique<ConcurrencyLimiter>(std::move(searcher), *d.max_concurrent);
  }
  return searcher;
}

}  // namespace ranktune::search
