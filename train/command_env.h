#pragma once
/// The environment a command trainable's program starts with (train/command.h lists its
/// variables): the worker's own, the Python helper on PYTHONPATH, `[trainable] env`, the
/// trial's RANKTUNE_* variables, and the torchrun variables that place it in its gang.

#include <map>
#include <string>
#include <vector>

#include "search/types.h"
#include "train/trainable.h"

namespace ranktune::train {

/// The version of the command protocol this ranktune speaks (RANKTUNE_PROTOCOL).
inline constexpr int kCommandProtocol = 2;

/// The variables that place a command's process in its gang: torchrun's RANK, WORLD_SIZE,
/// LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, NODE_RANK, MASTER_ADDR and MASTER_PORT (none
/// when no port was picked), and RANKTUNE_DEVICE. On a GPU ("cuda:N", N counted in the
/// worker's CUDA_VISIBLE_DEVICES, `visible` here, nullptr when unset) CUDA_VISIBLE_DEVICES
/// is narrowed to that one device and RANKTUNE_DEVICE is "cuda:0", so that every process of
/// a gang finds its own GPU as device 0; on the CPU neither is changed. Pure.
std::map<std::string, std::string> distributed_variables(const DistributedEnv& d, const std::string& device,
                                                         const char* visible);

/// The folder holding the `ranktune` Python helper package (installed copy first, then the
/// source tree), or "" if neither exists. Command trainables get it appended to PYTHONPATH.
std::string python_helper_dir();

/// The environment of an attempt's program, but for what CommandTrainable::setup() adds once
/// it has made it (RANKTUNE_MODE and the evaluation settings, RANKTUNE_CHECKPOINT_DIR): the
/// worker's environment; PYTHONUNBUFFERED=1 unless set; python_helper_dir() after the user's
/// PYTHONPATH; `extra` (`[trainable] env`) over all of these; then RANKTUNE_CONFIG (`config`
/// as JSON), RANKTUNE_TRIAL_ID, RANKTUNE_ATTEMPT, RANKTUNE_REPORT_FD, RANKTUNE_SEED,
/// RANKTUNE_ITERATION, RANKTUNE_PROTOCOL, distributed_variables() and RANKTUNE_CONTROL_FD.
std::map<std::string, std::string> trial_environment(const std::map<std::string, std::string>& extra,
                                                     const search::Config& config, const Context& context);

/// "NAME=value" for each variable, as a child process takes its environment.
std::vector<std::string> environment_list(const std::map<std::string, std::string>& env);

}  // namespace ranktune::train
