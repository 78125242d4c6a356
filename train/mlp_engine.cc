// make_cuda_engine in a build without CUDA: it says why there is no GPU engine
// (train/mlp_engine.h). The engines are mlp_cpu.cc and mlp_cuda.cu.
#include "train/mlp_engine.h"

#include "ranktune/config.h"

namespace ranktune::train {

#if !RANKTUNE_WITH_CUDA
std::unique_ptr<MlpEngine> make_cuda_engine(const MlpShape&, OptimizerKind, std::shared_ptr<const ImageSet>, int,
                                            std::string& why) {
  why = "this build has no CUDA (configure with the CUDA toolkit present)";
  return nullptr;
}
#endif

}  // namespace ranktune::train
