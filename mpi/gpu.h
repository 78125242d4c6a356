#pragma once
/// GPU discovery and binding, through the GPU plugin (train/gpu_runtime.h; the versions of
/// CUDA and NCCL are the stack's: experiment/stack.cc). Without CUDA in the build, without an
/// NVIDIA driver on the host, or without a device that answers, everything reports zero
/// devices and callers run in CPU mode; the first call opens the plugin where it can be used.

#include <string>

namespace ranktune::mpi {

/// Visible CUDA devices; 0 when CUDA is not built in or no device answers.
int cuda_device_count();
/// The device's name, "" if unavailable.
std::string cuda_device_name(int device);
/// Makes `device` current for this process. False if that failed.
bool cuda_bind(int device);

}  // namespace ranktune::mpi
