// io::stored_config (io/store.h): the experiment config a results file holds. Apart from
// store.cc, which needs no config parser (the fuzz target builds the reader alone).

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "io/config.h"
#include "io/store.h"

namespace ranktune::io {

namespace fs = std::filesystem;

ExperimentConfig stored_config(const ResultsFile& file, const std::string& config_path) {
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

}  // namespace ranktune::io
