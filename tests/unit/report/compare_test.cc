// `ranktune compare` on hand-built evaluations (report/compare.h): FILE@ID, the choice of
// an evaluation, matching by config and checkpoint CRC, ratios and differences, the
// differing stack fields and the per-run rule, errors, and hostile strings in every format.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report/compare.h"
#include "tests/unit/common/expect_text.h"

namespace ranktune::report {
namespace {

using nlohmann::json;

struct Model {
  search::TrialId trial;
  std::string hidden;  // the config's one hyperparameter
  std::string crc;
  double accuracy;
  double p50_ms;       // batch 1; the other latency figures follow from it
};

// An evaluation as `ranktune eval` records it: a run row, its metric and latency rows, and a
// manifest with the stack and each trial's entry (eval/evaluator.cc's layout).
io::Evaluation evaluation(std::int64_t id, const std::vector<Model>& models, int threads, json stack = {}) {
  io::Evaluation ev;
  ev.id = id;
  ev.created = "2026-01-0" + std::to_string(id) + "T00:00:00Z";
  ev.split = "test";
  ev.device = "cpu";
  ev.threads = threads;
  if (stack.is_null()) stack = {{"cpu_model", "Xeon"}, {"driver_host", "n1"}, {"hdf5", "1.14.0"}};
  json manifest = {{"command_line", "ranktune eval m.h5 --threads " + std::to_string(threads)},
                   {"stack", stack},
                   {"evaluations", json::array()}};
  for (const Model& m : models) {
    manifest["evaluations"].push_back(
        {{"results", "/x/m.h5"}, {"trial", m.trial}, {"leaderboard_rank", 1}, {"best", 0.5},
         {"config", {{"hidden", m.hidden}, {"lr", 0.01}}},
         {"checkpoint", {{"iteration", 4}, {"attempt", 0}, {"crc32c", m.crc}}},
         {"compute", {{"device_requested", "cpu"}, {"path", "cpu"}, {"threads", threads}}},
         {"latency", {{"batch_sizes", {1}}, {"warmup", 10}}}});
    ev.metrics.push_back({m.trial, 4, "test_accuracy", m.accuracy});
    ev.latency.push_back({m.trial, 4, 1, 20, m.p50_ms * 1.1, m.p50_ms, m.p50_ms * 1.5, m.p50_ms * 2, m.p50_ms * 3,
                          1000 / (m.p50_ms * 1.1)});
  }
  ev.trials = static_cast<std::int64_t>(models.size());
  ev.manifest = manifest.dump();
  return ev;
}

TEST(CompareInputs, FileAtIdSplitsOnlyOnATrailingNumber) {
  EXPECT_EQ(parse_input_spec("m.h5@2").path, "m.h5");
  EXPECT_EQ(parse_input_spec("m.h5@2").id, 2);
  EXPECT_EQ(parse_input_spec("runs/a@b/m.h5@17").path, "runs/a@b/m.h5");
  EXPECT_EQ(parse_input_spec("runs/a@b/m.h5@17").id, 17);
  for (const char* whole : {"m.h5", "a@b/m.h5", "m.h5@", "@3", "m.h5@2x"}) {
    EXPECT_EQ(parse_input_spec(whole).path, whole);
    EXPECT_FALSE(parse_input_spec(whole).id) << whole;
  }
}

TEST(CompareInputs, PicksTheNewestOrTheNamedEvaluation) {
  const std::vector<io::Evaluation> evs = {evaluation(1, {}, 1), evaluation(3, {}, 2), evaluation(2, {}, 1)};
  EXPECT_EQ(pick_evaluation("m.h5", evs, std::nullopt).id, 3);
  EXPECT_EQ(pick_evaluation("m.h5@2", evs, 2).id, 2);
  try {
    pick_evaluation("m.h5@9", evs, 9);
    FAIL() << "no evaluation 9";
  } catch (const std::invalid_argument& e) {
    EXPECT_CONTAINS(e.what(), "m.h5@9: no evaluation 9; it has evaluations 1, 3, 2");
  }
  try {
    pick_evaluation("none.h5", {}, std::nullopt);
    FAIL() << "nothing recorded";
  } catch (const std::invalid_argument& e) {
    EXPECT_CONTAINS(e.what(), "none.h5: no evaluation is recorded in it");
    EXPECT_CONTAINS(e.what(), "run `ranktune eval none.h5` first");
  }
}

TEST(Compare, MatchesByConfigAndCheckpointAndListsTheRest) {
  // Trial 2 of A is trial 7 of B (same config, same checkpoint); trial 1 of A and trial 8 of
  // B have the same config but different checkpoints: two models, each in one input.
  const Comparison c = compare_evaluations(
      {{"A.h5", evaluation(1, {{1, "64", "aaaaaaaa", 0.8, 1.0}, {2, "128", "bbbbbbbb", 0.9, 2.0}}, 1)},
       {"B.h5", evaluation(5, {{8, "64", "cccccccc", 0.8, 1.0}, {7, "128", "bbbbbbbb", 0.85, 1.0}}, 1)}});
  ASSERT_EQ(c.matched.size(), 1u);
  EXPECT_EQ(c.matched[0].crc32c, "bbbbbbbb");
  ASSERT_EQ(c.matched[0].results.size(), 2u);
  EXPECT_EQ(c.matched[0].results[0].trial, 2);
  EXPECT_EQ(c.matched[0].results[1].trial, 7);
  EXPECT_EQ(c.matched[0].results[1].input, 1u);
  ASSERT_EQ(c.unmatched.size(), 2u);
  EXPECT_EQ(c.unmatched[0].crc32c, "aaaaaaaa");
  EXPECT_EQ(c.unmatched[0].results.at(0).input, 0u);
  EXPECT_EQ(c.unmatched[1].crc32c, "cccccccc");
  EXPECT_EQ(c.unmatched[1].results.at(0).input, 1u);
  const std::string table = render_comparison(c, Format::Table);
  EXPECT_CONTAINS(table, "models: 1 matched by trial config and checkpoint CRC-32C, 2 unmatched");
  EXPECT_CONTAINS(table, "unmatched  aaaaaaaa");
}

TEST(Compare, EqualModelsPairInOrder) {
  // Two trials of one config that saved byte-identical checkpoints: both are matched.
  const Comparison c = compare_evaluations({{"A", evaluation(1, {{1, "64", "aa", 0.8, 1}, {2, "64", "aa", 0.8, 1}}, 1)},
                                            {"B", evaluation(2, {{1, "64", "aa", 0.8, 1}, {2, "64", "aa", 0.8, 1}}, 2)}});
  ASSERT_EQ(c.matched.size(), 2u);
  EXPECT_TRUE(c.unmatched.empty());
  EXPECT_EQ(c.matched[0].results[1].trial, 1);
  EXPECT_EQ(c.matched[1].results[1].trial, 2);
}

TEST(Compare, RatiosAndDifferencesAgainstTheBaseline) {
  const Comparison c = compare_evaluations({{"m.h5@1", evaluation(1, {{3, "64", "aa", 0.80, 2.0}}, 1)},
                                            {"m.h5@2", evaluation(2, {{3, "64", "aa", 0.75, 1.0}}, 2)},
                                            {"m.h5@3", evaluation(3, {{3, "64", "aa", 0.80, 4.0}}, 4)}});
  const json d = json::parse(render_comparison(c, Format::Json));
  const json& m = d["models"][0];
  EXPECT_EQ(m["metrics"]["test_accuracy"]["values"], json({0.80, 0.75, 0.80}));
  EXPECT_NEAR(m["metrics"]["test_accuracy"]["difference"][1].get<double>(), -0.05, 1e-12);
  EXPECT_EQ(m["metrics"]["test_accuracy"]["difference"][0].get<double>(), 0.0);
  const json& l = m["latency"][0];
  EXPECT_EQ(l["batch_size"], 1);
  EXPECT_EQ(l["p50_ms"], json({2.0, 1.0, 4.0}));
  EXPECT_EQ(l["ratio"]["p50_ms"], json({1.0, 0.5, 2.0}));
  EXPECT_NEAR(l["ratio"]["samples_per_s"][1].get<double>(), 2.0, 1e-12);  // half the latency, twice the rate
  EXPECT_NEAR(l["ratio"]["p99_ms"][2].get<double>(), 2.0, 1e-12);
  EXPECT_EQ(d["baseline"], 1);
  EXPECT_EQ(d["inputs"][2]["threads"], 4);

  const std::string table = render_comparison(c, Format::Table);
  EXPECT_CONTAINS(table, "[1] m.h5@1: evaluation 1, 2026-01-01T00:00:00Z, cpu, 1 thread (baseline)");
  EXPECT_CONTAINS(table, "test_accuracy  [2]    0.7500       -0.05");
  EXPECT_CONTAINS(table, "0.500");  // the p50 ratio of [2]
  // CSV: a row per model, input and measure, the ratio beside the value.
  const std::string csv = render_comparison(c, Format::Csv);
  EXPECT_CONTAINS(csv, "model,input,label,trial_id,iteration,measure,batch_size,value,baseline,difference,ratio\n");
  EXPECT_CONTAINS(csv, "1,2,m.h5@2,3,4,p50_ms,1,1,2,-1,0.5\n");
  EXPECT_EQ(count_in(csv, "\n"), 1u + 3 * (1 + 4));

  EXPECT_EQ(ratio(2, 4), 0.5);
  EXPECT_TRUE(std::isnan(ratio(1, 0)));
  EXPECT_TRUE(std::isnan(ratio(NAN, 1)));
}

TEST(Compare, ListsExactlyTheFieldsThatDiffer) {
  const json a = {{"cpu_model", "Xeon"}, {"driver_host", "n1"}, {"cuda", "12.4"}, {"slurm_job_id", "100"}};
  const json b = {{"cpu_model", "Xeon"}, {"driver_host", "n2"}, {"slurm_job_id", "200"}};
  const Comparison c = compare_evaluations({{"A", evaluation(1, {{1, "64", "aa", 0.8, 1}}, 1, a)},
                                            {"B", evaluation(2, {{1, "64", "aa", 0.8, 1}}, 2, b)}});
  std::vector<std::string> keys;
  for (const FieldValues& f : c.differing) keys.push_back(f.key);
  // A host name is a stack difference (two machines); the Slurm job id names the run only;
  // the command line differs but is not a stack field; the model's identity is matched on.
  EXPECT_EQ(keys, (std::vector<std::string>{"compute.threads", "stack.cuda", "stack.driver_host"}));
  EXPECT_EQ(c.differing[0].values, (std::vector<std::optional<std::string>>{"1", "2"}));
  EXPECT_EQ(c.differing[1].values, (std::vector<std::optional<std::string>>{"12.4", std::nullopt}));
  ASSERT_EQ(c.per_run.size(), 1u);
  EXPECT_EQ(c.per_run[0].key, "stack.slurm_job_id");
  const std::string table = render_comparison(c, Format::Table);
  EXPECT_CONTAINS(table, "stack fields that differ: 3\n");
  EXPECT_CONTAINS(table, "stack.cuda         12.4  (absent)");
  EXPECT_CONTAINS(table, "not counted (they name the run, not its stack): stack.slurm_job_id");

  // The same evaluation twice: nothing differs.
  const io::Evaluation same = evaluation(1, {{1, "64", "aa", 0.8, 1}}, 1, a);
  EXPECT_TRUE(compare_evaluations({{"A@1", same}, {"A@1", same}}).differing.empty());
}

TEST(Compare, StackFieldsFlattenTheManifest) {
  const json manifest = {
      {"command_line", "ranktune eval"},
      {"stack", {{"hdf5", "1.14"}}},
      {"pipeline", {{"dtype", "float16"}, {"normalize", true}}},
      {"evaluations",
       {{{"trial", 1}, {"config", {{"lr", 1}}}, {"compute", {{"threads", 1}}}, {"latency", {{"batch_sizes", {1, 128}}}},
         {"held_out", {{"files", {{{"path", "/d/t10k"}, {"crc32c", "0a"}}}}}}},
        {{"trial", 2}, {"config", {{"lr", 2}}}, {"compute", {{"threads", 2}}}, {"latency", {{"batch_sizes", {1, 128}}}},
         {"held_out", {{"files", {{{"path", "/d/t10k"}, {"crc32c", "0a"}}}}}}}}}};
  const auto f = stack_fields(manifest);
  EXPECT_EQ(f.at("stack.hdf5"), "1.14");
  EXPECT_EQ(f.at("pipeline.dtype"), "float16");  // a section added later is compared too
  EXPECT_EQ(f.at("pipeline.normalize"), "true");
  EXPECT_EQ(f.at("compute.threads"), "1 | 2");   // the trials disagree: both values
  EXPECT_EQ(f.at("latency.batch_sizes"), "[1,128]");
  EXPECT_EQ(f.at("held_out.files.0.crc32c"), "0a");
  EXPECT_FALSE(f.contains("command_line"));
  EXPECT_FALSE(f.contains("config.lr"));
  EXPECT_FALSE(f.contains("trial"));

  EXPECT_TRUE(is_per_run_field("created"));
  EXPECT_TRUE(is_per_run_field("stack.slurm_job_id"));
  EXPECT_TRUE(is_per_run_field("run.pid"));
  EXPECT_FALSE(is_per_run_field("stack.driver_host"));
  EXPECT_FALSE(is_per_run_field("stack.hosts"));
  EXPECT_FALSE(is_per_run_field("latency.budget_s"));
}

TEST(Compare, ErrorsSayWhatAndWhatToDo) {
  const io::Evaluation ok = evaluation(1, {{1, "64", "aa", 0.8, 1}}, 1);
  const auto message = [](const std::vector<CompareInput>& inputs) {
    try {
      compare_evaluations(inputs);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_CONTAINS(message({{"A", ok}}), "compare needs 2 or more evaluations");
  io::Evaluation bad = ok;
  bad.manifest = "{not json";
  EXPECT_CONTAINS(message({{"A", ok}, {"B@1", bad}}), "B@1 (evaluation 1): its manifest is not JSON");
  bad.manifest = R"({"evaluations":[{"trial":4,"config":{}}]})";
  EXPECT_CONTAINS(message({{"A", ok}, {"B@1", bad}}),
                  "B@1 (evaluation 1): its manifest's entry for trial 4 lacks trial, config, checkpoint.iteration or "
                  "checkpoint.crc32c");
  bad.manifest = R"({"stack":{}})";
  EXPECT_CONTAINS(message({{"A", ok}, {"B@1", bad}}), "its manifest lists no evaluated trials");
  const std::string none = message({{"A", ok}, {"B", evaluation(2, {{5, "64", "bb", 0.8, 1}}, 1)}});
  EXPECT_CONTAINS(none, "no model was evaluated in every input");
  EXPECT_CONTAINS(none, "A evaluated trials 1 (checkpoint aa); B evaluated trials 5 (checkpoint bb)");
  EXPECT_CONTAINS(none, "the same results file, or a copy of it");
}

TEST(Compare, HostileStringsStayInert) {
  const json stack = {{"cpu_model", "<script>alert(1)</script>\x1b]0;owned\x07"}};
  const io::Evaluation a = evaluation(1, {{1, "64", "aa", 0.8, 1}}, 1);
  io::Evaluation b = evaluation(2, {{1, "64", "aa", 0.8, 1}}, 1, stack);
  b.metrics.push_back({1, 4, "acc\xc2\x9b" "2J", 0.5});  // a C1 CSI in a metric name
  const Comparison c = compare_evaluations({{"A\x1b[2J", a}, {"B|x", b}});
  for (const Format f : {Format::Table, Format::Markdown, Format::Csv, Format::Json}) {
    const std::string text = render_comparison(c, f);
    EXPECT_LACKS(text, "\x1b");
    EXPECT_LACKS(text, "\xc2\x9b");
    EXPECT_LACKS(text, "\x07");
  }
  EXPECT_CONTAINS(render_comparison(c, Format::Markdown), "B\\|x");
  const std::string html = comparison_html_section(c);
  EXPECT_LACKS(html, "<script>");
  EXPECT_CONTAINS(html, "&lt;script&gt;");
  EXPECT_TRUE(json::accept(render_comparison(c, Format::Json)));
}

}  // namespace
}  // namespace ranktune::report
