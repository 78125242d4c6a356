// IDX files (plain and gzip), the MNIST-family loader with its errors, the real
// Fashion-MNIST from Debian's package, and the seeded train/validation split.

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "train/idx.h"
#include "train/mnist.h"
#include "tests/unit/common/expect_text.h"

namespace ranktune::train {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "ranktune-idx-XXXXXX").string();
    path_ = mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (fs::path(path_) / name).string(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

IdxArray images(std::uint32_t n, std::uint32_t rows, std::uint32_t cols) {
  IdxArray a{{n, rows, cols}, {}};
  for (std::uint32_t i = 0; i < n * rows * cols; ++i) a.data.push_back(static_cast<std::uint8_t>(i * 7));
  return a;
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no DataError)";
}

TEST(Idx, RoundTripsPlainAndGzip) {
  TempDir dir;
  const IdxArray a = images(5, 3, 4);
  for (bool gz : {false, true}) {
    const std::string p = dir / (gz ? "a.gz" : "a");
    write_idx(p, a, gz);
    const IdxArray b = read_idx(p);
    EXPECT_EQ(b.dims, a.dims);
    EXPECT_EQ(b.data, a.data);
  }
  // The gzip file really is compressed: zlib's magic bytes.
  std::ifstream in(dir / "a.gz", std::ios::binary);
  EXPECT_EQ(in.get(), 0x1f);
  EXPECT_EQ(in.get(), 0x8b);
}

TEST(Idx, CorruptFilesNameTheFileAndTheFix) {
  TempDir dir;
  write_idx(dir / "ok.gz", images(50, 10, 10), true);
  // Truncated gzip stream.
  fs::copy_file(dir / "ok.gz", dir / "cut.gz");
  fs::resize_file(dir / "cut.gz", fs::file_size(dir / "cut.gz") / 2);
  const std::string cut = error_of([&] { read_idx(dir / "cut.gz", "HINT"); });
  EXPECT_CONTAINS(cut, dir / "cut.gz");
  EXPECT_CONTAINS(cut, "HINT");
  // Bad magic, unsupported type, trailing bytes, missing file.
  std::ofstream(dir / "magic", std::ios::binary) << "\x01\x02\x08\x01";
  EXPECT_CONTAINS(error_of([&] { read_idx(dir / "magic"); }), "bad magic");
  std::ofstream(dir / "type", std::ios::binary) << std::string("\0\0\x0d\x01\0\0\0\x01xxxx", 12);
  EXPECT_CONTAINS(error_of([&] { read_idx(dir / "type"); }), "0x0d");
  std::ofstream(dir / "long", std::ios::binary) << std::string("\0\0\x08\x01\0\0\0\x02" "abc", 11);
  EXPECT_CONTAINS(error_of([&] { read_idx(dir / "long"); }), "after the 2 values");
  std::ofstream(dir / "short", std::ios::binary) << std::string("\0\0\x08\x01\0\0\0\x09" "abc", 11);
  EXPECT_CONTAINS(error_of([&] { read_idx(dir / "short"); }), "truncated");
  const std::string missing = error_of([&] { read_idx(dir / "nope.gz", "apt-get install x"); });
  EXPECT_CONTAINS(missing, "no such file");
  EXPECT_CONTAINS(missing, "apt-get install x");
}

TEST(Mnist, LoadsAFolderAndChecksItsFiles) {
  TempDir dir;
  write_idx(dir / "train-images-idx3-ubyte.gz", images(6, 2, 3), true);
  write_idx(dir / "train-labels-idx1-ubyte", IdxArray{{6}, {0, 1, 2, 3, 9, 5}}, false);  // plain works too
  const ImageSet s = load_mnist_train(dir.path());
  EXPECT_EQ(s.count, 6);
  EXPECT_EQ(s.features(), 6);
  EXPECT_EQ(s.labels[4], 9);
  EXPECT_EQ(s.pixels, images(6, 2, 3).data);

  // No test files: the error names the t10k file and how to get the data.
  const std::string no_test = error_of([&] { load_mnist_test(dir.path()); });
  EXPECT_CONTAINS(no_test, "t10k-images-idx3-ubyte.gz");
  EXPECT_CONTAINS(no_test, "apt-get install dataset-fashion-mnist");

  write_idx(dir / "train-labels-idx1-ubyte", IdxArray{{5}, {0, 1, 2, 3, 4}}, false);
  EXPECT_CONTAINS(error_of([&] { load_mnist_train(dir.path()); }), "has 5 labels but");
  write_idx(dir / "train-labels-idx1-ubyte", IdxArray{{6}, {0, 1, 2, 3, 10, 5}}, false);
  EXPECT_CONTAINS(error_of([&] { load_mnist_train(dir.path()); }), "label 10 at index 4");
}

TEST(Mnist, DebianFashionMnistIsComplete) {
  const auto train = cached_mnist_train(default_data_dir());
  ASSERT_EQ(train->count, 60000);
  EXPECT_EQ(train->rows, 28);
  EXPECT_EQ(train->cols, 28);
  std::vector<int> per_class(10);
  for (auto l : train->labels) ++per_class[l];
  for (int c = 0; c < 10; ++c) EXPECT_EQ(per_class[c], 6000) << "class " << c;
  EXPECT_EQ(cached_mnist_train(default_data_dir()).get(), train.get()) << "the cache must not reload";
  const ImageSet test = load_mnist_test(default_data_dir());
  EXPECT_EQ(test.count, 10000);
}

TEST(Split, SeededDisjointAndComplete) {
  const TrainValSplit a = split_train_val(1000, 0.2, 7), b = split_train_val(1000, 0.2, 7), c = split_train_val(1000, 0.2, 8);
  EXPECT_EQ(a.val.size(), 200u);
  EXPECT_EQ(a.train.size(), 800u);
  EXPECT_EQ(a.train, b.train);
  EXPECT_EQ(a.val, b.val);
  EXPECT_NE(a.val, c.val);
  std::set<std::int32_t> all(a.train.begin(), a.train.end());
  all.insert(a.val.begin(), a.val.end());
  EXPECT_EQ(all.size(), 1000u);
  EXPECT_EQ(*all.rbegin(), 999);
  const TrainValSplit small = split_train_val(1000, 0.2, 7, 100, 50);
  EXPECT_EQ(small.train.size(), 100u);
  EXPECT_EQ(small.val.size(), 50u);
  EXPECT_TRUE(std::equal(small.val.begin(), small.val.end(), a.val.begin())) << "limits take a prefix";
}

}  // namespace
}  // namespace ranktune::train
