// The command kind's line of trainable_kinds() (train/registry.h): its [trainable] keys,
// read, checked and printed, its traits and its factory. The trainable itself is command.cc.

#include "train/command.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <unordered_set>

#include "search/options.h"
#include "sys/text.h"

namespace ranktune::train {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string>& command_keys() {
  static const std::vector<std::string> keys = {"command",      "workdir",      "env",     "step_timeout_s", "max_log_mb",
                                                "kill_grace_s", "stop_grace_s", "metrics", "checkpoint", "shape_params"};
  return keys;
}

std::shared_ptr<const config::TrainableOptions> read_command(const config::TrainableKeys& keys, config::ExperimentConfig& cfg) {
  auto tr = std::make_shared<CommandOptions>();
  const fs::path config_dir = train::config_dir(cfg);
  keys.read_required("command", tr->command, "[\"python3\", \"train.py\"]");
  if (tr->command.empty() || tr->command.front().empty())
    keys.fail("command", "must start with a program to run. Write e.g. command = [\"python3\", \"train.py\"]");
  // A program named by a relative path with a '/' is next to the config, not wherever
  // ranktune happens to be started.
  if (const fs::path prog = tr->command.front();
      prog.is_relative() && tr->command.front().find('/') != std::string::npos)
    tr->command.front() = (config_dir / prog).lexically_normal().string();
  std::string workdir;
  keys.read("workdir", workdir);
  fs::path wd = (config_dir / workdir).lexically_normal();
  if (!wd.has_filename() && wd.has_relative_path()) wd = wd.parent_path();
  tr->workdir = wd.string();
  keys.read("env", tr->env);
  keys.read_range("step_timeout_s", tr->step_timeout_s, 0.0, search::kMaxSeconds);
  // A log is cut into a head and a tail of whole KiB; a million MiB (1 TiB) is past any
  // sane log and keeps the byte count far from overflow.
  keys.read_min("max_log_mb", tr->max_log_mb, 0.0);
  if (tr->max_log_mb != 0 && !(tr->max_log_mb >= 0.01 && tr->max_log_mb <= 1e6))
    keys.fail("max_log_mb", "must be 0 (no cap) or between 0.01 and 1000000 MiB (got " + config::number_text(tr->max_log_mb) +
                                "). Use e.g. 100");
  // Bounded: the worker waits this long for every stopped trial, and a huge value would
  // keep a graceful stop from ever ending.
  if (keys.read("kill_grace_s", tr->kill_grace_s) && !(tr->kill_grace_s >= 0 && tr->kill_grace_s <= kMaxKillGraceS))
    keys.fail("kill_grace_s", "must be between 0 and " + config::number_text(kMaxKillGraceS) + " seconds (got " +
                                  keys.got("kill_grace_s") +
                                  "): the time a stopped program has between SIGTERM and SIGKILL. Use e.g. 2");
  if (keys.read("stop_grace_s", tr->stop_grace_s) && !(tr->stop_grace_s >= 0 && tr->stop_grace_s <= kMaxKillGraceS))
    keys.fail("stop_grace_s", "must be between 0 and " + config::number_text(kMaxKillGraceS) + " seconds (got " +
                                  keys.got("stop_grace_s") +
                                  "): the time a program asked to stop has to exit by itself before SIGTERM. Use e.g. 30");
  keys.read("checkpoint", tr->checkpoint);
  keys.read("shape_params", tr->shape_params);
  for (const auto& n : tr->shape_params)
    if (!cfg.space.find(n)) {
      std::vector<std::string> names;
      for (const auto& p : cfg.space.params) names.push_back(p.name);
      keys.fail("shape_params", "'" + sys::excerpt(n) + "' is not a parameter of the search space; valid: " + sys::comma_list(names));
    }
  std::vector<std::string> listed;
  keys.read("metrics", listed);
  std::vector<std::string>& metrics = cfg.trainable.metrics;
  metrics = {cfg.metric};
  std::unordered_set<std::string> seen = {cfg.metric};  // a linear scan per name was quadratic
  for (const auto& m : listed) {
    if (m.empty()) keys.fail("metrics", "metric names must not be empty");
    if (seen.insert(m).second) metrics.push_back(m);
  }
  return tr;
}

}  // namespace

void CommandOptions::print(config::TomlWriter& out, const std::vector<std::string>& metrics) const {
  out.strings("command", command);
  out.string("workdir", workdir);
  out.table("env", env);
  out.number("step_timeout_s", step_timeout_s);
  out.number("max_log_mb", max_log_mb);
  out.number("kill_grace_s", kill_grace_s);
  out.number("stop_grace_s", stop_grace_s);
  out.boolean("checkpoint", checkpoint);
  out.strings("shape_params", shape_params);
  out.strings("metrics", metrics);
}

namespace {

// The program can be run and the workdir is a folder.
void check_command(const config::ExperimentConfig& cfg) {
  const CommandOptions& spec = options_of<CommandOptions>(cfg.trainable);
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
  const sys::ResolvedProgram r = sys::resolve_program(program, config_dir, path_env);
  if (r.error != 0) {
    const std::string where = r.path.empty() ? "not found in PATH" : "resolved to " + r.path;
    cfg.fail("trainable.command", "cannot run '" + sys::excerpt(program) + "': " + std::strerror(r.error) + " (" + where +
                                      "). Relative paths with a '/' are relative to the config's folder");
  }
  if (!spec.workdir.empty() && !std::filesystem::is_directory(spec.workdir, ec)) {
    cfg.fail("trainable.workdir", "'" + sys::excerpt(spec.workdir) + "' is not a directory");
  }
}

TrainableTraits command_traits(const config::TrainableSpec& spec) {
  TrainableTraits t;
  t.open_metrics = true;
  t.can_checkpoint = options_of<CommandOptions>(spec).checkpoint;
  t.can_evaluate = t.can_checkpoint;  // `ranktune eval` restores the checkpoint (command_eval.cc)
  if (!t.can_evaluate)
    t.no_evaluation = "ranktune eval restores a script's stored checkpoint and starts it in evaluation mode, and "
                      "this experiment's [trainable] has no checkpoint = true. Set it, save with ranktune.on_save() "
                      "and evaluate with ranktune.on_evaluate() (docs/command_protocol.md, \"Evaluation mode\"), "
                      "and run the search again";
  t.writes_logs = true;
  t.can_gang = true;
  t.distributed_env = true;
  t.metrics = spec.metrics;
  t.shape_params = options_of<CommandOptions>(spec).shape_params;
  return t;
}

std::unique_ptr<Trainable> make_command(const config::TrainableSpec& spec) { return std::make_unique<CommandTrainable>(spec); }

}  // namespace

TrainableKind command_kind() {
  return {"command", "the user's program, one process per trial, reporting JSON lines on fd 3", command_keys,
          read_command, check_command, command_traits, make_command, nullptr, nullptr, command_describe};
}

}  // namespace ranktune::train
