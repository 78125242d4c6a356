// /evaluations/confusion (io/evaluations.h): created by the first evaluation that records a
// confusion matrix, on a new file or on one whose /evaluations an older evaluation made, and
// read back with its evaluation; files without it read as before.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "io/evaluations.h"
#include "io/store.h"

namespace ranktune::io {
namespace {

namespace fs = std::filesystem;

class ConfusionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ranktune_confusion_test_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "r.h5").string();
    StoreMeta m;
    m.experiment = "confusion";
    m.metric = "acc";
    m.mode = search::Mode::Max;
    m.config_text = "[experiment]\nname = \"confusion\"\n";
    StoreSchema s;
    s.params = {{"x", search::ValueType::Float, 0}};
    s.metrics = {"acc"};
    ResultsWriter w(path_, m, s, {});
    w.flush();
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string path_;
};

Evaluation plain() {
  Evaluation e;
  e.split = "test";
  e.device = "cpu";
  e.trials = 1;
  e.manifest = "{}";
  e.metrics = {{3, 2, "test_accuracy", 0.75}};
  return e;
}

Evaluation with_confusion() {
  Evaluation e = plain();
  for (std::int64_t y = 0; y < 2; ++y)
    for (std::int64_t p = 0; p < 2; ++p) e.confusion.push_back({3, 2, y, p, y == p ? 3 : 1});
  return e;
}

TEST_F(ConfusionTest, CreatedWhenFirstNeededAndReadBackWithItsEvaluation) {
  EXPECT_EQ(append_evaluation(path_, plain()), 1);  // makes /evaluations, without confusion
  EXPECT_EQ(append_evaluation(path_, with_confusion()), 2);
  EXPECT_EQ(append_evaluation(path_, plain()), 3);
  const std::vector<Evaluation> evs = read_evaluations(path_);
  ASSERT_EQ(evs.size(), 3u);
  EXPECT_TRUE(evs[0].confusion.empty());
  EXPECT_TRUE(evs[2].confusion.empty());
  ASSERT_EQ(evs[1].confusion.size(), 4u);
  EXPECT_EQ(evs[1].confusion[1].trial, 3);
  EXPECT_EQ(evs[1].confusion[1].iteration, 2);
  EXPECT_EQ(evs[1].confusion[1].true_label, 0);
  EXPECT_EQ(evs[1].confusion[1].predicted, 1);
  EXPECT_EQ(evs[1].confusion[1].count, 1);
  EXPECT_EQ(evs[1].confusion[3].count, 3);
  // Compacting copies it; the next id counts its rows too.
  compact_results(path_, (dir_ / "c.h5").string());
  EXPECT_EQ(read_evaluations((dir_ / "c.h5").string())[1].confusion.size(), 4u);
  EXPECT_EQ(append_evaluation((dir_ / "c.h5").string(), with_confusion()), 4);
}

TEST_F(ConfusionTest, OnANewFileToo) {
  EXPECT_EQ(append_evaluation(path_, with_confusion()), 1);
  ASSERT_EQ(read_evaluations(path_).size(), 1u);
  EXPECT_EQ(read_evaluations(path_)[0].confusion.size(), 4u);
}

}  // namespace
}  // namespace ranktune::io
