#pragma once
/// The MNIST family of image data sets (Fashion-MNIST, MNIST) from a folder of IDX files,
/// and the seeded train/validation split used during a search. The test set is only loaded
/// by load_mnist_test(), which nothing in the search path calls: it is reserved for held-out
/// evaluation.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ranktune::train {

/// Debian's dataset-fashion-mnist puts the four IDX files here.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// The folder used when [trainable] data_dir is not set: $RANKTUNE_DATA_DIR if set (for
/// machines where the Debian package cannot be installed, such as a lent GPU machine), else
/// kFashionMnistDir.
std::string default_data_dir();

/// Labelled 8-bit grey images, row-major, `rows * cols` bytes per image.
struct ImageSet {
  std::int64_t count = 0;
  int rows = 0, cols = 0;
  std::vector<std::uint8_t> pixels;  ///< count * rows * cols
  std::vector<std::uint8_t> labels;  ///< count, each < classes
  int classes = 10;
  int features() const { return rows * cols; }
};

/// Loads `<dir>/train-images-idx3-ubyte[.gz]` and `<dir>/train-labels-idx1-ubyte[.gz]`
/// (the .gz name is tried first). Throws DataError naming the file and how to get it.
ImageSet load_mnist_train(const std::string& dir);
/// Loads the t10k files of `dir`: the held-out test set, for evaluation only.
ImageSet load_mnist_test(const std::string& dir);

/// As load_mnist_train, but shared: a process loads each folder once, so consecutive trials
/// on one worker do not decompress the data again. Thread-safe.
std::shared_ptr<const ImageSet> cached_mnist_train(const std::string& dir);

/// The path of `<dir>/<stem>.gz`, else `<dir>/<stem>` if that exists, else the .gz name (so
/// the error names the file Debian ships).
std::string idx_path(const std::string& dir, const std::string& stem);

/// Row indices of the training images split into training and validation. The split is a
/// seeded shuffle, so a given (count, val_fraction, seed) always gives the same split.
struct TrainValSplit {
  std::vector<std::int32_t> train;  ///< at most max_train rows (0 = no limit)
  std::vector<std::int32_t> val;    ///< round(count * val_fraction) rows, at most max_val (0 = no limit)
};
TrainValSplit split_train_val(std::int64_t count, double val_fraction, std::uint64_t seed,
                              std::int64_t max_train = 0, std::int64_t max_val = 0);

}  // namespace ranktune::train
