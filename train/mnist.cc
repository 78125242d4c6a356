// The MNIST family from IDX files, with how to get them when missing, the default data
// folder, the cached training set and the seeded train/validation split (train/mnist.h).
#include "train/mnist.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include "train/idx.h"
#include "train/rng.h"

namespace ranktune::train {
namespace {

std::string how_to_get(const std::string& dir) {
  std::string hint = "Install Fashion-MNIST with `apt-get install dataset-fashion-mnist` (files in " +
                     std::string(kFashionMnistDir) + ")";
  if (dir != kFashionMnistDir)
    hint += ", or put train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and "
            "t10k-labels-idx1-ubyte.gz (MNIST or Fashion-MNIST) in " + dir + " ([trainable] data_dir)";
  return hint;
}

ImageSet load_pair(const std::string& dir, const std::string& prefix) {
  const std::string hint = how_to_get(dir);
  const std::string images_path = idx_path(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = idx_path(dir, prefix + "-labels-idx1-ubyte");
  IdxArray images = read_idx(images_path, hint);
  IdxArray labels = read_idx(labels_path, hint);
  if (images.dims.size() != 3 || images.dims[1] == 0 || images.dims[2] == 0)
    throw DataError(images_path + ": expected images of shape N x rows x cols. " + hint);
  if (labels.dims.size() != 1)
    throw DataError(labels_path + ": expected a 1-dimensional label file. " + hint);
  if (labels.dims[0] != images.dims[0])
    throw DataError(labels_path + ": has " + std::to_string(labels.dims[0]) + " labels but " + images_path + " has " +
                    std::to_string(images.dims[0]) + " images. " + hint);
  ImageSet s;
  s.count = images.dims[0];
  s.rows = static_cast<int>(images.dims[1]);
  s.cols = static_cast<int>(images.dims[2]);
  s.pixels = std::move(images.data);
  s.labels = std::move(labels.data);
  const auto bad = std::find_if(s.labels.begin(), s.labels.end(), [&](std::uint8_t l) { return l >= s.classes; });
  if (bad != s.labels.end())
    throw DataError(labels_path + ": label " + std::to_string(*bad) + " at index " + std::to_string(bad - s.labels.begin()) +
                    " is not in 0..9 (corrupt file). " + hint);
  return s;
}

}  // namespace

std::string default_data_dir() {
  const char* env = std::getenv("RANKTUNE_DATA_DIR");
  return env != nullptr && *env != '\0' ? env : kFashionMnistDir;
}

std::string idx_path(const std::string& dir, const std::string& stem) {
  const std::filesystem::path gz = std::filesystem::path(dir) / (stem + ".gz");
  const std::filesystem::path plain = std::filesystem::path(dir) / stem;
  std::error_code ec;
  if (!std::filesystem::exists(gz, ec) && std::filesystem::exists(plain, ec)) return plain.string();
  return gz.string();
}

ImageSet load_mnist_train(const std::string& dir) { return load_pair(dir, "train"); }
ImageSet load_mnist_test(const std::string& dir) { return load_pair(dir, "t10k"); }

std::shared_ptr<const ImageSet> cached_mnist_train(const std::string& dir) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<const ImageSet>> cache;
  // Held while loading, so two threads asking for one folder decompress it once.
  std::lock_guard lock(mutex);
  if (auto hit = cache[dir].lock()) return hit;
  // The cache keeps the most recent folder alive between trials; older ones go when unused.
  static std::shared_ptr<const ImageSet> last;
  last = std::make_shared<const ImageSet>(load_mnist_train(dir));
  cache[dir] = last;
  return last;
}

TrainValSplit split_train_val(std::int64_t count, double val_fraction, std::uint64_t seed, std::int64_t max_train,
                              std::int64_t max_val) {
  std::vector<std::int32_t> order(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) order[i] = static_cast<std::int32_t>(i);
  CounterStream rng(derive_key(seed, 0x5e1172u));
  for (std::int64_t i = count - 1; i > 0; --i) std::swap(order[i], order[below(rng.next(), i + 1)]);
  const auto n_val = static_cast<std::int64_t>(std::llround(static_cast<double>(count) * val_fraction));
  TrainValSplit s;
  s.val.assign(order.begin(), order.begin() + n_val);
  s.train.assign(order.begin() + n_val, order.end());
  if (max_val > 0 && static_cast<std::int64_t>(s.val.size()) > max_val) s.val.resize(max_val);
  if (max_train > 0 && static_cast<std::int64_t>(s.train.size()) > max_train) s.train.resize(max_train);
  return s;
}

}  // namespace ranktune::train
