#pragma once
/// The GPU code, loaded only where a GPU can be used. CUDA's runtime, cuBLAS (with its
/// 517 MB cuBLASLt) and NCCL cost every process that links them about a second of loading and
/// static constructors, and 200 MB of memory, before main: paid by every rank of every run,
/// GPU or not (CHANGELOG.md, issue 16: the GPU plugin). So nothing in ranktune links them: the MLP's
/// CUDA engine, the NCCL collective and the CUDA calls of device discovery live in a plugin,
/// libranktune_gpu.so (train/gpu_plugin.cc), built when the CUDA toolkit is found, and opened
/// here on first use, and only on a host with an NVIDIA driver (a host without one has no
/// device the plugin could find).
///
/// Where the plugin is looked for, in order: $RANKTUNE_GPU_PLUGIN; beside the executable;
/// ../lib/ranktune/ from the executable's folder (the installed layout); the build tree it
/// was built in. It is opened under sys::SharedLibrary's trust rules (owned by root or you,
/// not writable by others).

#include <mpi.h>

#include <memory>
#include <string>

#include "train/collective.h"
#include "train/mlp_engine.h"

namespace ranktune::train::gpu {

/// Raised with every change of the table below: a plugin from another build is refused.
inline constexpr int kAbi = 1;
/// The symbol the plugin exports: `const Api* ranktune_gpu_api()`.
inline constexpr const char* kEntry = "ranktune_gpu_api";

/// What the plugin provides. Same compiler and standard library as the executable (one
/// build), so C++ types cross the boundary.
struct Api {
  int abi = 0;
  /// Visible CUDA devices, 0 when none answers.
  int (*device_count)() = nullptr;
  /// The device's name, "" if unavailable.
  std::string (*device_name)(int device) = nullptr;
  /// Makes `device` current for this process.
  bool (*bind)(int device) = nullptr;
  /// "runtime X.Y, driver X.Y" (or ", no driver").
  std::string (*cuda_versions)() = nullptr;
  /// "X.Y.Z" of the NCCL loaded; nullptr when the plugin was built without NCCL.
  std::string (*nccl_version)() = nullptr;
  /// The MLP's CUDA engine (train/mlp_engine.h's make_cuda_engine).
  std::unique_ptr<MlpEngine> (*make_mlp_engine)(const MlpShape& shape, OptimizerKind kind,
                                                std::shared_ptr<const ImageSet> images, int device,
                                                std::string& why) = nullptr;
  /// A collective over NCCL for the members of `gang`, on `device`; throws CollectiveError.
  /// nullptr when the plugin was built without NCCL.
  std::unique_ptr<Collective> (*make_nccl_collective)(MPI_Comm gang, int device) = nullptr;
};

/// The process's plugin, opened on the first call (thread-safe); nullptr when there is none
/// to use, and then `why` (if given) says why: the build has no CUDA, the host no NVIDIA
/// driver, the plugin was not found or was refused. Later calls give the same answer.
const Api* runtime(std::string* why = nullptr);

/// The plugin if an earlier runtime() call opened it; never opens it.
const Api* loaded();

/// Whether this host has an NVIDIA driver (/proc/driver/nvidia, /dev/nvidiactl; /dev/dxg
/// under WSL): without one no CUDA device can answer.
bool driver_present();

/// The first of the places above that holds the plugin, "" when none does.
std::string find_plugin();

/// Opens the plugin at `path` and checks its table. Throws sys::LibraryError. For tests and
/// `runtime()`; the library stays loaded for the process's life.
const Api* open_plugin(const std::string& path);

}  // namespace ranktune::train::gpu
