#pragma once
/// How long each part of one predicted batch took (Trainable::predict, MlpEngine::predict):
/// a header of its own so that the CUDA engine needs nothing else of the trainable.

namespace ranktune::train {

/// Seconds. Preprocessing: the batch's input made ready for the model (gathered and
/// converted to floats in its input buffer); inference: the forward pass; postprocessing:
/// softmax and argmax to predictions in host memory. On a GPU each part ends with a
/// synchronization, so its time is the device's work, not only the launches.
struct PredictTiming {
  double pre_s = 0;
  double inference_s = 0;
  double post_s = 0;
};

}  // namespace ranktune::train
