// config/stored.h: the experiment config a results file holds, and what a run writes of its
// config into one.

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "config/stored.h"

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
  return parse_config(file.meta.config_text, path, overrides);
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
  return meta;
}

}  // namespace ranktune::config
