// Warm start from earlier results files: their spaces compared with this one, and their
// completed trials taken as observations (experiment/warm_start.h).
#include "experiment/warm_start.h"

#include <cmath>

#include "config/stored.h"
#include "io/errors.h"
#include "io/store.h"

namespace ranktune::experiment {

namespace {

// The kind of a parameter as the comparison sees it: its domain kind, a fixed value apart.
std::string kind_of(const search::Param& p) {
  if (p.fixed) return "a fixed value";
  return search::to_string(p.domain.kind) + std::string(" (") + search::to_string(p.domain.type()) + ")";
}

// One line per difference: "+ NAME" (here only), "- NAME" (there only), "~ NAME: A there, B here".
std::string space_diff(const search::Space& here, const search::Space& there) {
  std::string diff;
  for (const search::Param& p : here.params)
    if (!there.find(p.name)) diff += "; + " + p.name + " (only in this config)";
  for (const search::Param& p : there.params) {
    const search::Param* q = here.find(p.name);
    if (q == nullptr)
      diff += "; - " + p.name + " (only in that file)";
    else if (kind_of(p) != kind_of(*q))
      diff += "; ~ " + p.name + ": " + kind_of(p) + " there, " + kind_of(*q) + " here";
  }
  return diff.empty() ? "" : diff.substr(2);
}

}  // namespace

void load_warm_start(config::ExperimentConfig& cfg) {
  cfg.warm.clear();
  cfg.warm_sources.clear();
  if (cfg.warm_start.empty()) return;
  if (cfg.algorithm == "random" || cfg.algorithm == "grid")
    cfg.fail("search.warm_start", "algorithm \"" + cfg.algorithm +
                                      "\" does not learn from observations, so earlier trials cannot warm-start it; "
                                      "use \"tpe\", \"bohb\", \"cmaes\" or \"gp\", or remove warm_start");
  for (const std::string& path : cfg.warm_start) {
    if (path == cfg.results)
      cfg.fail("search.warm_start", path + " is this experiment's own results file; give earlier experiments' files");
    io::ResultsFile file;
    config::ExperimentConfig old;
    try {
      file = io::ResultsFile::read(path, /*results=*/false);
      old = config::stored_config(file);
    } catch (const config::ConfigError& e) {
      cfg.fail("search.warm_start", path + ": its stored config does not parse (" + e.what() + ")");
    } catch (const std::exception& e) {
      cfg.fail("search.warm_start", "cannot read " + path + ": " + e.what());
    }
    if (const std::string diff = space_diff(cfg.space, old.space); !diff.empty())
      cfg.fail("search.warm_start", path + " searched another space: " + diff +
                                        ". Warm start needs the same parameter names with the same kinds of domain "
                                        "(the bounds and values may differ)");
    if (old.metric != cfg.metric || old.mode != cfg.mode)
      cfg.fail("search.warm_start", path + " optimized " + old.metric + " (" + search::to_string(old.mode) +
                                        "), this experiment " + cfg.metric + " (" + search::to_string(cfg.mode) +
                                        "): its values would mislead the model");
    std::size_t taken = 0, outside = 0, unfinished = 0;
    for (const search::Trial& t : file.trials) {
      if (t.status != search::TrialStatus::Terminated || !std::isfinite(t.last)) {
        ++unfinished;
        continue;
      }
      search::Config config = t.config;
      // This space's fixed values and conditions decide what the trial's config holds here.
      for (const search::Param& p : cfg.space.params)
        if (p.fixed) config[p.name] = p.domain.values.front();
      search::drop_inactive(cfg.space, config);
      bool inside = true;
      for (const search::Param& p : cfg.space.params) {
        const auto v = config.find(p.name);
        const bool active = !p.conditional() || search::holds(p.when, config);
        if (v == config.end() ? active : !search::outside_domain(p.domain, v->second).empty()) inside = false;
      }
      if (!inside) {
        ++outside;
        continue;
      }
      search::Metrics last;
      last[cfg.metric] = t.last;
      cfg.warm.push_back({std::move(config), std::move(last), t.iterations});
      ++taken;
    }
    std::string note = std::to_string(taken) + " trial" + (taken == 1 ? "" : "s") + " from " + path;
    if (outside > 0) note += "; " + std::to_string(outside) + " dropped: values outside this space";
    if (unfinished > 0) note += "; " + std::to_string(unfinished) + " not used: failed or unfinished";
    cfg.warm_sources.push_back(std::move(note));
  }
}

}  // namespace ranktune::experiment
