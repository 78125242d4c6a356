// The Pareto reports of a multi-objective results file (report/pareto_front.h,
// report/pareto_charts.h): the reference point, the hypervolume over time, the view's order,
// values and hypervolume, the leaderboard in Pareto order, the charts and the held-out front,
// against values computed by hand.
#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report/grid.h"
#include "report/leaderboard.h"
#include "report/pareto_charts.h"
#include "report/pareto_front.h"

namespace ranktune::report {
namespace {

using search::Mode;
using search::TrialStatus;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(DefaultReference, IsTheWorstValuePlusATenthOfTheRange) {
  const std::vector<std::vector<double>> points = {{1, 4}, {2, 2}, {3, 1}};
  const auto r = default_reference(points);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_DOUBLE_EQ(r[0], 3.2);  // worst 3, range 2
  EXPECT_DOUBLE_EQ(r[1], 4.3);  // worst 4, range 3
  // One value per objective: a tenth of its size past it, or 1 past 0.
  const std::vector<std::vector<double>> one = {{2, 0}, {2, 0}};
  EXPECT_EQ(default_reference(one), (std::vector<double>{2.2, 1.0}));
  const std::vector<std::vector<double>> negative = {{-5, 1}};
  EXPECT_DOUBLE_EQ(default_reference(negative)[0], -4.5);  // past the worst, never towards the front
  EXPECT_TRUE(default_reference({}).empty());
  const std::vector<std::vector<double>> ragged = {{1, 2}, {1}};
  EXPECT_THROW(default_reference(ragged), std::invalid_argument);
}

TEST(HypervolumeHistory, AddsEachPointThatChangesTheFrontInTimeOrder) {
  std::vector<TimedPoint> points = {{1, {2, 2}},   {0, {3, 3}},  {2, {2.5, 2.5}},  // dominated: nothing
                                    {3, {5, 0}},   {4, {NAN, 1}},                  // outside, failed: nothing
                                    {5, {1, 3}},   {6, {1, 3}}};                   // the second is a copy: nothing
  const auto h = hypervolume_history(points, {4, 4});
  const std::vector<std::pair<double, double>> want = {{0, 1}, {1, 4}, {5, 5}};
  ASSERT_EQ(h.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_DOUBLE_EQ(h[i].first, want[i].first) << i;
    EXPECT_DOUBLE_EQ(h[i].second, want[i].second) << i;
  }
  EXPECT_TRUE(hypervolume_history({}, {1, 1}).empty());
  EXPECT_THROW(hypervolume_history({{0, {1, 1, 1}}}, {2, 2}), std::invalid_argument);
}

TEST(ParseReference, TakesCommaSeparatedNumbers) {
  EXPECT_EQ(parse_reference("1.5, -2,3e2"), (std::vector<double>{1.5, -2, 300}));
  EXPECT_THROW(parse_reference("1,x"), std::invalid_argument);
  EXPECT_THROW(parse_reference("1,"), std::invalid_argument);
  EXPECT_THROW(parse_reference("1,inf"), std::invalid_argument);
}

// f1 (min), f2 (max), c <= 1. Last results and the controller's ranks:
//   id  status      rank  f1   f2  c    end   min form    note
//   1   TERMINATED  0     1    5   0.5  10    (1, -5)     an earlier result (9, 0) is not its last
//   2   TERMINATED  0     2    8   0    20    (2, -8)     a later row of an older attempt is not its last
//   3   TERMINATED  0     3    9   0.9  30    (3, -9)
//   4   TERMINATED  1     2    4   0    5     (2, -4)     dominated by 1
//   5   TERMINATED  2     0.5  10  2    15                infeasible (violation 1)
//   6   RUNNING     -1    0.1  20  0
//   7   ERROR       -1    no result
io::ResultsFile mo_file() {
  io::ResultsFile f;
  f.path = "mo.h5";
  f.meta.experiment = "mo";
  f.meta.metric = "f1";
  f.meta.mode = Mode::Min;
  f.schema.metrics = {"f1", "f2", "c"};
  f.schema.objectives = {"f1", "f2"};
  struct Row { TrialStatus status; int rank; double f1, f2, c, end; };
  const Row rows[] = {{TrialStatus::Terminated, 0, 1, 5, 0.5, 10}, {TrialStatus::Terminated, 0, 2, 8, 0, 20},
                      {TrialStatus::Terminated, 0, 3, 9, 0.9, 30}, {TrialStatus::Terminated, 1, 2, 4, 0, 5},
                      {TrialStatus::Terminated, 2, 0.5, 10, 2, 15}, {TrialStatus::Running, -1, 0.1, 20, 0, NAN},
                      {TrialStatus::Error, -1, NAN, NAN, NAN, 3}};
  for (int i = 0; i < 7; ++i) {
    search::Trial t;
    t.id = i + 1;
    t.status = rows[i].status;
    t.pareto_rank = rows[i].rank;
    t.best = rows[i].f1;
    t.iterations = 2;
    t.start_time = 0;
    t.end_time = rows[i].end;
    t.end_reason = rows[i].status == TrialStatus::Error ? search::TrialEnd::Error
                   : rows[i].status == TrialStatus::Terminated ? search::TrialEnd::MaxT
                                                               : search::TrialEnd::None;
    t.config = {{"x", 0.1 * (i + 1)}};
    f.trials.push_back(t);
  }
  f.schema.params = {{"x", search::ValueType::Float, 0}};
  f.results.push_back({1, 0, 1, 1, {9, 0, 0}});
  f.results.push_back({2, 1, 1, 2, {2, 8, 0}});
  f.results.push_back({2, 0, 3, 3, {100, 100, 0}});  // an older attempt's row, written out of order
  for (const int id : {1, 3, 4, 5, 6})
    f.results.push_back({id, 0, 2, 4, {rows[id - 1].f1, rows[id - 1].f2, rows[id - 1].c}});
  return f;
}

search::Objectives mo_objectives() {
  search::Objectives o;
  o.metrics = {"f1", "f2"};
  o.modes = {Mode::Min, Mode::Max};
  o.constraints = {{"c", true, 1.0}};
  return o;
}

TEST(ParetoView, OrdersByRankThenCrowdingWithTheUnrankedLast) {
  const io::ResultsFile f = mo_file();
  const auto v = pareto_view(f, mo_objectives());
  ASSERT_TRUE(v);
  std::vector<search::TrialId> order;
  for (const ParetoEntry& e : v->entries) order.push_back(e.trial->id);
  // Front: 1 and 3 at its ends (inf), then 2 (crowding 1 + 1); then 4, 5; then the running 6, the failed 7.
  EXPECT_EQ(order, (std::vector<search::TrialId>{1, 3, 2, 4, 5, 6, 7}));
  EXPECT_EQ(v->ranked, 5u);
  EXPECT_EQ(v->front, 3u);
  EXPECT_TRUE(std::isinf(v->entries[0].crowding));
  EXPECT_DOUBLE_EQ(v->entries[2].crowding, 2.0);
  // Each trial's values are its last result's (not an earlier one, nor an older attempt's).
  EXPECT_EQ(v->entries[0].values, (std::vector<double>{1, 5}));
  EXPECT_EQ(v->entries[2].values, (std::vector<double>{2, 8}));
  EXPECT_EQ(v->entries[2].constrained, (std::vector<double>{0}));
  EXPECT_TRUE(v->entries[0].feasible());
  EXPECT_FALSE(v->entries[4].feasible());  // trial 5: c = 2 > 1
  EXPECT_TRUE(std::isnan(v->entries[6].values[0]));
  EXPECT_EQ(v->objectives_text(), "f1 (min), f2 (max)");
  EXPECT_EQ(v->constraints_text(), "c <= 1");
}

TEST(ParetoView, HypervolumeOfTheFrontAgainstTheDefaultOrAGivenReference) {
  const io::ResultsFile f = mo_file();
  const auto v = pareto_view(f, mo_objectives());
  ASSERT_TRUE(v);
  // Feasible ranked points (1, -5), (2, -8), (3, -9), (2, -4): worst 3 and -4, ranges 2 and 5.
  ASSERT_EQ(v->reference.size(), 2u);
  EXPECT_DOUBLE_EQ(v->reference[0], 3.2);
  EXPECT_DOUBLE_EQ(v->reference[1], 3.5);  // f2 is maximized: 0.5 below its worst, 4
  EXPECT_FALSE(v->reference_given);
  // 1 x 1.5 + 1 x 4.5 + 0.2 x 5.5
  EXPECT_NEAR(v->hypervolume, 7.1, 1e-12);
  EXPECT_NE(v->reference_text().find("(f1 3.2, f2 3.5): the worst value of each objective among the 4 finished trials"),
            std::string::npos)
      << v->reference_text();
  // The front of the trials finished by each time: 4 at 5, 1 at 10 (dominates 4), 2 at 20, 3 at 30.
  const auto h = v->history();
  ASSERT_EQ(h.size(), 4u);
  const double want[][2] = {{5, 0.6}, {10, 3.3}, {20, 6.9}, {30, 7.1}};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(h[i].first, want[i][0]);
    EXPECT_NEAR(h[i].second, want[i][1], 1e-12);
  }
  const auto given = pareto_view(f, mo_objectives(), {4, 0});
  EXPECT_NEAR(given->hypervolume, 1 * 5 + 1 * 8 + 1 * 9, 1e-12);
  EXPECT_TRUE(given->reference_given);
  EXPECT_NE(given->reference_text().find("as given"), std::string::npos);
  EXPECT_THROW(pareto_view(f, mo_objectives(), {4}), std::invalid_argument);
  // One objective: no view.
  search::Objectives one;
  EXPECT_FALSE(pareto_view(f, one));
}

TEST(ParetoView, NoFeasiblePointNoReference) {
  io::ResultsFile f = mo_file();
  for (io::ResultRow& r : f.results) r.values[2] = 5;  // every trial violates c <= 1
  const auto v = pareto_view(f, mo_objectives());
  EXPECT_TRUE(v->reference.empty());
  EXPECT_TRUE(std::isnan(v->hypervolume));
  EXPECT_EQ(v->hypervolume_note, "no finished trial has a feasible point");
  EXPECT_TRUE(v->history().empty());
  EXPECT_EQ(hypervolume_chart(*v), "");
}

TEST(ParetoLeaderboard, RowsInParetoOrderWithTheObjectives) {
  const io::ResultsFile f = mo_file();
  const auto v = pareto_view(f, mo_objectives());
  const Grid g = leaderboard_grid(f, 0, 6, &*v);
  const std::vector<std::string> head = {"rank", "trial_id", "status", "end_reason", "pareto_rank", "crowding", "f1", "f2",
                                         "feasible", "best", "best_iteration", "iterations", "wall_s", "x"};
  EXPECT_EQ(g.head, head);
  std::vector<std::string> ids, ranks, feasible;
  for (const auto& row : g.body) {
    ids.push_back(row[1]);
    ranks.push_back(row[4]);
    feasible.push_back(row[8]);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"1", "3", "2", "4", "5", "6", "7"}));
  EXPECT_EQ(ranks, (std::vector<std::string>{"0", "0", "0", "1", "2", "", ""}));
  EXPECT_EQ(feasible, (std::vector<std::string>{"yes", "yes", "yes", "yes", "no", "", ""}));
  EXPECT_EQ(g.body[0][5], "inf");
  EXPECT_EQ(g.body[2][5], "2");

  const std::string text = render_leaderboard(f, {10, Format::Table, &*v});
  EXPECT_NE(text.find("objectives  f1 (min), f2 (max)\nconstraints c <= 1\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("metric      "), std::string::npos);
  EXPECT_NE(text.find("Pareto front: 3 trials on the front (pareto_rank 0) of 5 ranked; hypervolume 7.1 against the "
                      "reference point (f1 3.2, f2 3.5)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("then the 2 trials without a rank"), std::string::npos);
  const std::string csv = render_leaderboard(f, {0, Format::Csv, &*v});
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "rank,trial_id,status,end_reason,pareto_rank,crowding,f1,f2,feasible,best,best_iteration,iterations,wall_s,x");
  const auto doc = nlohmann::json::parse(render_leaderboard(f, {0, Format::Json, &*v}));
  EXPECT_EQ(doc["pareto"]["front"], nlohmann::json::parse("[1, 3, 2]"));
  EXPECT_NEAR(doc["pareto"]["hypervolume"].get<double>(), 7.1, 1e-12);
  EXPECT_EQ(doc["objectives"][1]["mode"], "max");
  EXPECT_EQ(doc["constraints"][0]["op"], "<=");
  EXPECT_EQ(doc["trials"][2]["objectives"]["f2"], 8);
  EXPECT_EQ(doc["trials"][2]["crowding"], 2);
  EXPECT_TRUE(doc["trials"][0]["crowding"].is_null());  // infinite: an end of its front
  EXPECT_EQ(doc["trials"][4]["feasible"], false);
  EXPECT_TRUE(doc["trials"][5]["pareto_rank"].is_null());

  const Grid front = pareto_front_grid(*v, 2, 6);
  EXPECT_EQ(front.head, (std::vector<std::string>{"trial_id", "f1", "f2", "c", "feasible", "crowding"}));
  ASSERT_EQ(front.body.size(), 2u);
  EXPECT_EQ(front.body[1], (std::vector<std::string>{"3", "3", "9", "0.9", "yes", "inf"}));
  // A constraint on an objective, and two on one metric: each metric's column once.
  search::Objectives twice = mo_objectives();
  twice.constraints = {{"c", true, 1.0}, {"f2", false, 4.5}, {"c", false, -1.0}};
  const Grid once = pareto_front_grid(*pareto_view(f, twice), 0, 6);
  EXPECT_EQ(once.head, (std::vector<std::string>{"trial_id", "f1", "f2", "c", "feasible", "crowding"}));
}

TEST(ParetoCharts, FrontDominatedAndInfeasibleMarksAndTheStepLine) {
  const io::ResultsFile f = mo_file();
  const auto v = pareto_view(f, mo_objectives());
  const std::string svg = pareto_front_chart(*v);
  EXPECT_NE(svg.find("aria-label=\"Pareto front\""), std::string::npos);
  // Three front dots, one faded dominated dot, one cross for the infeasible trial 5.
  EXPECT_EQ(count(svg, "(front): f1"), 3u);
  EXPECT_EQ(count(svg, "<circle") - count(svg, "(front): f1"), 1u + 2u);  // trial 4, and the legend's two dots
  EXPECT_EQ(count(svg, "trial 4, pareto_rank 1: f1"), 1u);
  EXPECT_EQ(count(svg, "trial 5, pareto_rank 2, infeasible"), 1u);
  EXPECT_NE(svg.find("<title>the front's step line"), std::string::npos) << svg;
  const std::string hv = hypervolume_chart(*v);
  EXPECT_EQ(count(hv, " s</title></circle>"), 4u);  // a dot per change
  EXPECT_NE(hv.find("<title>hypervolume 7.1 at 30 s</title>"), std::string::npos);

  // Three objectives: a matrix of the three pairs, no step line.
  search::Objectives three = mo_objectives();
  three.metrics.push_back("c");
  three.modes.push_back(Mode::Min);
  three.constraints.clear();
  const auto v3 = pareto_view(f, three);
  const std::string matrix = pareto_front_chart(*v3);
  EXPECT_EQ(count(matrix, "f1 vs f2"), 1u);
  EXPECT_EQ(count(matrix, "f1 vs c"), 1u);
  EXPECT_EQ(count(matrix, "f2 vs c"), 1u);
  EXPECT_EQ(count(matrix, "step line</title>"), 0u);
}

io::Evaluation evaluation() {
  io::Evaluation ev;
  for (const auto& [trial, acc] : std::vector<std::pair<int, double>>{{1, 0.8}, {2, 0.9}, {3, 0.7}}) {
    ev.metrics.push_back({trial, 2, "test_accuracy", acc});
    ev.metrics.push_back({trial, 2, "test_loss", 1 - acc});
  }
  const double p50_b1[] = {2, 4, 3}, p50_b8[] = {80, 8, 16};
  for (int t = 1; t <= 3; ++t) {
    io::EvalLatencyRow l1;
    l1.trial = t;
    l1.iteration = 2;
    l1.batch_size = 1;
    l1.p50_ms = p50_b1[t - 1];
    ev.latency.push_back(l1);
    io::EvalLatencyRow l8 = l1;
    l8.batch_size = 8;
    l8.p50_ms = p50_b8[t - 1];
    ev.latency.push_back(l8);
  }
  return ev;
}

TEST(HeldOut, MetricStandsForTheObjectiveItIsTheTestSplitOf) {
  search::Objectives o;
  o.metrics = {"val_accuracy", "samples_per_s"};
  o.modes = {Mode::Max, Mode::Max};
  const io::Evaluation ev = evaluation();
  const auto m = held_out_metric(o, ev);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->metric, "test_accuracy");
  EXPECT_EQ(m->objective, 0u);
  EXPECT_EQ(m->mode, Mode::Max);
  o.metrics = {"params_m", "val_loss"};
  o.modes = {Mode::Min, Mode::Min};
  EXPECT_EQ(held_out_metric(o, ev)->metric, "test_loss");
  EXPECT_EQ(held_out_metric(o, ev)->objective, 1u);
  o.metrics = {"f1", "f2"};  // no match: the evaluation's first metric, with the first mode
  EXPECT_EQ(held_out_metric(o, ev)->metric, "test_accuracy");
  EXPECT_EQ(held_out_metric(o, ev)->mode, Mode::Min);
  EXPECT_FALSE(held_out_metric(o, io::Evaluation{}));
}

TEST(HeldOut, FrontByHeldOutMetricAndLatencyPerSample) {
  io::ResultsFile f = mo_file();
  search::Objectives o;
  o.metrics = {"val_accuracy", "samples_per_s"};
  o.modes = {Mode::Max, Mode::Max};
  f.schema.metrics = {"val_accuracy", "samples_per_s", "c"};
  const auto v = pareto_view(f, o);
  const io::Evaluation ev = evaluation();
  // Batch 1: trial 3 (0.7 at 3 ms) is dominated by trial 1 (0.8 at 2 ms).
  EXPECT_EQ(held_out_front(*v, ev, 1), (std::vector<search::TrialId>{1, 2}));
  // Batch 8: trial 2 is the most accurate and the fastest (1 ms per sample).
  EXPECT_EQ(held_out_front(*v, ev, 8), (std::vector<search::TrialId>{2}));
  const std::string svg = held_out_front_chart(*v, ev);
  EXPECT_NE(svg.find("held out, batch size 1"), std::string::npos);
  EXPECT_NE(svg.find("held out, batch size 8"), std::string::npos);
  EXPECT_NE(svg.find("validation front"), std::string::npos);
  EXPECT_EQ(count(svg, ", on the held-out front:"), 3u);
  EXPECT_NE(svg.find("trial 2 (iteration 2), on the held-out front: test_accuracy 0.9, 1 ms per sample at batch size 8"),
            std::string::npos)
      << svg;
  io::Evaluation no_latency = ev;
  no_latency.latency.clear();
  EXPECT_EQ(held_out_front_chart(*v, no_latency), "");
}

}  // namespace
}  // namespace ranktune::report
