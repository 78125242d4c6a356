// The command trainable in evaluation mode (train/command_eval.cc): the RANKTUNE_MODE and
// RANKTUNE_EVAL_* variables, the restored checkpoint, the latency and evaluation lines read
// into a HeldOutResult, and the refusals and failures, with /bin/sh programs.
#include <sys/stat.h>
#include <sys/wait.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/archive.h"
#include "tests/unit/common/expect_text.h"
#include "train/checkpoint.h"
#include "train/command.h"

namespace ranktune::train {
namespace {

namespace fs = std::filesystem;

// `statement` throws `type` with `text` in its message.
#define EXPECT_THROW_WITH(statement, type, text)        \
  try {                                                 \
    statement;                                          \
    ADD_FAILURE() << "no exception from " #statement;   \
  } catch (const type& e) {                             \
    EXPECT_CONTAINS(e.what(), text);                    \
  }

bool no_children() {
  errno = 0;
  return ::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD;
}

// A latency line as ranktune.time_inference() writes it.
std::string latency(int batch, const std::string& p50 = "0.002") {
  return "echo '{\"ranktune\": \"latency\", \"batch_size\": " + std::to_string(batch) +
         ", \"batches\": 20, \"mean_s\": 0.002, \"p50_s\": " + p50 +
         ", \"p90_s\": 0.003, \"p99_s\": 0.004, \"max_s\": 0.004, \"samples_per_s\": " + std::to_string(batch * 500) +
         "}' >&3\n";
}

const std::string kEvaluation =
    "echo '{\"ranktune\": \"evaluation\", \"split\": \"test\", \"samples\": 300, \"metrics\": {\"test_loss\": 0.5, "
    "\"test_accuracy\": 0.75, \"test_odd\": \"nan\"}, \"files\": [\"test.csv\"], \"device\": \"cuda:0\", "
    "\"threads\": 4}' >&3\n";

class CommandEvalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ranktune_command_eval_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ / "test.csv") << "1,2,0\n";
  }
  void TearDown() override {
    EXPECT_TRUE(no_children()) << "a child process was left behind";
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string script(const std::string& body) {
    const fs::path p = dir_ / "eval.sh";
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    ::chmod(p.c_str(), 0755);
    return p.string();
  }

  /// A checkpointing command in evaluation mode, set up and restored from a checkpoint
  /// holding one file, `state` ("42").
  CommandTrainable& start(const std::string& body, std::vector<std::int64_t> batch_sizes = {1, 128}) {
    CommandOptions o;
    o.command = {script(body)};
    o.checkpoint = true;
    o.kill_grace_s = 0.5;
    trainable_ = std::make_unique<CommandTrainable>(make_spec(o, {"loss"}));
    Context c;
    c.trial_id = 7;
    c.log_dir = (dir_ / "logs").string();
    c.config_dir = dir_.string();
    c.mode = "eval";
    c.eval.device = "cpu";
    c.eval.batch_sizes = std::move(batch_sizes);
    c.eval.warmup = 3;
    c.eval.latency_s = 0.25;
    trainable_->setup({{"lr", 0.5}}, c);
    const fs::path saved = dir_ / "saved";
    fs::create_directory(saved);
    std::ofstream(saved / "state") << "42";
    CheckpointBytes bytes;
    MemoryCheckpointWriter out(bytes);
    io::pack_directory(saved, [&](std::span<const std::byte> b) { out.write(b); });
    MemoryCheckpointReader in(std::span<const std::byte>(bytes.data(), bytes.size()));
    trainable_->restore(in);
    return *trainable_;
  }

  std::string read(const std::string& name) const {
    std::ifstream in(dir_ / name);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }

  fs::path dir_;
  std::unique_ptr<CommandTrainable> trainable_;
};

TEST_F(CommandEvalTest, ReadsTheEvaluationAndLatencyOfAScriptGivenTheEvalSettings) {
  // The latency comes in any order (here 128 first) and is returned in the order asked.
  CommandTrainable& t = start("env | grep '^RANKTUNE_\\(MODE\\|EVAL_\\|DEVICE\\)' | sort > \"$0.env\"\n"
                              "cat \"$RANKTUNE_CHECKPOINT_DIR/state\" > \"$0.state\"\n"
                              "echo '{\"ranktune\": \"hello\", \"protocol\": 2}' >&3\n" +
                              latency(128) + latency(1) + kEvaluation);
  EXPECT_TRUE(t.can_evaluate() && t.times_itself());
  const HeldOutResult r = t.evaluate_held_out();
  EXPECT_EQ(read("eval.sh.env"),
            "RANKTUNE_DEVICE=cpu\nRANKTUNE_EVAL_BATCH_SIZES=1,128\nRANKTUNE_EVAL_LATENCY_S=0.25\n"
            "RANKTUNE_EVAL_MAX_BATCHES=100000\nRANKTUNE_EVAL_MIN_BATCHES=20\nRANKTUNE_EVAL_SPLIT=test\n"
            "RANKTUNE_EVAL_WARMUP=3\nRANKTUNE_MODE=eval\n");
  EXPECT_EQ(read("eval.sh.state"), "42");  // the checkpoint was there before it started
  EXPECT_EQ(r.samples, 300);
  EXPECT_EQ(r.metrics.at("test_loss"), 0.5);
  EXPECT_EQ(r.metrics.at("test_accuracy"), 0.75);
  EXPECT_TRUE(std::isnan(r.metrics.at("test_odd")));
  ASSERT_EQ(r.latency.size(), 2u);
  EXPECT_EQ(r.latency[0].batch_size, 1);
  EXPECT_EQ(r.latency[1].batch_size, 128);
  EXPECT_EQ(r.latency[1].samples_per_s, 64000);
  EXPECT_EQ(r.latency[0].p99_s, 0.004);
  // A relative data file is the working directory's, fingerprinted.
  ASSERT_EQ(r.data.size(), 1u);
  EXPECT_EQ(r.data[0].path, (dir_ / "test.csv").string());
  EXPECT_EQ(r.data[0].bytes, 6u);
  EXPECT_EQ(t.compute_info().path, "cuda:0");
  EXPECT_EQ(t.compute_info().threads, 4);
  EXPECT_CONTAINS(r.timed, "ranktune.time_inference()");
}

TEST_F(CommandEvalTest, ASearchSaysTrainWhateverTheEnvironmentSays) {
  ::setenv("RANKTUNE_MODE", "eval", 1);
  CommandOptions o;
  o.command = {script("echo \"$RANKTUNE_MODE ${RANKTUNE_EVAL_BATCH_SIZES-unset}\" > \"$0.mode\"")};
  CommandTrainable t(make_spec(o, {"loss"}));
  Context c;
  c.log_dir = (dir_ / "logs").string();
  c.config_dir = dir_.string();
  t.setup({}, c);
  EXPECT_TRUE(t.step().done);
  ::unsetenv("RANKTUNE_MODE");
  EXPECT_EQ(read("eval.sh.mode"), "train unset\n");
  EXPECT_FALSE(t.can_evaluate());  // no checkpoint = true: nothing to evaluate
}

TEST_F(CommandEvalTest, AScriptThatTrainsOrEndsWithoutEvaluatingIsRefused) {
  try {
    // As a script without on_evaluate: it reports and waits for an answer that never comes.
    start("echo '{\"loss\": 0.5}' >&3\nread answer <&4\necho trained").evaluate_held_out();
    FAIL() << "a training script was evaluated";
  } catch (const std::invalid_argument& e) {
    EXPECT_CONTAINS(e.what(), "it never called ranktune.on_evaluate() (it reported '{\"loss\": 0.5}' as in training");
    EXPECT_CONTAINS(e.what(), "its output is in " + (dir_ / "logs" / "trial_7_attempt_0.log").string());
  }
  EXPECT_EQ(trainable_->pid(), -1);
  try {
    start("echo 'just printing'").evaluate_held_out();
    FAIL() << "a script that evaluated nothing was evaluated";
  } catch (const std::invalid_argument& e) {
    EXPECT_CONTAINS(e.what(), "it never called ranktune.on_evaluate() (it exited with code 0 without evaluating");
  }
}

TEST_F(CommandEvalTest, LatencyMustBeTheBatchSizesAsked) {
  EXPECT_THROW_WITH(start(kEvaluation).evaluate_held_out(), std::invalid_argument,
                    "it did not call ranktune.time_inference() in its evaluation function, so no latency was "
                    "measured at batch sizes 1,128. Call it there, or pass --batch-sizes 0");
  EXPECT_THROW_WITH(start(latency(1) + kEvaluation).evaluate_held_out(), std::invalid_argument,
                    "it timed batch sizes 1, not the 1,128 asked for");
  // None asked, none timed.
  EXPECT_TRUE(start(kEvaluation, {}).evaluate_held_out().latency.empty());
}

// A latency line with the split and the trace, as time_inference(predict, batches,
// preprocess, postprocess) writes it; `extra` replaces its split and trace.
std::string split_latency(int batch, const std::string& extra =
                                         "\"pre_p50_s\": 0.0005, \"pre_p90_s\": 0.0006, \"pre_p99_s\": 0.0007, "
                                         "\"inference_p50_s\": 0.001, \"inference_p90_s\": 0.002, "
                                         "\"inference_p99_s\": 0.003, \"post_p50_s\": null, \"post_p90_s\": null, "
                                         "\"post_p99_s\": null, \"trace\": [[0, 0.0, 0.002, 0.0005, 0.0015, null], "
                                         "[19, 0.05, 0.004, 0.0007, 0.003, null]]") {
  return "echo '{\"ranktune\": \"latency\", \"batch_size\": " + std::to_string(batch) +
         ", \"batches\": 20, \"mean_s\": 0.002, \"p50_s\": 0.002, \"p90_s\": 0.003, \"p99_s\": 0.004, \"max_s\": "
         "0.004, \"samples_per_s\": " + std::to_string(batch * 500) + ", " + extra + "}' >&3\n";
}

TEST_F(CommandEvalTest, TheSplitAndTraceOfAScriptAreRead) {
  const HeldOutResult r = start(split_latency(1) + latency(128) + kEvaluation).evaluate_held_out();
  ASSERT_EQ(r.latency.size(), 2u);
  const MeasuredLatency& l = r.latency[0];
  EXPECT_EQ(l.parts_s[0], 0.0005);
  EXPECT_EQ(l.parts_s[2], 0.0007);
  EXPECT_EQ(l.parts_s[5], 0.003);
  EXPECT_TRUE(std::isnan(l.parts_s[6]) && std::isnan(l.parts_s[8]));  // null: postprocessing not measured
  ASSERT_EQ(l.trace.size(), 2u);
  EXPECT_EQ(l.trace[1][0], 19);
  EXPECT_EQ(l.trace[1][4], 0.003);
  EXPECT_TRUE(std::isnan(l.trace[1][5]));
  // A line of an older helper: no split, no trace (not measured), and no error.
  for (const double p : r.latency[1].parts_s) EXPECT_TRUE(std::isnan(p));
  EXPECT_TRUE(r.latency[1].trace.empty());
  EXPECT_CONTAINS(r.timed, "preprocess(batch) if given");

  const auto bad = [&](const std::string& extra, const std::string& error) {
    SCOPED_TRACE(extra);
    EXPECT_THROW_WITH(start(split_latency(1, extra) + latency(128) + kEvaluation).evaluate_held_out(), TrialFailure,
                      "malformed latency line 1: " + error);
  };
  bad("\"pre_p50_s\": 0.1, \"pre_p90_s\": null, \"pre_p99_s\": 0.2",
      "\"pre_p50_s\", \"pre_p90_s\" and \"pre_p99_s\" must be all numbers or all null");
  bad("\"post_p50_s\": 0.3, \"post_p90_s\": 0.2, \"post_p99_s\": 0.4", "the percentiles of post are out of order");
  bad("\"inference_p50_s\": -1", "\"inference_p50_s\" is missing, negative or not a finite number");
  bad("\"trace\": {}", "\"trace\" is not an array");
  bad("\"trace\": [[20, 0, 0.1, null, 0.1, null]]", "a \"trace\" entry is not [batch, start_s, total_s, pre_s, "
                                                   "inference_s, post_s] with batch in 0..19: [20,0,0.1,null,0.1,null]");
  bad("\"trace\": [[1, 0, null, null, 0.1, null]]", "a \"trace\" entry has a time that is not a finite number >= 0: ");
  bad("\"trace\": [[1, 0, 0.1, -0.5, 0.1, null]]", "a \"trace\" entry has a time that is not a finite number >= 0 or null");
}

TEST_F(CommandEvalTest, MalformedLinesAndFailuresFailTheEvaluation) {
  EXPECT_THROW_WITH(start(latency(1) + latency(1) + latency(128) + kEvaluation).evaluate_held_out(), TrialFailure,
                    "malformed latency line 2: batch size 1 was timed twice");
  EXPECT_THROW_WITH(start(latency(1, "0.01") + kEvaluation).evaluate_held_out(), TrialFailure,
                    "malformed latency line 1: its percentiles are out of order");
  EXPECT_THROW_WITH(start("echo '{\"ranktune\": \"evaluation\", \"metrics\": {\"a\": 1}}' >&3").evaluate_held_out(),
                    TrialFailure, "malformed evaluation line 1: \"samples\" is missing");
  EXPECT_THROW_WITH(start("echo 'loss 0.5' >&3").evaluate_held_out(), TrialFailure,
                    "malformed line 1: not a JSON object: 'loss 0.5'");
  try {
    start(latency(1) + latency(128) + "echo 'ValueError: no test set' >&2\nexit 3").evaluate_held_out();
    FAIL() << "a failing evaluation passed";
  } catch (const TrialFailure& e) {
    EXPECT_CONTAINS(e.what(), "exited with code 3: ValueError: no test set; its output is in ");
    EXPECT_CONTAINS(e.log_tail(), "ValueError: no test set");
  }
}

}  // namespace
}  // namespace ranktune::train
