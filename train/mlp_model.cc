// The MLP's shape: activations and hidden layers from their names, the flat parameter
// layout, and the parameters' initialization (train/mlp_model.h).
#include "train/mlp_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "train/rng.h"

namespace ranktune::train {

Activation parse_activation(const std::string& name) {
  if (name == "relu") return Activation::Relu;
  if (name == "tanh") return Activation::Tanh;
  throw std::invalid_argument("unknown activation '" + name + "'; valid: relu, tanh");
}

const char* activation_name(Activation a) { return a == Activation::Relu ? "relu" : "tanh"; }

std::vector<int> parse_hidden(const std::string& text) {
  std::vector<int> sizes;
  std::string item;
  auto flush = [&] {
    if (item.empty()) throw std::invalid_argument("hidden layers '" + text + "': empty size; write e.g. \"256-128\"");
    if (item.size() > 6 || !std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; }))
      throw std::invalid_argument("hidden layers '" + text + "': '" + item + "' is not a layer size; write e.g. \"256-128\"");
    const int n = std::stoi(item);
    if (n < 1 || n > 65536)
      throw std::invalid_argument("hidden layers '" + text + "': size " + item + " is not in 1..65536");
    sizes.push_back(n);
    item.clear();
  };
  if (text.empty()) return sizes;
  for (char c : text) {
    if (c == '-' || c == ',' || c == 'x') flush();
    else if (c != ' ') item += c;
  }
  flush();
  return sizes;
}

std::size_t MlpShape::weight_offset(int l) const {
  std::size_t off = 0;
  for (int i = 0; i < l; ++i) off += std::size_t(in(i)) * out(i) + out(i);
  return off;
}

int MlpShape::max_width() const { return *std::max_element(sizes.begin() + 1, sizes.end()); }

std::string MlpShape::describe() const {
  std::string s;
  for (int n : sizes) {
    if (!s.empty()) s += '-';
    s += std::to_string(n);
  }
  s += ' ';
  s += activation_name(activation);
  return s;
}

void init_params(const MlpShape& shape, std::uint64_t seed, std::span<float> params) {
  if (params.size() != shape.param_count()) throw std::invalid_argument("init_params: buffer has the wrong size");
  const std::uint64_t key = derive_key(seed, 0x1417u);
  for (int l = 0; l < shape.layers(); ++l) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(shape.in(l)));
    const std::size_t begin = shape.weight_offset(l), end = shape.weight_offset(l + 1);
    for (std::size_t i = begin; i < end; ++i) params[i] = bound * (2.0f * unit_float(mix64(key + i)) - 1.0f);
  }
}

}  // namespace ranktune::train
