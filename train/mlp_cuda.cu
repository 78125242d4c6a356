// The CUDA engine: cuBLAS for the GEMMs, our kernels for everything else. The images, the
// epoch order, the parameters, the gradient and the optimizer state stay on the device; per
// batch only kernel launches cross the bus, and the loss is accumulated on the device and
// read once per step. The arithmetic mirrors mlp_cpu.cc (same layout, same dropout hash,
// same optimizer formulas), so the two agree up to rounding.

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "train/gpu_plugin.h"
#include "train/mlp_engine.h"
#include "train/rng.h"

namespace ranktune::train {
namespace {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

#define RT_CUDA_CHECK(call)                                                                                  \
  do {                                                                                                       \
    const cudaError_t err_ = (call);                                                                         \
    if (err_ != cudaSuccess)                                                                                 \
      throw CudaError(std::string(#call) + ": " + cudaGetErrorString(err_) + " (" __FILE__ ":" +             \
                      std::to_string(__LINE__) + ")");                                                       \
  } while (0)
#define RT_CUBLAS_CHECK(call)                                                                                \
  do {                                                                                                       \
    const cublasStatus_t st_ = (call);                                                                       \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                                                        \
      throw CudaError(std::string(#call) + ": cuBLAS status " + std::to_string(static_cast<int>(st_)) +      \
                      " (" __FILE__ ":" + std::to_string(__LINE__) + ")");                                   \
  } while (0)

/// A device allocation of n values of T; freed on destruction.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) { resize(n); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), size_(o.size_), capacity_(o.capacity_) {
    o.ptr_ = nullptr;
    o.size_ = o.capacity_ = 0;
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  /// Discards the contents when it grows.
  void resize(std::size_t n) {
    if (n <= capacity_) {
      size_ = n;
      return;
    }
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    RT_CUDA_CHECK(cudaMalloc(&ptr_, n * sizeof(T)));
    capacity_ = size_ = n;
  }
  T* get() const { return ptr_; }
  std::size_t size() const { return size_; }

 private:
  T* ptr_ = nullptr;
  std::size_t size_ = 0, capacity_ = 0;
};

class Stream {
 public:
  Stream() { RT_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class Cublas {
 public:
  explicit Cublas(cudaStream_t stream) {
    RT_CUBLAS_CHECK(cublasCreate(&h_));
    cublasSetStream(h_, stream);
    // Full fp32 (no TF32), so results stay comparable with the CPU's.
    cublasSetMathMode(h_, CUBLAS_DEFAULT_MATH);
  }
  ~Cublas() { cublasDestroy(h_); }
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

constexpr int kThreads = 256;
unsigned blocks(std::size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

// ---------------------------------------------------------------------------- kernels

// The input pipeline: pixel * scale, then rounded to half or bfloat16 (cast 1 or 2; round to
// nearest even, as the CPU engine's round_to_float16 and round_to_bfloat16 do).
__global__ void gather_kernel(const std::uint8_t* images, const std::int32_t* rows, int n, int features, float scale,
                              int cast, float* out) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= std::size_t(n) * features) return;
  const std::size_t r = i / features, c = i % features;
  float x = static_cast<float>(images[std::size_t(rows[r]) * features + c]) * scale;
  if (cast == 1) x = __half2float(__float2half_rn(x));
  else if (cast == 2) x = __bfloat162float(__float2bfloat16_rn(x));
  out[i] = x;
}

__global__ void bias_fill_kernel(float* z, const float* b, int n, int out) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < std::size_t(n) * out) z[i] = b[i % out];
}

// Activation in place; with dropout also writes the dropped copy (the next layer's input).
__global__ void activation_kernel(float* z, float* dropped, int n, int out, int tanh_act, float dropout,
                                  float keep_scale, std::uint64_t key, std::int64_t first_row, int layer) {
  const std::size_t k = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (k >= std::size_t(n) * out) return;
  const float v = tanh_act ? tanhf(z[k]) : fmaxf(z[k], 0.0f);
  z[k] = v;
  if (dropout > 0.0f) {
    const int i = static_cast<int>(k / out), j = static_cast<int>(k % out);
    const float u = unit_float(mix64(key + dropout_counter(layer, first_row + i, j)));
    dropped[k] = u < dropout ? 0.0f : v * keep_scale;
  }
}

// The largest logit of a row and its class (ties to the lowest class, as on the CPU).
__device__ float row_max(const float* z, int classes, int& best) {
  float zmax = z[0];
  best = 0;
  for (int c = 1; c < classes; ++c) {
    if (z[c] > zmax) {
      zmax = z[c];
      best = c;
    }
  }
  return zmax;
}

// One thread per row: softmax, cross-entropy, the gradient (p - onehot) * inv_b, argmax.
__global__ void softmax_xent_kernel(const float* logits, const std::uint8_t* labels, const std::int32_t* rows, int n,
                                    int classes, float inv_b, float* delta, double* loss_acc, double* correct_acc) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float* z = logits + std::size_t(i) * classes;
  const int y = labels[rows[i]];
  int best = 0;
  const float zmax = row_max(z, classes, best);
  float sum = 0.0f;
  for (int c = 0; c < classes; ++c) sum += expf(z[c] - zmax);
  atomicAdd(loss_acc, static_cast<double>(logf(sum) - (z[y] - zmax)));
  if (correct_acc && best == y) atomicAdd(correct_acc, 1.0);
  if (delta) {
    const float inv = 1.0f / sum;
    float* d = delta + std::size_t(i) * classes;
    for (int c = 0; c < classes; ++c) d[c] = (expf(z[c] - zmax) * inv - (c == y ? 1.0f : 0.0f)) * inv_b;
  }
}

// One thread per row: the softmax of its logits in place, and its argmax (ties to the lowest
// class, as on the CPU) into classes[i]: predict()'s postprocessing.
__global__ void softmax_argmax_kernel(float* logits, int n, int classes, std::int32_t* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float* z = logits + std::size_t(i) * classes;
  int best = 0;
  const float zmax = row_max(z, classes, best);
  float sum = 0.0f;
  for (int c = 0; c < classes; ++c) sum += (z[c] = expf(z[c] - zmax));
  const float inv = 1.0f / sum;
  for (int c = 0; c < classes; ++c) z[c] *= inv;
  out[i] = best;
}

// Column sums of delta (n x out): one thread per output unit.
__global__ void bias_grad_kernel(const float* delta, float* gb, int n, int out) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= out) return;
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s += delta[std::size_t(i) * out + j];
  gb[j] = s;
}

__global__ void activation_backward_kernel(float* prev, const float* h, int n, int in, int tanh_act, float dropout,
                                           float keep_scale, std::uint64_t key, std::int64_t first_row, int layer) {
  const std::size_t k = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (k >= std::size_t(n) * in) return;
  float g = prev[k];
  if (dropout > 0.0f) {
    const int i = static_cast<int>(k / in), j = static_cast<int>(k % in);
    const float u = unit_float(mix64(key + dropout_counter(layer, first_row + i, j)));
    g = u < dropout ? 0.0f : g * keep_scale;
  }
  const float v = h[k];
  prev[k] = tanh_act ? g * (1.0f - v * v) : (v > 0.0f ? g : 0.0f);
}

__global__ void sgd_kernel(float* w, const float* g, float* m, std::size_t n, float lr, float momentum, float wd) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float gi = g[i] + wd * w[i];
  m[i] = momentum * m[i] + gi;
  w[i] -= lr * m[i];
}

__global__ void adam_kernel(float* w, const float* g, float* m, float* v, std::size_t n, float lr, float b1, float b2,
                            float eps, float wd, float c1, float c2) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float gi = g[i] + wd * w[i];
  m[i] = b1 * m[i] + (1.0f - b1) * gi;
  v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
  w[i] -= lr * (m[i] * c1) / (sqrtf(v[i] * c2) + eps);
}

// ---------------------------------------------------------------------------- the engine

class CudaEngine : public MlpEngine {
 public:
  CudaEngine(const MlpShape& shape, OptimizerKind kind, const ImageSet& images, int device)
      : shape_(shape), device_(device), features_(images.features()), cublas_(stream_.get()) {
    const std::size_t p = shape_.param_count();
    params_.resize(p);
    grad_.resize(p);
    m_.resize(p);
    v_.resize(kind == OptimizerKind::Adam ? p : 0);
    RT_CUDA_CHECK(cudaMemsetAsync(m_.get(), 0, p * sizeof(float), stream_.get()));
    if (v_.size()) RT_CUDA_CHECK(cudaMemsetAsync(v_.get(), 0, p * sizeof(float), stream_.get()));
    images_.resize(images.pixels.size());
    labels_.resize(images.labels.size());
    RT_CUDA_CHECK(cudaMemcpy(images_.get(), images.pixels.data(), images.pixels.size(), cudaMemcpyHostToDevice));
    RT_CUDA_CHECK(cudaMemcpy(labels_.get(), images.labels.data(), images.labels.size(), cudaMemcpyHostToDevice));
    sums_.resize(3);
    RT_CUDA_CHECK(cudaMemsetAsync(sums_.get(), 0, 3 * sizeof(double), stream_.get()));
    act_.resize(shape_.layers());
    dropped_.resize(shape_.layers());
    RT_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  std::string path() const override { return "cuda:" + std::to_string(device_); }

  void set_order(std::span<const std::int32_t> rows) override {
    order_.resize(rows.size());
    RT_CUDA_CHECK(cudaMemcpyAsync(order_.get(), rows.data(), rows.size_bytes(), cudaMemcpyHostToDevice, stream_.get()));
    RT_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));  // `rows` may be pageable and short-lived
  }

  void set_params(std::span<const float> p) override { upload(params_.get(), p); }
  void get_params(std::span<float> p) override { download(p, params_.get()); }

  void set_optimizer_state(const OptimizerState& s) override {
    if (!s.m.empty()) upload(m_.get(), s.m);
    if (!s.v.empty() && v_.size()) upload(v_.get(), s.v);
    t_ = s.t;
  }
  void get_optimizer_state(OptimizerState& s) override {
    s.m.resize(m_.size());
    download(s.m, m_.get());
    s.v.resize(v_.size());
    if (!s.v.empty()) download(s.v, v_.get());
    s.t = t_;
  }

  void forward_backward(std::int64_t begin, std::int64_t count, std::int64_t first_row, std::int64_t global_batch,
                        float dropout, std::uint64_t key) override {
    const int n = static_cast<int>(count);
    if (n == 0) {
      RT_CUDA_CHECK(cudaMemsetAsync(grad_.get(), 0, grad_.size() * sizeof(float), stream_.get()));
      return;
    }
    const std::int32_t* rows = order_.get() + begin;
    forward(rows, n, dropout, key, first_row);
    const int classes = shape_.sizes.back();
    ensure(n);
    softmax_xent_kernel<<<blocks(n), kThreads, 0, stream_.get()>>>(
        act_.back().get(), labels_.get(), rows, n, classes, 1.0f / static_cast<float>(global_batch), delta_.get(),
        sums_.get(), nullptr);
    backward(n, dropout, key, first_row);
    RT_CUDA_CHECK(cudaGetLastError());
  }

  void broadcast_params(Collective& c) override {
    RT_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    if (c.device_buffers()) {
      c.broadcast(std::span<float>(params_.get(), params_.size()), 0);
      return;
    }
    host_grad_.resize(params_.size());
    download(host_grad_, params_.get());
    c.broadcast(host_grad_, 0);
    upload(params_.get(), host_grad_);
  }

  void allreduce_gradient(Collective& c) override {
    RT_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    if (c.device_buffers()) {
      c.allreduce_sum(std::span<float>(grad_.get(), grad_.size()));
      return;
    }
    host_grad_.resize(grad_.size());
    download(host_grad_, grad_.get());
    c.allreduce_sum(host_grad_);
    upload(grad_.get(), host_grad_);
  }

  void update(const OptimizerSettings& s) override {
    ++t_;
    const std::size_t n = params_.size();
    if (s.kind == OptimizerKind::Sgd) {
      sgd_kernel<<<blocks(n), kThreads, 0, stream_.get()>>>(params_.get(), grad_.get(), m_.get(), n, s.lr, s.momentum,
                                                            s.weight_decay);
    } else {
      const double t = static_cast<double>(t_);
      const float c1 = static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(s.beta1), t)));
      const float c2 = static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(s.beta2), t)));
      adam_kernel<<<blocks(n), kThreads, 0, stream_.get()>>>(params_.get(), grad_.get(), m_.get(), v_.get(), n, s.lr,
                                                             s.beta1, s.beta2, s.eps, s.weight_decay, c1, c2);
    }
    RT_CUDA_CHECK(cudaGetLastError());
  }

  double take_loss_sum() override {
    double loss = 0;
    RT_CUDA_CHECK(cudaMemcpyAsync(&loss, sums_.get(), sizeof(double), cudaMemcpyDeviceToHost, stream_.get()));
    RT_CUDA_CHECK(cudaMemsetAsync(sums_.get(), 0, sizeof(double), stream_.get()));
    RT_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    return loss;
  }

  EvalSums evaluate(std::span<const std::int32_t> rows) override {
    EvalSums out;
    if (rows.empty()) return out;
    eval_rows_.resize(rows.size());
    RT_CUDA_CHECK(cudaMemcpyAsync(eval_rows_.get(), rows.data(), rows.size_bytes(), cudaMemcpyHostToDevice, stream_.get()));
    double* acc = sums_.get() + 1;  // [1], [2]: this call's loss and correct sums
    RT_CUDA_CHECK(cudaMemsetAsync(acc, 0, 2 * sizeof(double), stream_.get()));
    constexpr std::size_t chunk = 4096;
    const int classes = shape_.sizes.back();
    for (std::size_t at = 0; at < rows.size(); at += chunk) {
      const int n = static_cast<int>(std::min(chunk, rows.size() - at));
      const std::int32_t* r = eval_rows_.get() + at;
      forward(r, n, 0.0f, 0, 0);
      softmax_xent_kernel<<<blocks(n), kThreads, 0, stream_.get()>>>(act_.back().get(), labels_.get(), r, n, classes,
                                                                     1.0f, nullptr, acc, acc + 1);
    }
    RT_CUDA_CHECK(cudaGetLastError());
    double h[2];
    RT_CUDA_CHECK(cudaMemcpyAsync(h, acc, sizeof h, cudaMemcpyDeviceToHost, stream_.get()));
    RT_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    out.loss_sum = h[0];
    out.correct = h[1];
    return out;
  }

  PredictTiming predict(std::span<const std::int32_t> rows) override {
    using Clock = std::chrono::steady_clock;
    const auto seconds = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
    PredictTiming t;
    const int n = static_cast<int>(rows.size());
    predicted_.resize(rows.size());
    if (n == 0) return t;
    cudaStream_t s = stream_.get();
    // Each part ends with a synchronization: its time is the device's work, not the launch.
    const auto t0 = Clock::now();
    eval_rows_.resize(rows.size());
    RT_CUDA_CHECK(cudaMemcpyAsync(eval_rows_.get(), rows.data(), rows.size_bytes(), cudaMemcpyHostToDevice, s));
    gather(eval_rows_.get(), n);
    RT_CUDA_CHECK(cudaGetLastError());
    RT_CUDA_CHECK(cudaStreamSynchronize(s));
    const auto t1 = Clock::now();
    layers(n, 0.0f, 0, 0);
    RT_CUDA_CHECK(cudaGetLastError());
    RT_CUDA_CHECK(cudaStreamSynchronize(s));
    const auto t2 = Clock::now();
    predicted_dev_.resize(rows.size());
    softmax_argmax_kernel<<<blocks(n), kThreads, 0, s>>>(act_.back().get(), n, shape_.sizes.back(), predicted_dev_.get());
    RT_CUDA_CHECK(cudaGetLastError());
    RT_CUDA_CHECK(cudaMemcpyAsync(predicted_.data(), predicted_dev_.get(), rows.size_bytes(), cudaMemcpyDeviceToHost, s));
    RT_CUDA_CHECK(cudaStreamSynchronize(s));
    const auto t3 = Clock::now();
    t.pre_s = seconds(t0, t1);
    t.inference_s = seconds(t1, t2);
    t.post_s = seconds(t2, t3);
    return t;
  }

  std::span<const std::int32_t> predictions() const override { return predicted_; }

  void set_input_pipeline(float scale, InputCast cast) override {
    scale_ = scale;
    cast_ = cast;
  }

  void logits(std::span<const std::int32_t> rows, std::span<float> out) override {
    const std::size_t classes = static_cast<std::size_t>(shape_.sizes.back());
    if (out.size() != rows.size() * classes) throw std::invalid_argument("logits(): the output has the wrong size");
    if (rows.empty()) return;
    eval_rows_.resize(rows.size());
    RT_CUDA_CHECK(cudaMemcpyAsync(eval_rows_.get(), rows.data(), rows.size_bytes(), cudaMemcpyHostToDevice, stream_.get()));
    constexpr std::size_t chunk = 4096;
    for (std::size_t at = 0; at < rows.size(); at += chunk) {
      const int n = static_cast<int>(std::min(chunk, rows.size() - at));
      forward(eval_rows_.get() + at, n, 0.0f, 0, 0);
      RT_CUDA_CHECK(cudaMemcpyAsync(out.data() + at * classes, act_.back().get(), std::size_t(n) * classes * sizeof(float),
                                    cudaMemcpyDeviceToHost, stream_.get()));
    }
    RT_CUDA_CHECK(cudaGetLastError());
    RT_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

 private:
  void upload(float* dst, std::span<const float> src) {
    RT_CUDA_CHECK(cudaMemcpyAsync(dst, src.data(), src.size_bytes(), cudaMemcpyHostToDevice, stream_.get()));
    RT_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }
  void download(std::span<float> dst, const float* src) {
    RT_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src, dst.size_bytes(), cudaMemcpyDeviceToHost, stream_.get()));
    RT_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  void ensure(int n) {
    input_.resize(std::size_t(n) * features_);
    delta_.resize(std::size_t(n) * shape_.max_width());
    prev_.resize(std::size_t(n) * shape_.max_width());
    for (int l = 0; l < shape_.layers(); ++l) {
      act_[l].resize(std::size_t(n) * shape_.out(l));
      dropped_[l].resize(std::size_t(n) * shape_.out(l));
    }
  }

  const float* layer_input(int l, bool drop) const {
    if (l == 0) return input_.get();
    return drop ? dropped_[l - 1].get() : act_[l - 1].get();
  }

  void forward(const std::int32_t* rows, int n, float dropout, std::uint64_t key, std::int64_t first_row) {
    gather(rows, n);
    layers(n, dropout, key, first_row);
  }

  // The rows' pixels as floats in the input buffer (device rows), through the input pipeline.
  void gather(const std::int32_t* rows, int n) {
    ensure(n);
    gather_kernel<<<blocks(std::size_t(n) * features_), kThreads, 0, stream_.get()>>>(
        images_.get(), rows, n, features_, scale_, static_cast<int>(cast_), input_.get());
  }

  // The forward pass from the input buffer that gather() filled.
  void layers(int n, float dropout, std::uint64_t key, std::int64_t first_row) {
    cudaStream_t s = stream_.get();
    const bool drop = dropout > 0.0f;
    const float keep_scale = drop ? 1.0f / (1.0f - dropout) : 1.0f;
    const float one = 1.0f;
    const int L = shape_.layers();
    for (int l = 0; l < L; ++l) {
      const int in = shape_.in(l), out = shape_.out(l);
      const float* W = params_.get() + shape_.weight_offset(l);
      const float* b = params_.get() + shape_.bias_offset(l);
      float* z = act_[l].get();
      bias_fill_kernel<<<blocks(std::size_t(n) * out), kThreads, 0, s>>>(z, b, n, out);
      // Row-major Z (n x out) = X W^T + Z is column-major Z^T = W X^T + Z^T.
      RT_CUBLAS_CHECK(cublasSgemm(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &one, W, in,
                                  layer_input(l, drop), in, &one, z, out));
      if (l == L - 1) break;
      activation_kernel<<<blocks(std::size_t(n) * out), kThreads, 0, s>>>(
          z, dropped_[l].get(), n, out, shape_.activation == Activation::Tanh, dropout, keep_scale, key, first_row, l);
    }
  }

  void backward(int n, float dropout, std::uint64_t key, std::int64_t first_row) {
    cudaStream_t s = stream_.get();
    const bool drop = dropout > 0.0f;
    const float keep_scale = drop ? 1.0f / (1.0f - dropout) : 1.0f;
    const float one = 1.0f, zero = 0.0f;
    float* delta = delta_.get();
    float* prev = prev_.get();
    for (int l = shape_.layers() - 1; l >= 0; --l) {
      const int in = shape_.in(l), out = shape_.out(l);
      const float* W = params_.get() + shape_.weight_offset(l);
      float* gW = grad_.get() + shape_.weight_offset(l);
      float* gb = grad_.get() + shape_.bias_offset(l);
      // Row-major dW (out x in) = delta^T X is column-major dW^T = X^T delta.
      RT_CUBLAS_CHECK(cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, &one, layer_input(l, drop), in,
                                  delta, out, &zero, gW, in));
      bias_grad_kernel<<<blocks(out), kThreads, 0, s>>>(delta, gb, n, out);
      if (l == 0) break;
      // Row-major prev (n x in) = delta W is column-major prev^T = W^T delta^T.
      RT_CUBLAS_CHECK(cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, &one, W, in, delta, out, &zero,
                                  prev, in));
      activation_backward_kernel<<<blocks(std::size_t(n) * in), kThreads, 0, s>>>(
          prev, act_[l - 1].get(), n, in, shape_.activation == Activation::Tanh, dropout, keep_scale, key, first_row,
          l - 1);
      std::swap(delta, prev);
    }
  }

  MlpShape shape_;
  int device_;
  int features_;
  Stream stream_;
  Cublas cublas_;
  DeviceBuffer<std::uint8_t> images_, labels_;
  float scale_ = 1.0f / 255.0f;  // the input pipeline (set_input_pipeline)
  InputCast cast_ = InputCast::None;
  DeviceBuffer<std::int32_t> order_, eval_rows_, predicted_dev_;
  DeviceBuffer<float> params_, grad_, m_, v_;
  DeviceBuffer<float> input_, delta_, prev_;
  std::vector<DeviceBuffer<float>> act_, dropped_;
  // [0]: the training loss accumulator; [1], [2]: evaluate()'s sums, kept allocated so that
  // a batch-1 latency measurement times no cudaMalloc.
  DeviceBuffer<double> sums_;
  std::vector<float> host_grad_;
  std::vector<std::int32_t> predicted_;  // predict()'s classes on the host
  std::int64_t t_ = 0;
};

}  // namespace

std::unique_ptr<MlpEngine> gpu::cuda_mlp_engine(const MlpShape& shape, OptimizerKind kind,
                                                std::shared_ptr<const ImageSet> images, int device,
                                                std::string& why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();  // "no device" is sticky; later calls must start clean
    why = std::string("no usable CUDA device (") + cudaGetErrorString(err) + ")";
    return nullptr;
  }
  if (device < 0 || device >= count) {
    why = "CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(count) + " visible)";
    return nullptr;
  }
  try {
    RT_CUDA_CHECK(cudaSetDevice(device));
    return std::make_unique<CudaEngine>(shape, kind, *images, device);
  } catch (const std::exception& e) {
    why = e.what();
    return nullptr;
  }
}

}  // namespace ranktune::train
