#pragma once
/// GPU discovery and binding (the versions of CUDA and NCCL are the stack's: experiment/stack.cc). Without CUDA in the build, or without a usable device at run
/// time (cudaGetDeviceCount returns an error on a machine with no GPU), everything reports
/// zero devices and callers run in CPU mode.

#include <string>

namespace ranktune::mpi {

/// Visible CUDA devices; 0 when CUDA is not built in or no device answers.
int cuda_device_count();
/// The device's name, "" if unavailable.
std::string cuda_device_name(int device);
/// Makes `device` current for this process. False if that failed.
bool cuda_bind(int device);

}  // namespace ranktune::mpi
