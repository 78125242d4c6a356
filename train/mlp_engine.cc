// make_cuda_engine: the CUDA engine from the GPU plugin (train/gpu_runtime.h), or why there
// is none (train/mlp_engine.h). The engines are mlp_cpu.cc and mlp_cuda.cu.
#include "train/mlp_engine.h"

#include "train/gpu_runtime.h"

namespace ranktune::train {

std::unique_ptr<MlpEngine> make_cuda_engine(const MlpShape& shape, OptimizerKind kind,
                                            std::shared_ptr<const ImageSet> images, int device,
                                            std::string& why) {
  const gpu::Api* api = gpu::runtime(&why);
  if (api == nullptr) return nullptr;
  return api->make_mlp_engine(shape, kind, std::move(images), device, why);
}

}  // namespace ranktune::train
