// The environment of a command trainable's program (train/command_env.h).
#include "train/command_env.h"

#include "ranktune/config.h"

#include <filesystem>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>

#include "io/json.h"
#include "sys/process.h"

extern char** environ;

namespace ranktune::train {

std::string python_helper_dir() {
  // Installed layout first (<prefix>/bin/ranktune -> <prefix>/share/ranktune/python), then
  // the source tree this binary was built from.
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = exe.parent_path().parent_path() / "share" / "ranktune" / "python";
    if (std::filesystem::exists(installed / "ranktune" / "__init__.py", ec)) return installed.string();
  }
  const std::filesystem::path source = RANKTUNE_SOURCE_PYTHON_DIR;
  if (std::filesystem::exists(source / "ranktune" / "__init__.py", ec)) return source.string();
  return {};
}

std::map<std::string, std::string> distributed_variables(const DistributedEnv& d, const std::string& device,
                                                         const char* visible) {
  std::map<std::string, std::string> v = {
      {"RANK", std::to_string(d.rank)},
      {"WORLD_SIZE", std::to_string(d.world_size)},
      {"LOCAL_RANK", std::to_string(d.local_rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(d.local_world_size)},
      {"GROUP_RANK", std::to_string(d.node_rank)},  // torchrun's name for the node's rank
      {"NODE_RANK", std::to_string(d.node_rank)},
      {"MASTER_ADDR", d.master_addr},
      {"RANKTUNE_DEVICE", device},
  };
  if (d.master_port > 0) v["MASTER_PORT"] = std::to_string(d.master_port);
  if (device.rfind("cuda:", 0) != 0) return v;
  // "cuda:N" counts in the worker's CUDA_VISIBLE_DEVICES: the program sees only that one.
  std::size_t n = 0;
  try {
    n = std::stoul(device.substr(5));
  } catch (const std::exception&) {
    return v;
  }
  std::string physical = std::to_string(n);
  if (visible != nullptr && *visible != '\0') {
    std::vector<std::string> list;
    std::stringstream in(visible);
    for (std::string item; std::getline(in, item, ',');) list.push_back(item);
    if (n >= list.size()) return v;  // not a device of this list: leave it as it is
    physical = list[n];
  }
  v["CUDA_VISIBLE_DEVICES"] = physical;
  v["RANKTUNE_DEVICE"] = "cuda:0";
  return v;
}

std::map<std::string, std::string> trial_environment(const std::map<std::string, std::string>& extra,
                                                     const search::Config& config, const Context& context) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string_view::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  env.try_emplace("PYTHONUNBUFFERED", "1");
  // `import ranktune` works in any Python trainable without the user setting PYTHONPATH;
  // the user's own entries keep precedence.
  if (const std::string helper = python_helper_dir(); !helper.empty()) {
    auto& path = env["PYTHONPATH"];
    path = path.empty() ? helper : path + ":" + helper;
  }
  for (const auto& [k, v] : extra) env[k] = v;
  env["RANKTUNE_CONFIG"] = io::to_json(config).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  env["RANKTUNE_TRIAL_ID"] = std::to_string(context.trial_id);
  env["RANKTUNE_ATTEMPT"] = std::to_string(context.attempt);
  env["RANKTUNE_REPORT_FD"] = std::to_string(sys::ChildProcess::kReportFd);
  env["RANKTUNE_SEED"] = std::to_string(context.seed);
  env["RANKTUNE_ITERATION"] = std::to_string(context.first_iteration);
  env["RANKTUNE_PROTOCOL"] = std::to_string(kCommandProtocol);
  const auto visible = env.find("CUDA_VISIBLE_DEVICES");
  for (auto& [k, v] : distributed_variables(context.distributed, context.device,
                                            visible == env.end() ? nullptr : visible->second.c_str()))
    env[k] = std::move(v);
  env["RANKTUNE_CONTROL_FD"] = std::to_string(sys::ChildProcess::kControlFd);
  return env;
}

std::vector<std::string> environment_list(const std::map<std::string, std::string>& env) {
  std::vector<std::string> list;
  list.reserve(env.size());
  for (const auto& [k, v] : env) list.push_back(k + "=" + v);
  return list;
}

}  // namespace ranktune::train
