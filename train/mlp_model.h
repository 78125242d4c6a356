#pragma once
/// The MLP's description, shared by the CPU and the GPU engines: layer sizes, activation,
/// the layout of all parameters in one flat float buffer, and their initialization. Pure
/// compute: no I/O, no MPI.
///
/// Parameter layout: for each layer l (input sizes[l], output sizes[l + 1]) the weights W_l
/// as an out x in row-major matrix, then the bias b_l (out values). One flat buffer makes the
/// gradient one allreduce and the checkpoint one array.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "train/rng.h"

namespace ranktune::train {

enum class Activation { Relu, Tanh };

/// "relu" or "tanh". Throws std::invalid_argument naming the valid values.
Activation parse_activation(const std::string& name);
const char* activation_name(Activation a);

/// Hidden layer sizes from text: "256-128", "256,128" or "256x128" (each 1..65536), or ""
/// for none (softmax regression). Throws std::invalid_argument.
std::vector<int> parse_hidden(const std::string& text);

/// The network: sizes = {inputs, hidden..., classes}.
struct MlpShape {
  std::vector<int> sizes;
  Activation activation = Activation::Relu;

  int layers() const { return static_cast<int>(sizes.size()) - 1; }
  int in(int l) const { return sizes[l]; }
  int out(int l) const { return sizes[l + 1]; }
  std::size_t weight_offset(int l) const;
  std::size_t bias_offset(int l) const { return weight_offset(l) + std::size_t(in(l)) * out(l); }
  std::size_t param_count() const { return weight_offset(layers()); }
  /// The widest layer output (sizes of the activation buffers).
  int max_width() const;
  /// "784-256-128-10 relu"
  std::string describe() const;
};

/// PyTorch's nn.Linear default: weights and biases uniform in +-1/sqrt(fan_in), each value a
/// pure function of (seed, its index), so every rank of a gang starts identical.
void init_params(const MlpShape& shape, std::uint64_t seed, std::span<float> params);

/// The dropout multiplier of unit j of hidden layer l, for row i of a batch whose key is
/// `key`: 0 with probability p, else 1 / (1 - p). A pure function of its arguments, so CPU,
/// GPU and the ranks of a gang (which see different rows of one batch) agree.
RANKTUNE_HD std::uint64_t dropout_counter(int layer, std::int64_t row, int unit) {
  return (static_cast<std::uint64_t>(layer) << 44) | (static_cast<std::uint64_t>(row) << 24) |
         static_cast<std::uint64_t>(unit);
}

}  // namespace ranktune::train
