#pragma once
/// Inside the GPU plugin only (libranktune_gpu.so, train/gpu_plugin.cc): the functions its
/// table points at, from the files compiled into it. Nothing outside the plugin includes
/// this; the rest of ranktune reaches them through train/gpu_runtime.h.

#include <memory>
#include <string>

#include "train/mlp_engine.h"

namespace ranktune::train::gpu {

/// The MLP's CUDA engine on `device`, or nullptr with `why` (train/mlp_cuda.cu).
std::unique_ptr<MlpEngine> cuda_mlp_engine(const MlpShape& shape, OptimizerKind kind,
                                           std::shared_ptr<const ImageSet> images, int device,
                                           std::string& why);

}  // namespace ranktune::train::gpu
