// config/stored.h: the experiment config a results file holds, and what a run writes of its
// config into one.

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "config/stored.h"
#include "search/searcher.h"

namespace ranktune::config {

namespace fs = std::filesystem;

ExperimentConfig stored_config(const io::ResultsFile& file, const std::string& config_path) {
  std::vector<std::string> overrides;
  for (std::size_t at = 0; at < file.meta.overrides.size();) {
    const std::size_t nl = std::min(file.meta.overrides.find('\n', at), file.meta.overrides.size());
    if (nl > at) overrides.push_back(file.meta.overrides.substr(at, nl - at));
    at = nl + 1;
  }
  std::string path = config_path;
  // The config the run started from, if it is still there: the script and the workdir it
  // names relative to itself are found as the run found them.
  std::error_code ec;
  if (path.empty() && !file.meta.config_path.empty() && fs::is_regular_file(file.meta.config_path, ec))
    path = file.meta.config_path;
  if (path.empty()) {
    // The stored text has no file of its own: relative paths in it resolve next to the
    // results file, and messages name the results file. (Not "<file>:/config": its parent
    // would be "<file>:", a folder that does not exist.)
    path = (fs::absolute(file.path).parent_path() / (fs::path(file.path).filename().string() + ":config")).string();
  }
  ExperimentConfig cfg = parse_config(file.meta.config_text, path, overrides);
  adopt_stored_algorithm(cfg, file.meta);
  return cfg;
}

bool adopt_stored_algorithm(ExperimentConfig& cfg, const io::StoreMeta& stored) {
  if (cfg.algorithm_reason.empty() || stored.algorithm.empty() || stored.algorithm == cfg.algorithm) return false;
  const auto& names = search::searcher_names();
  if (std::find(names.begin(), names.end(), stored.algorithm) == names.end())
    cfg.fail("search", "the results file records the search algorithm \"" + stored.algorithm +
                           "\", which this ranktune does not have; name one in [search] algorithm");
  cfg.algorithm = stored.algorithm;
  cfg.algorithm_reason = stored.algorithm + ", the one this experiment began with (the config names none)";
  return true;
}

io::StoreMeta experiment_meta(const ExperimentConfig& cfg, const std::string& command_line) {
  io::StoreMeta meta;
  meta.experiment = cfg.name;
  meta.metric = cfg.metric;
  meta.mode = cfg.mode;
  meta.config_text = cfg.text;
  for (const auto& o : cfg.overrides) meta.overrides += o + "\n";
  meta.command_line = command_line;
  std::error_code ec;
  if (!cfg.path.empty()) meta.config_path = fs::absolute(cfg.path, ec).lexically_normal().string();
  meta.algorithm = cfg.algorithm;
  return meta;
}

}  // namespace ranktune::config
