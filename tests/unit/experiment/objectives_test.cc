// Several objectives and constraints from the config to the algorithms (issue 30): the
// [experiment] metric and mode lists and `constraints`, their errors at file:line:key, what the
// trainable reports, the algorithms that take them and those refused, and the rendering.

#include <gtest/gtest.h>

#include <string>

#include "config/config.h"
#include "experiment/experiment.h"
#include "tests/unit/common/expect_text.h"
#include "train/registry.h"

namespace ranktune::experiment {
namespace {

using config::ConfigError;
using config::ExperimentConfig;

// Lines: 1 [experiment], 2 name, 3 metric, 4 mode, 5 `extra`, 6 [search], 7 algorithm, 8
// [search.space], 9-10 the parameters, 11 [scheduler], 12 kind, 13 [trainable], 14-15 the
// synthetic zdt1 trainable, 16-17 [stop] max_t = 9.
std::string zdt(const std::string& metric = "[\"f1\", \"f2\"]", const std::string& mode = "[\"min\", \"min\"]",
                const std::string& extra = "", const std::string& algorithm = "random",
                const std::string& scheduler = "asha") {
  return "[experiment]\nname = \"t\"\nmetric = " + metric + "\nmode = " + mode + "\n" +
         (extra.empty() ? "# -" : extra) + "\n[search]\nalgorithm = \"" + algorithm +
         "\"\n[search.space]\nx1 = { uniform = [0.0, 1.0] }\nx2 = { uniform = [0.0, 1.0] }\n"
         "[scheduler]\nkind = \"" + scheduler + "\"\n[trainable]\nkind = \"synthetic\"\nfunction = \"zdt1\"\n"
         "[stop]\nmax_t = 9\n";
}

// Parsed, validated and its algorithms built, as `ranktune check` does.
ExperimentConfig checked(const std::string& text) {
  ExperimentConfig cfg = config::parse_config(text, "exp.toml");
  train::validate(cfg);
  make_searcher(cfg);
  make_scheduler(cfg);
  return cfg;
}

std::string error_of(const std::string& text) {
  try {
    checked(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Objectives, ListsMakeSeveralObjectivesAndTheFirstIsThePrimaryMetric) {
  const ExperimentConfig cfg = checked(zdt("[\"f2\", \"f1\"]", "[\"min\", \"max\"]"));
  ASSERT_TRUE(cfg.objectives.multi());
  EXPECT_EQ(cfg.objectives.metrics, (std::vector<std::string>{"f2", "f1"}));
  EXPECT_EQ(cfg.objectives.modes, (std::vector<search::Mode>{search::Mode::Min, search::Mode::Max}));
  EXPECT_EQ(cfg.metric, "f2");
  EXPECT_EQ(cfg.mode, search::Mode::Min);
  // The scheduler is told them; the results file gets their columns.
  EXPECT_EQ(config::scheduler_context(cfg).objectives, cfg.objectives);
  EXPECT_EQ(store_schema(cfg).objectives, cfg.objectives.metrics);
}

TEST(Objectives, OneMetricStaysSingleObjective) {
  // A string, or a list of one: today's behaviour, no objectives, no Pareto columns.
  for (const auto& [metric, mode] : {std::pair{"\"f1\"", "\"min\""}, std::pair{"[\"f1\"]", "[\"min\"]"}}) {
    const ExperimentConfig cfg = checked(zdt(metric, mode, "", "tpe", "asha"));
    EXPECT_FALSE(cfg.objectives.multi()) << metric;
    EXPECT_TRUE(cfg.objectives.metrics.empty()) << metric;
    EXPECT_EQ(cfg.metric, "f1");
    EXPECT_TRUE(store_schema(cfg).objectives.empty());
  }
}

TEST(Objectives, ConstraintsAreParsedAndMakeAConstrainedExperimentOfOneMetric) {
  const ExperimentConfig cfg = checked(zdt("\"f1\"", "\"min\"", "constraints = [\"f2 <= 0.5\", \" f2>=-1e3 \"]"));
  ASSERT_TRUE(cfg.objectives.multi());
  ASSERT_EQ(cfg.objectives.constraints.size(), 2u);
  EXPECT_EQ(cfg.objectives.constraints[0], (search::Constraint{"f2", true, 0.5}));
  EXPECT_EQ(cfg.objectives.constraints[1], (search::Constraint{"f2", false, -1e3}));
  // The constrained metric is recorded in /results even when it is no objective.
  EXPECT_NE(std::find(cfg.trainable.metrics.begin(), cfg.trainable.metrics.end(), "f2"), cfg.trainable.metrics.end());
}

TEST(Objectives, BadCombinationsAreErrorsAtTheirKey) {
  struct Case {
    std::string text, where;
  };
  const std::vector<Case> cases = {
      {zdt("[\"f1\", \"f2\"]", "\"min\""), "exp.toml:4: experiment.mode: is one mode, and metric is a list of 2. "
                                           "Give one mode per metric: mode = [\"max\", \"max\"]"},
      {zdt("\"f1\"", "[\"min\", \"min\"]"), "exp.toml:4: experiment.mode: is a list, and metric is one name"},
      {zdt("[\"f1\", \"f2\"]", "[\"min\"]"), "exp.toml:4: experiment.mode: lists 1 modes for 2 metrics"},
      {zdt("[\"f1\", \"f2\"]", "[\"min\", \"least\"]"), "exp.toml:4: experiment.mode: 'least' is not a mode"},
      {zdt("[\"f1\", \"f1\"]", "[\"min\", \"min\"]"), "exp.toml:3: experiment.metric: names 'f1' twice"},
      {zdt("[]", "[]"), "exp.toml:3: experiment.metric: is an empty list"},
      {zdt("[\"f1\", \"\"]", "[\"min\", \"min\"]"), "exp.toml:3: experiment.metric: names an empty metric"},
      {zdt("[\"f1\", 2]", "[\"min\", \"min\"]"), "exp.toml:3: experiment.metric"},
      {zdt("[\"f1\", \"f2\"]", "[\"min\", \"min\"]", "constraints = [\"f2 < 0.5\"]"),
       "exp.toml:5: experiment.constraints: \"f2 < 0.5\" is not a constraint. Write \"METRIC <= BOUND\""},
      {zdt("[\"f1\", \"f2\"]", "[\"min\", \"min\"]", "constraints = [\"f2 <= fast\"]"),
       "exp.toml:5: experiment.constraints: \"f2 <= fast\" is not a constraint"},
      {zdt("[\"f1\", \"f2\"]", "[\"min\", \"min\"]", "constraints = [\"<= 2\"]"),
       "exp.toml:5: experiment.constraints: \"<= 2\" is not a constraint"},
      {zdt("[\"f1\", \"f2\"]", "[\"min\", \"min\"]", "constraints = [\"f2 <= inf\"]"),
       "exp.toml:5: experiment.constraints: \"f2 <= inf\" is not a constraint"},
      {zdt("[\"f1\", \"f2\"]", "[\"min\", \"min\"]", "constraints = [\"f2 <= 1\", \"f2 <= 1.0\"]"),
       "exp.toml:5: experiment.constraints: \"f2 <= 1.0\" is given twice"},
      {zdt("[\"f1\", \"f2\"]", "[\"min\", \"min\"]", "constraints = \"f2 <= 1\""),
       "exp.toml:5: experiment.constraints: expected an array"},
      // What the trainable never reports: named, with what it does report.
      {zdt("[\"f1\", \"f3\"]", "[\"min\", \"min\"]"),
       "exp.toml:3: experiment.metric: the synthetic trainable never reports 'f3' (it reports f1, f2"},
      {zdt("[\"f1\", \"f2\"]", "[\"min\", \"min\"]", "constraints = [\"latency_ms <= 2.0\"]"),
       "exp.toml:5: experiment.constraints: a constraint on a metric that never comes: the synthetic trainable "
       "never reports 'latency_ms'"},
      // Algorithms of one metric: refused at their key, naming those that take several.
      {zdt("[\"f1\", \"f2\"]", "[\"min\", \"min\"]", "", "cmaes"),
       "exp.toml:7: search.algorithm: search algorithm 'cmaes' optimizes one metric, and this experiment has f1 min, "
       "f2 min. With several objectives or constraints use random, grid"},
      {zdt("[\"f1\", \"f2\"]", "[\"min\", \"min\"]", "", "random", "pbt"),
       "exp.toml:12: scheduler.kind: scheduler 'pbt' ranks trials by one metric, and this experiment has f1 min, f2 "
       "min. With several objectives or constraints use fifo, asha"},
      {zdt("[\"f1\", \"f2\"]", "[\"min\", \"min\"]", "", "random", "median_stopping"),
       "exp.toml:12: scheduler.kind: scheduler 'median_stopping' ranks trials by one metric"},
      {zdt("[\"f1\", \"f2\"]", "[\"min\", \"min\"]", "", "random", "pb2"),
       "exp.toml:12: scheduler.kind: scheduler 'pb2' ranks trials by one metric"},
      {zdt("\"f1\"", "\"min\"", "constraints = [\"f2 <= 1\"]", "gp"),
       "exp.toml:7: search.algorithm: search algorithm 'gp' optimizes one metric, and this experiment has f1 min; "
       "f2 <= 1"},
  };
  for (const Case& c : cases) EXPECT_CONTAINS(error_of(c.text), c.where);
}

TEST(Objectives, RepeatIsRefusedWithSeveralObjectives) {
  std::string text = zdt();
  text.replace(text.find("[search.space]"), 0, "repeat = 3\n");
  EXPECT_CONTAINS(error_of(text), "search.repeat: averages one metric over the repeats");
}

TEST(Objectives, ACommandRecordsTheObjectivesItDoesNotList) {
  // A command reports what its program prints: the objectives and constrained metrics are
  // recorded as the config names them (columns of /results), not refused.
  const std::string text =
      "[experiment]\nname = \"t\"\nmetric = [\"acc\", \"params_m\"]\nmode = [\"max\", \"min\"]\n"
      "constraints = [\"latency_ms <= 2\"]\n[search.space]\nx = { uniform = [0.0, 1.0] }\n"
      "[trainable]\nkind = \"command\"\ncommand = [\"true\"]\nmetrics = [\"loss\"]\n";
  const ExperimentConfig cfg = checked(text);
  EXPECT_EQ(cfg.trainable.metrics, (std::vector<std::string>{"acc", "loss", "params_m", "latency_ms"}));
  // No algorithm named: MOTPE, not the numeric space's default (gp, which takes one metric).
  EXPECT_EQ(cfg.algorithm, "tpe");
  EXPECT_CONTAINS(cfg.algorithm_reason, "several objectives or constraints: MOTPE");
}

TEST(Objectives, RenderedConfigParsesToTheSameObjectives) {
  const ExperimentConfig cfg = checked(zdt("[\"f1\", \"f2\"]", "[\"max\", \"min\"]", "constraints = [\"f2 >= 0.25\"]"));
  const std::string rendered = config::render_config(cfg);
  EXPECT_CONTAINS(rendered, "metric = [\"f1\", \"f2\"]\nmode = [\"max\", \"min\"]\nconstraints = [\"f2 >= 0.25\"]\n");
  EXPECT_CONTAINS(rendered, "# objectives: f1 max, f2 min; f2 >= 0.25");
  const ExperimentConfig again = checked(rendered);
  EXPECT_EQ(again.objectives, cfg.objectives);
}

}  // namespace
}  // namespace ranktune::experiment
