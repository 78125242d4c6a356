// Evaluation manifests (config/eval_manifest.h): every key read, defaults filled, and each
// bad manifest refused at its file:line:key with what to do.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "config/config.h"
#include "config/eval_manifest.h"
#include "tests/unit/common/expect_text.h"

namespace ranktune::config {
namespace {

namespace fs = std::filesystem;

class ManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ranktune_manifest_test_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& text) {
    const std::string p = (dir_ / "eval.toml").string();
    std::ofstream(p) << text;
    return p;
  }
  // The message of the ConfigError that reading `text` throws ("" when it reads).
  std::string error_of(const std::string& text) {
    try {
      read_eval_manifest(write(text));
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(ManifestTest, ReadsEveryKey) {
  const std::string p = write(R"(version = 1
[data]
split = "test"
dir = "other/data"
[compute]
device = "cpu"
threads = 3
[latency]
batch_sizes = [1, 32]
warmup = 2
repetitions = 5
max_repetitions = 50
budget_s = 0.25
[metrics]
loss = false
top_k = [3, 5]
confusion = true
[[pipeline]]
normalize = true
[[pipeline]]
normalize = false
input_dtype = "bfloat16"
[[pipeline]]
name = "half"
input_dtype = "float16"
)");
  const EvalManifest m = read_eval_manifest(p);
  EXPECT_EQ(m.path, fs::absolute(p).lexically_normal().string());
  EXPECT_EQ(m.version, 1);
  EXPECT_EQ(m.data_dir, (dir_ / "other/data").lexically_normal().string());  // next to the manifest
  EXPECT_EQ(m.device, "cpu");
  EXPECT_EQ(m.threads, 3);
  EXPECT_EQ(m.batch_sizes, (std::vector<std::int64_t>{1, 32}));
  EXPECT_EQ(m.warmup, 2);
  EXPECT_EQ(m.min_batches, 5);
  EXPECT_EQ(m.max_batches, 50);
  EXPECT_DOUBLE_EQ(m.latency_s, 0.25);
  EXPECT_TRUE(m.accuracy);
  EXPECT_FALSE(m.loss);
  EXPECT_EQ(m.top_k, (std::vector<int>{3, 5}));
  EXPECT_TRUE(m.confusion);
  ASSERT_EQ(m.pipelines.size(), 3u);
  // Unnamed pipelines are named after what they change; the first is the reference.
  EXPECT_EQ(m.pipelines[0].name, "reference");
  EXPECT_EQ(m.pipelines[1].name, "raw_bfloat16");
  EXPECT_FALSE(m.pipelines[1].normalize);
  EXPECT_EQ(m.pipelines[1].input_dtype, "bfloat16");
  EXPECT_EQ(m.pipelines[2].name, "half");
  EXPECT_EQ(m.text.substr(0, 11), "version = 1");
}

TEST_F(ManifestTest, DefaultsAreTodaysFlags) {
  const EvalManifest m = read_eval_manifest(write("version = 1\n[pipeline]\ninput_dtype = \"float16\"\n"));
  EXPECT_EQ(m.split, "test");
  EXPECT_EQ(m.data_dir, "");
  EXPECT_EQ(m.device, "auto");
  EXPECT_EQ(m.batch_sizes, (std::vector<std::int64_t>{1, 128}));
  EXPECT_EQ(m.warmup, 10);
  EXPECT_EQ(m.min_batches, 20);
  EXPECT_TRUE(m.accuracy && m.loss && !m.confusion && m.top_k.empty());
  ASSERT_EQ(m.pipelines.size(), 1u);
  EXPECT_EQ(m.pipelines[0].name, "float16");
  // No latency at all.
  EXPECT_TRUE(read_eval_manifest(write("version = 1\n[latency]\nbatch_sizes = []\n")).batch_sizes.empty());
  // The shipped sensitivity manifest reads, with its four pipelines.
  const EvalManifest s = read_eval_manifest(std::string(RANKTUNE_SOURCE_DIR) + "/configs/eval_sensitivity.toml");
  ASSERT_EQ(s.pipelines.size(), 4u);
  EXPECT_EQ(s.pipelines[0], (EvalPipeline{"reference", true, "float32"}));
  EXPECT_EQ(s.pipelines[1], (EvalPipeline{"no_normalization", false, "float32"}));
  EXPECT_EQ(s.pipelines[2], (EvalPipeline{"float16", true, "float16"}));
  EXPECT_EQ(s.pipelines[3], (EvalPipeline{"bfloat16", true, "bfloat16"}));
}

TEST_F(ManifestTest, BadManifestsAreRefusedAtTheirLineAndKey) {
  const std::string f = (dir_ / "eval.toml").string();
  EXPECT_CONTAINS(error_of("[data]\nsplit = \"test\"\n"), "version = 1");
  EXPECT_CONTAINS(error_of("version = 2\n"), f + ":1: version: this build reads manifest version 1 only (got 2)");
  EXPECT_CONTAINS(error_of("version = 1\n[metrics]\ntop_kk = [3]\n"),
                  f + ":3: metrics.top_kk: unknown key. Did you mean 'top_k'?");
  EXPECT_CONTAINS(error_of("version = 1\n[metric]\n"), "unknown section [metric]. Did you mean 'metrics'?");
  EXPECT_CONTAINS(error_of("version = 1\n[[pipeline]]\ninput_dtype = \"fp16\"\n"),
                  f + ":3: pipeline[1].input_dtype: unknown value \"fp16\"");
  EXPECT_CONTAINS(error_of("version = 1\n[data]\nsplit = \"validation\"\ndir = \"x\"\n"),
                  f + ":4: data.dir: applies to split = \"test\" only");
  EXPECT_CONTAINS(error_of("version = 1\n[data]\nsplit = \"train\"\n"), f + ":3: data.split: unknown value \"train\"");
  EXPECT_CONTAINS(error_of("version = 1\n[metrics]\ntop_k = [3, 3]\n"), f + ":3: metrics.top_k: holds 3 twice");
  EXPECT_CONTAINS(error_of("version = 1\n[metrics]\ntop_k = [0]\n"), "metrics.top_k: holds 0, outside 1..1000");
  EXPECT_CONTAINS(error_of("version = 1\n[metrics]\ntop_k = 3\n"), "metrics.top_k: expected an array of integers");
  EXPECT_CONTAINS(error_of("version = 1\n[metrics]\naccuracy = false\nloss = false\n"), "turns every metric off");
  EXPECT_CONTAINS(error_of("version = 1\n[latency]\nbatch_sizes = [1, 0]\n"), "latency.batch_sizes: holds 0");
  EXPECT_CONTAINS(error_of("version = 1\n[latency]\nrepetitions = 50\nmax_repetitions = 10\n"),
                  f + ":4: latency.max_repetitions: max_repetitions (10) must be >= repetitions (50)");
  EXPECT_CONTAINS(error_of("version = 1\n[compute]\ndevice = \"gpu\"\n"), "compute.device: unknown device \"gpu\"");
  EXPECT_CONTAINS(error_of("version = 1\n[[pipeline]]\nname = \"a\"\n[[pipeline]]\nname = \"a\"\ninput_dtype = \"float16\"\n"),
                  "names \"a\" twice (pipelines 1 and 2)");
  EXPECT_CONTAINS(error_of("version = 1\n[[pipeline]]\nname = \"a b\"\n"), "pipeline[1].name: must be 1 to 48");
  EXPECT_CONTAINS(error_of("version = 1\npipeline = 3\n"), "pipeline: expected a table");
  EXPECT_CONTAINS(error_of("version = \n"), "TOML syntax error");
  EXPECT_CONTAINS(error_of(""), "is empty");
  try {
    read_eval_manifest((dir_ / "missing.toml").string());
    FAIL() << "a missing manifest was read";
  } catch (const ConfigError& e) {
    EXPECT_CONTAINS(std::string(e.what()), "no such file");
  }
}

}  // namespace
}  // namespace ranktune::config
