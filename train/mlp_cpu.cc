// The CPU engine: row-major activations, OpenBLAS sgemm for the three GEMMs per layer, and
// plain loops for the rest (they are a few percent of the work at the sizes trained here).

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <utility>
#include <vector>

#include "train/mlp_engine.h"
#include "train/rng.h"

namespace ranktune::train {
namespace {

class CpuEngine : public MlpEngine {
 public:
  CpuEngine(const MlpShape& shape, OptimizerKind kind, std::shared_ptr<const ImageSet> images, int threads)
      : shape_(shape), images_(std::move(images)), threads_(threads) {
    params_.resize(shape_.param_count());
    grad_.resize(shape_.param_count());
    state_.reset(kind, shape_.param_count());
    act_.resize(shape_.layers());
    dropped_.resize(shape_.layers());
  }

  std::string path() const override { return "cpu"; }

  void set_order(std::span<const std::int32_t> rows) override { order_.assign(rows.begin(), rows.end()); }
  void set_params(std::span<const float> p) override { std::copy(p.begin(), p.end(), params_.begin()); }
  void get_params(std::span<float> p) override { std::copy(params_.begin(), params_.end(), p.begin()); }
  void set_optimizer_state(const OptimizerState& s) override { state_ = s; }
  void get_optimizer_state(OptimizerState& s) override { s = state_; }

  void forward_backward(std::int64_t begin, std::int64_t count, std::int64_t first_row, std::int64_t global_batch,
                        float dropout, std::uint64_t key) override {
    // The thread count is per process in OpenBLAS; set it before each batch since another
    // trainable in this process may have changed it.
    openblas_set_num_threads(threads_);
    const int n = static_cast<int>(count);
    if (n == 0) {  // a gang member whose shard of a short last batch is empty
      std::fill(grad_.begin(), grad_.end(), 0.0f);
      return;
    }
    gather(std::span<const std::int32_t>(order_).subspan(begin, count));
    const float* logits = forward(n, dropout, key, first_row);
    // delta = (softmax - onehot) / global_batch: the gradient of the batch mean.
    const int classes = shape_.sizes.back();
    delta_.resize(std::size_t(n) * shape_.max_width());
    const float inv_b = 1.0f / static_cast<float>(global_batch);
    double loss = 0;
    for (int i = 0; i < n; ++i) {
      const float* z = logits + std::size_t(i) * classes;
      float* d = delta_.data() + std::size_t(i) * classes;
      const int y = images_->labels[order_[begin + i]];
      loss += softmax_row(z, d, classes, y);
      for (int c = 0; c < classes; ++c) d[c] = (d[c] - (c == y ? 1.0f : 0.0f)) * inv_b;
    }
    loss_sum_ += loss;
    dropout_ = dropout;
    keep_scale_ = dropout > 0 ? 1.0f / (1.0f - dropout) : 1.0f;
    key_ = key;
    first_row_ = first_row;
    backward(n, dropout > 0);
  }

  void broadcast_params(Collective& c) override {
    if (c.device_buffers()) throw CollectiveError("the CPU engine needs a host-memory collective, not " + c.name());
    c.broadcast(params_, 0);
  }

  void allreduce_gradient(Collective& c) override {
    if (c.device_buffers()) throw CollectiveError("the CPU engine needs a host-memory collective, not " + c.name());
    c.allreduce_sum(grad_);
  }

  void update(const OptimizerSettings& s) override { optimizer_step(s, params_, grad_, state_); }

  double take_loss_sum() override { return std::exchange(loss_sum_, 0.0); }

  EvalSums evaluate(std::span<const std::int32_t> rows) override {
    openblas_set_num_threads(threads_);
    EvalSums sums;
    const int classes = shape_.sizes.back();
    std::vector<float> p(classes);
    constexpr std::size_t chunk = 512;
    for (std::size_t at = 0; at < rows.size(); at += chunk) {
      const auto part = rows.subspan(at, std::min(chunk, rows.size() - at));
      const int n = static_cast<int>(part.size());
      gather(part);
      const float* logits = forward(n, 0.0f, 0, 0);
      for (int i = 0; i < n; ++i) {
        const float* z = logits + std::size_t(i) * classes;
        const int y = images_->labels[part[i]];
        sums.loss_sum += softmax_row(z, p.data(), classes, y);
        // Ties go to the lowest class, as on the GPU.
        const int best = static_cast<int>(std::max_element(z, z + classes) - z);
        sums.correct += best == y ? 1 : 0;
      }
    }
    return sums;
  }

  PredictTiming predict(std::span<const std::int32_t> rows) override {
    using Clock = std::chrono::steady_clock;
    const auto seconds = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
    openblas_set_num_threads(threads_);
    const int n = static_cast<int>(rows.size());
    const int classes = shape_.sizes.back();
    const auto t0 = Clock::now();
    gather(rows);
    const auto t1 = Clock::now();
    const float* logits = forward(n, 0.0f, 0, 0);
    const auto t2 = Clock::now();
    probs_.resize(std::size_t(n) * classes);
    predicted_.resize(rows.size());
    for (int i = 0; i < n; ++i) {
      float* p = probs_.data() + std::size_t(i) * classes;
      softmax_row(logits + std::size_t(i) * classes, p, classes, 0);
      // Ties go to the lowest class, as on the GPU.
      predicted_[i] = static_cast<std::int32_t>(std::max_element(p, p + classes) - p);
    }
    const auto t3 = Clock::now();
    return {seconds(t0, t1), seconds(t1, t2), seconds(t2, t3)};
  }

  std::span<const std::int32_t> predictions() const override { return predicted_; }

  void set_input_pipeline(float scale, InputCast cast) override {
    scale_ = scale;
    cast_ = cast;
  }

  void logits(std::span<const std::int32_t> rows, std::span<float> out) override {
    openblas_set_num_threads(threads_);
    const std::size_t classes = static_cast<std::size_t>(shape_.sizes.back());
    if (out.size() != rows.size() * classes) throw std::invalid_argument("logits(): the output has the wrong size");
    // The chunks of evaluate(), so that the logits (and the loss from them) are the same.
    constexpr std::size_t chunk = 512;
    for (std::size_t at = 0; at < rows.size(); at += chunk) {
      const auto part = rows.subspan(at, std::min(chunk, rows.size() - at));
      gather(part);
      const float* z = forward(static_cast<int>(part.size()), 0.0f, 0, 0);
      std::copy(z, z + part.size() * classes, out.begin() + static_cast<std::ptrdiff_t>(at * classes));
    }
  }

 private:
  // Writes softmax(z) into p and returns -log p[y], computed stably from the log-sum-exp.
  static double softmax_row(const float* z, float* p, int classes, int y) {
    const float zmax = *std::max_element(z, z + classes);
    float sum = 0;
    for (int c = 0; c < classes; ++c) {
      p[c] = std::exp(z[c] - zmax);
      sum += p[c];
    }
    const float inv = 1.0f / sum;
    for (int c = 0; c < classes; ++c) p[c] *= inv;
    return static_cast<double>(std::log(sum) - (z[y] - zmax));
  }

  void gather(std::span<const std::int32_t> rows) {
    switch (cast_) {  // one pass over the pixels whatever the pipeline
      case InputCast::None: return gather_as(rows, [](float x) { return x; });
      case InputCast::Float16: return gather_as(rows, [](float x) { return round_to_float16(x); });
      case InputCast::Bfloat16: return gather_as(rows, [](float x) { return round_to_bfloat16(x); });
    }
  }

  template <class Cast>
  void gather_as(std::span<const std::int32_t> rows, Cast cast) {
    const int f = images_->features();
    input_.resize(rows.size() * f);
    const float scale = scale_;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::uint8_t* src = images_->pixels.data() + std::size_t(rows[i]) * f;
      float* dst = input_.data() + i * f;
      for (int j = 0; j < f; ++j) dst[j] = cast(static_cast<float>(src[j]) * scale);
    }
  }

  // The input of layer l: the images, or the previous layer's (dropped-out) activations.
  const float* layer_input(int l, bool dropout) const {
    if (l == 0) return input_.data();
    return dropout ? dropped_[l - 1].data() : act_[l - 1].data();
  }

  const float* forward(int n, float dropout, std::uint64_t key, std::int64_t first_row) {
    const int L = shape_.layers();
    const bool drop = dropout > 0;
    const float keep_scale = drop ? 1.0f / (1.0f - dropout) : 1.0f;
    for (int l = 0; l < L; ++l) {
      const int in = shape_.in(l), out = shape_.out(l);
      const float* W = params_.data() + shape_.weight_offset(l);
      const float* b = params_.data() + shape_.bias_offset(l);
      auto& z = act_[l];
      z.resize(std::size_t(n) * out);
      // Bias first, then Z += X W^T with beta = 1: saves a pass over Z.
      for (int i = 0; i < n; ++i) std::copy(b, b + out, z.data() + std::size_t(i) * out);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, layer_input(l, drop), in, W, in, 1.0f,
                  z.data(), out);
      if (l == L - 1) break;
      if (shape_.activation == Activation::Relu) {
        for (float& v : z) v = v > 0 ? v : 0.0f;
      } else {
        for (float& v : z) v = std::tanh(v);
      }
      if (drop) {
        auto& d = dropped_[l];
        d.resize(z.size());
        for (int i = 0; i < n; ++i) {
          for (int j = 0; j < out; ++j) {
            const std::size_t k = std::size_t(i) * out + j;
            const float u = unit_float(mix64(key + dropout_counter(l, first_row + i, j)));
            d[k] = u < dropout ? 0.0f : z[k] * keep_scale;
          }
        }
      }
    }
    return act_[L - 1].data();
  }

  void backward(int n, bool drop) {
    const int L = shape_.layers();
    float* delta = delta_.data();
    prev_delta_.resize(delta_.size());
    float* prev = prev_delta_.data();
    for (int l = L - 1; l >= 0; --l) {
      const int in = shape_.in(l), out = shape_.out(l);
      const float* W = params_.data() + shape_.weight_offset(l);
      float* gW = grad_.data() + shape_.weight_offset(l);
      float* gb = grad_.data() + shape_.bias_offset(l);
      const float* x = layer_input(l, drop);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, n, 1.0f, delta, out, x, in, 0.0f, gW, in);
      std::fill(gb, gb + out, 0.0f);
      for (int i = 0; i < n; ++i) {
        const float* d = delta + std::size_t(i) * out;
        for (int j = 0; j < out; ++j) gb[j] += d[j];
      }
      if (l == 0) break;
      // delta of layer l-1: (delta W) * dropout mask * activation'(h).
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in, out, 1.0f, delta, out, W, in, 0.0f, prev, in);
      const float* h = act_[l - 1].data();
      const std::size_t m = std::size_t(n) * in;
      if (drop) {
        // The mask is recomputed from its key rather than stored: it is a pure function.
        for (int i = 0; i < n; ++i) {
          for (int j = 0; j < in; ++j) {
            const std::size_t k = std::size_t(i) * in + j;
            const float u = unit_float(mix64(key_ + dropout_counter(l - 1, first_row_ + i, j)));
            prev[k] = u < dropout_ ? 0.0f : prev[k] * keep_scale_;
          }
        }
      }
      if (shape_.activation == Activation::Relu) {
        for (std::size_t k = 0; k < m; ++k) prev[k] = h[k] > 0 ? prev[k] : 0.0f;
      } else {
        for (std::size_t k = 0; k < m; ++k) prev[k] *= 1.0f - h[k] * h[k];
      }
      std::swap(delta, prev);
    }
  }

  MlpShape shape_;
  std::shared_ptr<const ImageSet> images_;
  int threads_;
  std::vector<std::int32_t> order_;
  std::vector<float> params_, grad_;
  OptimizerState state_;
  std::vector<float> input_;
  float scale_ = 1.0f / 255.0f;  // the input pipeline (set_input_pipeline)
  InputCast cast_ = InputCast::None;
  std::vector<std::vector<float>> act_;      // per layer: post-activation (pre-dropout) outputs; logits last
  std::vector<std::vector<float>> dropped_;  // per hidden layer: outputs after dropout
  std::vector<float> delta_, prev_delta_;
  std::vector<float> probs_;             // predict(): the batch's class probabilities
  std::vector<std::int32_t> predicted_;  // predict(): its classes
  double loss_sum_ = 0;
  // The batch being trained, for the dropout masks in backward().
  float dropout_ = 0, keep_scale_ = 1;
  std::uint64_t key_ = 0;
  std::int64_t first_row_ = 0;
};

}  // namespace

std::unique_ptr<MlpEngine> make_cpu_engine(const MlpShape& shape, OptimizerKind kind,
                                           std::shared_ptr<const ImageSet> images, int threads) {
  return std::make_unique<CpuEngine>(shape, kind, std::move(images), threads);
}

}  // namespace ranktune::train
