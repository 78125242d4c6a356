// SGD with momentum and Adam over flat parameter buffers, the CPU versions
// (train/optimizer.h).
#include "train/optimizer.h"

#include <cmath>
#include <stdexcept>

namespace ranktune::train {

OptimizerKind parse_optimizer(const std::string& name) {
  if (name == "sgd") return OptimizerKind::Sgd;
  if (name == "adam") return OptimizerKind::Adam;
  throw std::invalid_argument("unknown optimizer '" + name + "'; valid: sgd, adam");
}

const char* optimizer_name(OptimizerKind k) { return k == OptimizerKind::Sgd ? "sgd" : "adam"; }

void OptimizerState::reset(OptimizerKind kind, std::size_t n) {
  m.assign(n, 0.0f);
  v.assign(kind == OptimizerKind::Adam ? n : 0, 0.0f);
  t = 0;
}

void optimizer_step(const OptimizerSettings& s, std::span<float> params, std::span<const float> grad,
                    OptimizerState& state) {
  const std::size_t n = params.size();
  float* w = params.data();
  const float* g = grad.data();
  float* m = state.m.data();
  ++state.t;
  if (s.kind == OptimizerKind::Sgd) {
    for (std::size_t i = 0; i < n; ++i) {
      const float gi = g[i] + s.weight_decay * w[i];
      m[i] = s.momentum * m[i] + gi;
      w[i] -= s.lr * m[i];
    }
    return;
  }
  float* v = state.v.data();
  // The bias corrections are folded into the step size once per update, in double so that
  // CPU and GPU (which receives the same two floats) agree.
  const double t = static_cast<double>(state.t);
  const float c1 = static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(s.beta1), t)));
  const float c2 = static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(s.beta2), t)));
  for (std::size_t i = 0; i < n; ++i) {
    const float gi = g[i] + s.weight_decay * w[i];
    m[i] = s.beta1 * m[i] + (1.0f - s.beta1) * gi;
    v[i] = s.beta2 * v[i] + (1.0f - s.beta2) * gi * gi;
    w[i] -= s.lr * (m[i] * c1) / (std::sqrt(v[i] * c2) + s.eps);
  }
}

}  // namespace ranktune::train
