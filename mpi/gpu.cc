#include "mpi/gpu.h"

#include "ranktune/config.h"

#if RANKTUNE_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace ranktune::mpi {

#if RANKTUNE_WITH_CUDA
int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error so later calls start clean
    return 0;
  }
  return n;
}

std::string cuda_device_name(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return {};
  return prop.name;
}

bool cuda_bind(int device) { return cudaSetDevice(device) == cudaSuccess; }
#else
int cuda_device_count() { return 0; }
std::string cuda_device_name(int) { return {}; }
bool cuda_bind(int) { return false; }
#endif

}  // namespace ranktune::mpi
