#include "mpi/gpu.h"

#include "ranktune/config.h"

#if RANKTUNE_WITH_CUDA
#include <cuda_runtime_api.h>
#endif
#if RANKTUNE_WITH_NCCL
#include <nccl.h>
#endif

namespace ranktune::mpi {

#if RANKTUNE_WITH_CUDA
namespace {
std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }
}  // namespace

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

std::string cuda_versions() {
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  std::string s = "runtime " + version_text(rt);
  if (cudaDriverGetVersion(&drv) == cudaSuccess && drv > 0) s += ", driver " + version_text(drv);
  else s += ", no driver";
  return s;
}
#else
int cuda_device_count() { return 0; }
std::string cuda_device_name(int) { return {}; }
bool cuda_bind(int) { return false; }
std::string cuda_versions() { return "not built"; }
#endif

#if RANKTUNE_WITH_NCCL
std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  // NCCL >= 2.9 encodes X*10000 + Y*100 + Z.
  return std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." +
         std::to_string(v % 100);
}
#else
std::string nccl_version() { return "not built"; }
#endif

}  // namespace ranktune::mpi
