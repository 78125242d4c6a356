// experiment/resume.h: the checks before a resume (check_same_experiment), catching the
// trials up with their result rows (catch_up_with_results), and the point a resumed run
// goes on from (resume_point).

#include "experiment/resume.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "experiment/experiment.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

namespace ranktune::experiment {
using namespace ranktune::config;
namespace {

using search::Trial;
using search::TrialStatus;

Trial trial(search::TrialId id, TrialStatus status, int attempt, std::int64_t iterations) {
  return Trial{.id = id, .status = status, .attempt = attempt, .iterations = iterations};
}

io::ResultRow row(search::TrialId trial, int attempt, std::int64_t iteration, double time = 0) {
  return io::ResultRow{trial, attempt, iteration, time, {}};
}

const std::string kConfig =
    "[experiment]\n"
    "name = \"t\"\n"
    "metric = \"loss\"\n"
    "mode = \"min\"\n"
    "[search.space]\n"
    "x = { uniform = [0.0, 1.0] }\n"
    "[trainable]\n"
    "kind = \"synthetic\"\n";

// The metadata a results file written by `cfg` holds.
io::StoreMeta stored_by(const config::ExperimentConfig& cfg) {
  io::StoreMeta meta;
  meta.config_text = cfg.text;
  for (const auto& s : cfg.overrides) meta.overrides += s + "\n";
  return meta;
}

// The ConfigError message of check_same_experiment, or "" when it accepted.
std::string refusal(const config::ExperimentConfig& cfg, const io::StoreMeta& stored, bool force) {
  try {
    check_same_experiment(cfg, stored, force);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(CatchUpWithResults, StaleTrialRowsCatchUpWithTheirResults) {
  // Trial 1's row says iteration 2 of attempt 0, its results go to 5; trial 2's row is one
  // attempt behind its rows.
  std::vector<Trial> trials = {trial(1, TrialStatus::Running, 0, 2), trial(2, TrialStatus::Running, 0, 7)};
  catch_up_with_results(trials, {row(1, 0, 1), row(1, 0, 2), row(1, 0, 5), row(1, 0, 3), row(2, 0, 7), row(2, 1, 1)});
  EXPECT_EQ(trials[0].attempt, 0);
  EXPECT_EQ(trials[0].iterations, 5);
  // A later attempt supersedes the count, even a lower one.
  EXPECT_EQ(trials[1].attempt, 1);
  EXPECT_EQ(trials[1].iterations, 1);
}

TEST(CatchUpWithResults, LeavesFinishedTrialsOlderAttemptsAndUnknownIdsAlone) {
  std::vector<Trial> trials = {trial(1, TrialStatus::Terminated, 0, 4), trial(2, TrialStatus::Error, 1, 2),
                               trial(3, TrialStatus::Paused, 2, 6)};
  catch_up_with_results(trials, {row(1, 0, 9), row(2, 2, 8), row(3, 1, 10), row(3, 2, 4), row(0, 0, 3),
                                 row(4, 0, 3), row(-1, 0, 3)});
  EXPECT_EQ(trials[0].iterations, 4);
  EXPECT_EQ(trials[0].attempt, 0);
  EXPECT_EQ(trials[1].iterations, 2);
  EXPECT_EQ(trials[1].attempt, 1);
  // Rows of an older attempt, and rows below the recorded count, change nothing.
  EXPECT_EQ(trials[2].attempt, 2);
  EXPECT_EQ(trials[2].iterations, 6);
}

TEST(CheckSameExperiment, AcceptsTheSameConfigAndOverrides) {
  const config::ExperimentConfig cfg = config::parse_config(kConfig, "exp.toml", {"experiment.seed=3"});
  EXPECT_EQ(refusal(cfg, stored_by(cfg), false), "");
  EXPECT_EQ(line_diff(kConfig, kConfig), "");
  // The diff itself keeps its lines (the error message joins them).
  EXPECT_EQ(line_diff("a\nb\nc\n", "a\nB\nc\n"), "  + B\n  - b\n");
}

TEST(CheckSameExperiment, RefusesAnotherConfigWithTheDiffUnlessForced) {
  const config::ExperimentConfig before = config::parse_config(kConfig, "exp.toml");
  std::string changed = kConfig;
  changed.replace(changed.find("[0.0, 1.0]"), 10, "[0.0, 2.0]");
  const config::ExperimentConfig now = config::parse_config(changed, "exp.toml");
  const std::string why = refusal(now, stored_by(before), false);
  EXPECT_NE(why.find("holds an experiment with another config"), std::string::npos) << why;
  EXPECT_NE(why.find("- x = { uniform = [0.0, 1.0] }"), std::string::npos) << why;
  EXPECT_NE(why.find("+ x = { uniform = [0.0, 2.0] }"), std::string::npos) << why;
  EXPECT_NE(why.find("--force"), std::string::npos) << why;
  EXPECT_EQ(why.find("name = \"t\""), std::string::npos) << "unchanged lines are not listed: " << why;
  EXPECT_EQ(refusal(now, stored_by(before), true), "");
}

TEST(CheckSameExperiment, RefusesOtherOverrides) {
  const config::ExperimentConfig before = config::parse_config(kConfig, "exp.toml", {"experiment.seed=3"});
  const config::ExperimentConfig now = config::parse_config(kConfig, "exp.toml", {"experiment.seed=4"});
  const std::string why = refusal(now, stored_by(before), false);
  EXPECT_NE(why.find("- experiment.seed=3"), std::string::npos) << why;
  EXPECT_NE(why.find("+ experiment.seed=4"), std::string::npos) << why;
  EXPECT_EQ(refusal(now, stored_by(before), true), "");
}

// Issue 27 item 17d: --results is turned into an override inside ranktune; the refusal of a
// file of another experiment (and any other error about the path) blamed a
// `--set experiment.results=...` that the user never typed.
TEST(CheckSameExperiment, NamesTheResultsFlagAsTyped) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("ranktune_resume_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string config = (dir / "exp.toml").string();
  std::string text = kConfig;  // with the parameters branin, the synthetic default, needs
  text.replace(text.find("x = "), 1, "x2 = { uniform = [0.0, 1.0] }\nx1");
  std::ofstream(config) << text;
  const std::string results = (dir / "r.h5").string();
  const config::ExperimentConfig before = load_experiment(config, {"experiment.seed=3"}, results);
  const config::ExperimentConfig now = load_experiment(config, {"experiment.seed=4"}, results);
  const std::string why = refusal(now, stored_by(before), false);
  EXPECT_EQ(why.rfind("--results " + results + ": experiment.results: results file", 0), 0u) << why;
  EXPECT_EQ(why.find("--set experiment.results"), std::string::npos) << why;
  EXPECT_EQ(why.find("experiment.results="), std::string::npos) << "the path is no part of the diff: " << why;
  // An error in the path itself names the flag too; a --set names itself as before.
  const std::string long_path = (dir / (std::string(300, 'a') + ".h5")).string();
  try {
    load_experiment(config, {}, long_path);
    ADD_FAILURE() << "a 300-character file name was accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--results " + dir.string(), 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("the results file's name is 303 characters long"), std::string::npos) << e.what();
  }
  try {
    load_experiment(config, {"experiment.results=\"" + long_path + "\""});
    ADD_FAILURE() << "a 300-character file name was accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--set experiment.results=", 0), 0u) << e.what();
  }
  // `check` prints the flag among the overrides as typed.
  EXPECT_NE(config::render_config(now).find("# --results " + results + "\n"), std::string::npos) << config::render_config(now);
  std::filesystem::remove_all(dir);
}

TEST(ResumePoint, CountsFailuresFromErrorEventsAndGoesOnFromTheLatestTime) {
  io::ResultsFile file;
  file.trials = {trial(1, TrialStatus::Running, 0, 1), trial(2, TrialStatus::Error, 1, 3)};
  file.trials[0].start_time = 1.5;
  file.trials[0].end_time = NAN;  // still running: not a time
  file.trials[1].end_time = 8.0;
  file.results = {row(1, 0, 1, 2.0), row(1, 0, 2, 9.5)};
  file.events = {{3.0, 2, 1, search::EventKind::Error, "boom"}, {4.0, 2, 1, search::EventKind::Error, "boom again"}, {4.5, 1, 1, search::EventKind::Warning, "w"},
                 {5.0, 7, 1, search::EventKind::Error, "unknown trial"}};
  const ResumePoint p = resume_point(file);
  EXPECT_DOUBLE_EQ(p.spent, 9.5);
  ASSERT_EQ(p.trials.size(), 2u);
  EXPECT_EQ(p.trials[0].failures, 0);
  EXPECT_EQ(p.trials[1].failures, 2);
  EXPECT_EQ(p.trials[0].iterations, 2);  // caught up with its results
}

// A resumed multi-objective run ranks the trials of its earlier runs by their last results,
// which /trials does not hold whole: each trial's last row of its latest attempt, NaN left out.
TEST(ResumePoint, GivesEachTrialItsLastResult) {
  io::ResultsFile file;
  file.schema.metrics = {"f1", "f2"};
  file.trials = {trial(1, TrialStatus::Terminated, 0, 3), trial(2, TrialStatus::Terminated, 1, 2),
                 trial(3, TrialStatus::Pending, 0, 0)};
  file.results = {{1, 0, 1, 1.0, {5, 5}}, {1, 0, 3, 2.0, {1, NAN}}, {2, 1, 2, 3.0, {2, 7}},
                  {2, 0, 4, 4.0, {9, 9}}};  // an older attempt's row, written after: not the last result
  const ResumePoint p = resume_point(file);
  EXPECT_EQ(p.trials[0].last_metrics, (search::Metrics{{"f1", 1}}));
  EXPECT_EQ(p.trials[1].last_metrics, (search::Metrics{{"f1", 2}, {"f2", 7}}));
  EXPECT_TRUE(p.trials[2].last_metrics.empty());
}

TEST(ResumeCause, NamesACrashAndASlurmRestart) {
  unsetenv("SLURM_RESTART_COUNT");
  EXPECT_EQ(resume_cause({}).find("after a crash"), std::string::npos);
  io::ResumeInfo mended;
  mended.mended = true;
  setenv("SLURM_RESTART_COUNT", "2", 1);
  const std::string cause = resume_cause(mended);
  unsetenv("SLURM_RESTART_COUNT");
  EXPECT_NE(cause.find("after a crash"), std::string::npos) << cause;
  EXPECT_NE(cause.find("; Slurm restart 2"), std::string::npos) << cause;
}

}  // namespace
}  // namespace ranktune::experiment
