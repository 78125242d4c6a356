#include "train/trainable.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <cerrno>
#include <fstream>
#include <span>
#include <stdexcept>
#include <unordered_set>
#include <vector>

#include "io/crc32c.h"

#include "search/options.h"
#include "train/command.h"
#include "train/mlp_trainable.h"
#include "train/mnist.h"
#include "train/synthetic.h"

namespace ranktune::train {

namespace {

// The index n of a parameter named "x<n>", or 0.
int x_index(const std::string& name) {
  if (name.size() < 2 || name[0] != 'x' || name[1] == '0') return 0;
  if (!std::all_of(name.begin() + 1, name.end(), [](char c) { return c >= '0' && c <= '9'; })) return 0;
  return name.size() > 6 ? 0 : std::atoi(name.c_str() + 1);
}

void validate_synthetic(io::ExperimentConfig& cfg) {
  const auto& spec = cfg.trainable;
  const SyntheticFunction* f = find_synthetic_function(spec.function);
  if (f == nullptr) {
    std::vector<std::string> names;
    for (const auto& g : synthetic_functions()) names.push_back(g.name);
    cfg.fail("trainable.function", "unknown function '" + search::excerpt(spec.function) + "'; valid: " + search::comma_list(names));
  }

  std::vector<std::string> needed = f->params;
  if (f->variadic()) {
    // x1..xn up to the first gap are used; a later xk would be silently ignored, so refuse it.
    int highest = 0;
    for (const auto& p : cfg.space.params) highest = std::max(highest, x_index(p.name));
    if (highest == 0) {
      cfg.fail("search.space", spec.function + " needs parameters x1..xn (n >= 1); missing: x1");
    }
    for (int i = 1; i <= highest; ++i) needed.push_back(variadic_param(i));
  }
  // Sets, not linear scans: a space of 50,000 parameters must not take minutes to check.
  std::unordered_set<std::string> in_space, inputs(needed.begin(), needed.end());
  for (const auto& p : cfg.space.params) in_space.insert(p.name);
  std::vector<std::string> missing;
  for (const auto& name : needed) {
    if (!in_space.contains(name)) missing.push_back(name);
  }
  if (!missing.empty()) {
    cfg.fail("search.space", spec.function + " needs parameters " + search::comma_list(needed) + "; missing: " + search::comma_list(missing));
  }
  for (const auto& p : cfg.space.params) {
    if (!inputs.contains(p.name)) continue;
    for (const auto& v : p.domain.values) {
      if (std::holds_alternative<std::string>(v)) {
        cfg.fail("search.space." + p.name, "'" + p.name + "' is an input of " + spec.function + " and must be numeric");
      }
    }
  }

  if (std::find(f->metrics.begin(), f->metrics.end(), cfg.metric) == f->metrics.end()) {
    cfg.fail("experiment.metric", "the synthetic trainable reports " + search::comma_list(f->metrics) + "; '" + search::excerpt(cfg.metric) +
                                      "' is not one of them (\"objective\" is f(x) without noise)");
  }
}

void validate_command(io::ExperimentConfig& cfg) {
  const auto& spec = cfg.trainable;
  if (spec.command.empty()) {
    cfg.fail("trainable.command", "is empty; give the program and its arguments, e.g. [\"python3\", \"train.py\"]");
  }
  std::error_code ec;
  const std::string config_dir =
      cfg.path.empty() ? std::filesystem::current_path(ec).string() : std::filesystem::path(cfg.path).parent_path().string();
  const auto spec_path = spec.env.find("PATH");
  const char* inherited_path = std::getenv("PATH");
  const std::string path_env = spec_path != spec.env.end() ? spec_path->second : inherited_path ? inherited_path : "";
  const std::string& program = spec.command[0];
  const ResolvedProgram r = resolve_program(program, config_dir, path_env);
  if (r.error != 0) {
    const std::string where = r.path.empty() ? "not found in PATH" : "resolved to " + r.path;
    cfg.fail("trainable.command", "cannot run '" + search::excerpt(program) + "': " + std::strerror(r.error) + " (" + where +
                                      "). Relative paths with a '/' are relative to the config's folder");
  }
  if (!spec.workdir.empty() && !std::filesystem::is_directory(spec.workdir, ec)) {
    cfg.fail("trainable.workdir", "'" + search::excerpt(spec.workdir) + "' is not a directory");
  }
}

void validate_mlp(io::ExperimentConfig& cfg) {
  const auto& names = mlp_param_names();
  for (const auto& p : cfg.space.params) {
    const std::string key = "search.space." + p.name;
    if (std::find(names.begin(), names.end(), p.name) == names.end()) {
      const std::string near = search::closest_name(p.name, names);
      const std::string name = search::excerpt(p.name);
      cfg.fail(key, "'" + name + "' is not a parameter of the mlp trainable" +
                        (near.empty() ? "" : "; did you mean '" + near + "'?") + " Valid: " + search::comma_list(names));
    }
    // Every value the domain can produce must make a valid trial: check the listed values,
    // or both ends of a range, one parameter at a time on top of the defaults.
    std::vector<search::Value> probes = p.domain.values;
    if (!p.domain.is_listed()) {
      const bool integral = p.domain.kind == search::DomainKind::RandInt;
      const double hi = integral ? p.domain.high - 1 : p.domain.high;
      for (double x : {p.domain.low, hi}) {
        if (integral) probes.emplace_back(std::in_place_type<std::int64_t>, static_cast<std::int64_t>(x));
        else probes.emplace_back(std::in_place_type<double>, x);
      }
    }
    for (const auto& v : probes) {
      search::Config c = {{p.name, v}};
      // Parameters that only make sense together get a valid partner for the probe.
      if (p.name == "depth" && !cfg.space.find("width")) cfg.fail(key, "'depth' needs 'width' in the space too");
      if (p.name == "width" && !cfg.space.find("depth")) cfg.fail(key, "'width' needs 'depth' in the space too");
      if (p.name == "depth") c["width"] = std::int64_t{8};
      if (p.name == "width") c["depth"] = std::int64_t{1};
      try {
        (void)parse_mlp_hyper(c, 0);
      } catch (const std::invalid_argument& e) {
        cfg.fail(key, e.what());
      }
    }
  }
  if (cfg.space.find("hidden") && (cfg.space.find("depth") || cfg.space.find("width")))
    cfg.fail("search.space.hidden", "give the hidden layers either as 'hidden' or as 'depth' and 'width', not both");
  const auto& metrics = mlp_metrics();
  if (std::find(metrics.begin(), metrics.end(), cfg.metric) == metrics.end())
    cfg.fail("experiment.metric", "the mlp trainable reports " + search::comma_list(metrics) + "; '" + search::excerpt(cfg.metric) +
                                      "' is not one of them");
  // The data must be there before any rank starts; reading it is the worker's job.
  const std::string dir = cfg.trainable.data_dir.empty() ? default_data_dir() : cfg.trainable.data_dir;
  for (const char* stem : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"}) {
    const std::string path = idx_path(dir, stem);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      cfg.fail(cfg.trainable.data_dir.empty() ? "trainable.kind" : "trainable.data_dir",
               path + ": no such file. " +
                   (cfg.trainable.data_dir.empty()
                        ? "Install Fashion-MNIST with `apt-get install dataset-fashion-mnist`, or set data_dir"
                        : "Put the IDX files of MNIST or Fashion-MNIST there, or remove data_dir to use Debian's "
                          "dataset-fashion-mnist (`apt-get install dataset-fashion-mnist`)"));
  }
}

}  // namespace

DataFile fingerprint_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TrialFailure(path + ": cannot open it to fingerprint it: " + std::strerror(errno));
  DataFile f{path, 0, 0};
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    f.crc32c = io::crc32c(std::as_bytes(std::span(buf.data(), n)), f.crc32c);
    f.bytes += n;
  }
  if (in.bad()) throw TrialFailure(path + ": read error while fingerprinting it");
  return f;
}

std::unique_ptr<Trainable> make_trainable(const io::TrainableSpec& spec) {
  if (spec.kind == "synthetic") return std::make_unique<SyntheticTrainable>(spec);
  if (spec.kind == "command") return std::make_unique<CommandTrainable>(spec);
  if (spec.kind == "mlp") return std::make_unique<MlpTrainable>(spec);
  throw std::invalid_argument("unknown trainable kind '" + spec.kind + "'; valid: synthetic, command, mlp");
}

std::vector<std::string> reported_metrics(const io::TrainableSpec& spec) {
  if (spec.kind == "synthetic") {
    const SyntheticFunction* f = find_synthetic_function(spec.function);
    return f != nullptr ? f->metrics : std::vector<std::string>{};
  }
  if (spec.kind == "mlp") return mlp_metrics();
  return spec.metrics;
}

void validate(io::ExperimentConfig& cfg) {
  if (cfg.trainable.kind == "synthetic") {
    validate_synthetic(cfg);
  } else if (cfg.trainable.kind == "command") {
    validate_command(cfg);
  } else if (cfg.trainable.kind == "mlp") {
    validate_mlp(cfg);
  } else {
    cfg.fail("trainable.kind", "unknown kind '" + cfg.trainable.kind + "'; valid: synthetic, command, mlp");
  }
  // The experiment metric first (the results table's first metric column), no duplicates.
  std::vector<std::string> metrics = {cfg.metric};
  std::unordered_set<std::string> seen = {cfg.metric};
  for (const auto& m : reported_metrics(cfg.trainable)) {
    if (seen.insert(m).second) metrics.push_back(m);
  }
  cfg.trainable.metrics = std::move(metrics);
}

}  // namespace ranktune::train
