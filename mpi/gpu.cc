// CUDA device count, names and binding through the GPU plugin (mpi/gpu.h,
// train/gpu_runtime.h): zero devices where it is not loaded.
#include "mpi/gpu.h"

#include "train/gpu_runtime.h"

namespace ranktune::mpi {

int cuda_device_count() {
  const train::gpu::Api* api = train::gpu::runtime();
  return api != nullptr ? api->device_count() : 0;
}

std::string cuda_device_name(int device) {
  const train::gpu::Api* api = train::gpu::runtime();
  return api != nullptr ? api->device_name(device) : std::string();
}

bool cuda_bind(int device) {
  const train::gpu::Api* api = train::gpu::runtime();
  return api != nullptr && api->bind(device);
}

}  // namespace ranktune::mpi
