// The table of trainable kinds (train/registry.h) and what runs over it: reading
// [trainable], the traits, the factory, and validate().

#include "train/registry.h"

#include <algorithm>
#include <unordered_set>

#include "io/schema.h"
#include "sys/text.h"
#include "train/command.h"
#include "train/mlp_trainable.h"
#include "train/synthetic.h"

namespace ranktune::train {

const std::vector<TrainableKind>& trainable_kinds() {
  // Each kind's line is its own file's (name, help, keys, read, check, traits, factory).
  static const std::vector<TrainableKind> table = {
      synthetic_kind(),
      command_kind(),
      mlp_kind(),
  };
  return table;
}

std::vector<std::string> trainable_kind_names() {
  std::vector<std::string> out;
  for (const auto& k : trainable_kinds()) out.emplace_back(k.name);
  return out;
}

namespace {

const TrainableKind* find_kind(const std::string& name) {
  const auto& table = trainable_kinds();
  const auto it = std::find_if(table.begin(), table.end(), [&](const TrainableKind& k) { return name == k.name; });
  return it == table.end() ? nullptr : &*it;
}

bool contains(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

const TrainableKind& kind_of(const config::TrainableSpec& spec) {
  if (const TrainableKind* k = find_kind(spec.kind)) return *k;
  throw std::invalid_argument("unknown trainable kind '" + spec.kind + "'; valid: " + sys::comma_list(trainable_kind_names()));
}

TrainableTraits traits(const config::TrainableSpec& spec) { return kind_of(spec).traits(spec); }

std::filesystem::path config_dir(const config::ExperimentConfig& cfg) {
  return cfg.path.empty() ? std::filesystem::current_path() : std::filesystem::path(cfg.path).parent_path();
}

void read_trainable(config::ExperimentConfig& cfg) {
  config::TrainableSpec& spec = cfg.trainable;
  if (!spec.options && !spec.keys.empty()) {
    const config::TrainableKeys& keys = spec.keys;
    keys.read_enum("kind", trainable_kind_names(), spec.kind, /*required=*/true);
    const TrainableKind& kind = kind_of(spec);
    std::vector<std::string> allowed = {"kind"};
    allowed.insert(allowed.end(), kind.keys().begin(), kind.keys().end());
    // A key of another kind gets its own message rather than a spelling suggestion.
    for (const auto& k : keys.names()) {
      if (contains(allowed, k)) continue;
      for (const auto& other : trainable_kinds())
        if (&other != &kind && contains(other.keys(), k))
          keys.fail(k, "applies only to kind = \"" + std::string(other.name) + "\" (this trainable is \"" + spec.kind +
                           "\"). Remove it, or set kind = \"" + other.name + "\"");
    }
    keys.check_keys(allowed);
    spec.options = kind.read(keys, cfg);
  }
  const TrainableKind* kind = find_kind(spec.kind);
  if (kind == nullptr)
    cfg.fail("trainable.kind", "unknown kind '" + spec.kind + "'; valid: " + sys::comma_list(trainable_kind_names()));
  if (!spec.options) spec.options = kind->read(spec.keys, cfg);  // a spec built in code with defaults
  if (cfg.ranks_per_trial > 1 && kind->no_gang != nullptr) {
    std::vector<std::string> gangs;
    for (const auto& k : trainable_kinds())
      if (k.no_gang == nullptr) gangs.emplace_back(k.name);
    std::sort(gangs.begin(), gangs.end());
    spec.keys.fail_config(cfg, "resources.ranks_per_trial", "gang trials (ranks_per_trial > 1) need a built-in trainable (" +
                                              sys::comma_list(gangs) + "): " + kind->no_gang);
  }
}

std::unique_ptr<Trainable> make_trainable(const config::TrainableSpec& spec) { return kind_of(spec).make(spec); }

std::vector<std::string> reported_metrics(const config::TrainableSpec& spec) { return traits(spec).metrics; }

namespace {

// A scheduler that mutates trials (PBT, PB2) hands a donor's checkpoint to a config with other
// values: one of a shape-changing parameter would not load ("size mismatch for c1.weight").
void check_mutable(const config::ExperimentConfig& cfg) {
  if (!search::scheduler_traits(cfg.scheduler).mutates) return;
  const std::vector<std::string> shape = traits(cfg.trainable).shape_params;
  for (const search::Param& p : cfg.space.params) {
    if (p.fixed || !contains(shape, p.name) || !cfg.space.may_mutate(p.name)) continue;
    std::vector<std::string> others;
    for (const search::Param& q : cfg.space.params)
      if (!q.fixed && !contains(shape, q.name)) others.push_back("\"" + q.name + "\"");
    const std::string fix = others.empty() ? "use a scheduler that does not mutate trials (asha, hyperband)"
                                           : "list the others in [scheduler] mutable = [" + sys::comma_list(others) + "]";
    cfg.fail(cfg.space.mutable_params.empty() ? "scheduler.kind" : "scheduler.mutable",
             "'" + p.name + "' changes the shape of the " + cfg.trainable.kind + " trainable's state, so " + cfg.scheduler +
                 " cannot mutate it (a donor's checkpoint would not load with another value)" +
                 (cfg.space.mutable_params.empty() ? ", and without [scheduler] mutable every parameter mutates" : "") +
                 "; " + fix);
  }
}

// The objectives and constrained metrics must be ones the trainable reports: a typo there
// would make every trial a failed point, which no message would explain. A kind whose
// metrics are its program's (a command) reports whatever the config names.
void check_objectives(const config::ExperimentConfig& cfg, const TrainableTraits& t,
                      const std::vector<std::string>& reported) {
  if (t.open_metrics || !cfg.objectives.multi()) return;
  const auto known = [&](const std::string& m) { return contains(reported, m); };
  const auto why = [&](const std::string& m) {
    const std::string near = sys::closest_name(m, reported);
    return "the " + cfg.trainable.kind + " trainable never reports '" + sys::excerpt(m) + "' (it reports " +
           sys::comma_list(reported) + ")" + (near.empty() ? ". Name one of those" : ". Did you mean '" + near + "'?");
  };
  for (const auto& m : cfg.objectives.metrics)
    if (!known(m)) cfg.fail("experiment.metric", why(m));
  for (const auto& c : cfg.objectives.constraints)
    if (!known(c.metric)) cfg.fail("experiment.constraints", "a constraint on a metric that never comes: " + why(c.metric));
}

}  // namespace

void validate(config::ExperimentConfig& cfg) {
  read_trainable(cfg);
  kind_of(cfg.trainable).check(cfg);
  // The experiment metric first (the results table's first metric column), no duplicates.
  std::vector<std::string> metrics = {cfg.metric};
  std::unordered_set<std::string> seen = {cfg.metric};
  const TrainableTraits t = traits(cfg.trainable);
  for (const auto& m : t.metrics) {
    if (seen.insert(m).second) metrics.push_back(m);
  }
  check_objectives(cfg, t, metrics);
  // Every objective and constrained metric is a column of /results: the Pareto ranks
  // (controller) and the reports read them from there.
  for (const auto& m : cfg.objectives.metrics)
    if (seen.insert(m).second) metrics.push_back(m);
  for (const auto& c : cfg.objectives.constraints)
    if (seen.insert(c.metric).second) metrics.push_back(c.metric);
  // Each metric is a column of the results file's /results (io/schema.h, the limits): said
  // here rather than by HDF5 once the run has started.
  const std::string key = cfg.trainable.keys.has("metrics") ? "trainable.metrics" : "experiment.metric";
  if (metrics.size() > io::kMaxMetrics)
    cfg.fail(key, std::to_string(metrics.size()) + " metrics to record; at most " + std::to_string(io::kMaxMetrics) +
                      " are allowed (configs/README.md, \"Limits\"): each is a column of the results file. Record fewer");
  if (const std::size_t bytes = io::result_row_type_bytes(metrics); bytes > io::kMaxRowTypeBytes)
    cfg.fail(key, "the names of the metrics take about " + std::to_string(bytes) +
                      " bytes of the results file's /results header (each name and 25 bytes); at most " +
                      std::to_string(io::kMaxRowTypeBytes) + " fit (configs/README.md, \"Limits\"). Use shorter names or fewer metrics");
  cfg.trainable.metrics = std::move(metrics);
  check_mutable(cfg);
}

}  // namespace ranktune::train
