// The GPU plugin's table (train/gpu_runtime.h): device discovery and binding, the CUDA and
// NCCL versions, the MLP's CUDA engine (mlp_cuda.cu) and the NCCL collective
// (nccl_collective.cc). Built as libranktune_gpu.so with hidden symbols, but for the entry.
#include <cuda_runtime_api.h>

#include "ranktune/config.h"
#include "train/gpu_plugin.h"
#include "train/gpu_runtime.h"

#if RANKTUNE_WITH_NCCL
#include <nccl.h>

#include "train/nccl_collective.h"
#endif

namespace ranktune::train::gpu {
namespace {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error so later calls start clean
    return 0;
  }
  return n;
}

std::string device_name(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return {};
  return prop.name;
}

bool bind(int device) { return cudaSetDevice(device) == cudaSuccess; }

std::string cuda_versions() {
  const auto version_text = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  std::string s = "runtime " + version_text(rt);
  if (cudaDriverGetVersion(&drv) == cudaSuccess && drv > 0) s += ", driver " + version_text(drv);
  else s += ", no driver";
  return s;
}

#if RANKTUNE_WITH_NCCL
std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  // NCCL >= 2.9 encodes X*10000 + Y*100 + Z.
  return std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." + std::to_string(v % 100);
}

std::unique_ptr<Collective> nccl_collective(MPI_Comm gang, int device) {
  return std::make_unique<NcclCollective>(gang, device);
}
#endif

Api make_table() {
  Api api;
  api.abi = kAbi;
  api.device_count = device_count;
  api.device_name = device_name;
  api.bind = bind;
  api.cuda_versions = cuda_versions;
  api.make_mlp_engine = cuda_mlp_engine;
#if RANKTUNE_WITH_NCCL
  api.nccl_version = nccl_version;
  api.make_nccl_collective = nccl_collective;
#endif
  return api;
}

}  // namespace
}  // namespace ranktune::train::gpu

extern "C" __attribute__((visibility("default"))) const ranktune::train::gpu::Api* ranktune_gpu_api() {
  static const ranktune::train::gpu::Api api = ranktune::train::gpu::make_table();
  return &api;
}
