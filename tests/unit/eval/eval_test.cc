// `ranktune eval`'s parts: latency statistics, the choice of leaders and their checkpoints,
// /evaluations in a real results file, and a real mlp restored from a results file and
// evaluated exactly as the trainable that saved it.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <hdf5.h>

#include "config/stored.h"
#include "eval/evaluator.h"
#include "eval/latency.h"
#include "eval/leaders.h"
#include "tests/unit/common/expect_text.h"
#include "io/evaluations.h"
#include "io/store.h"
#include "train/checkpoint.h"
#include "train/command.h"
#include "train/mlp_trainable.h"

namespace ranktune::eval {
namespace {

namespace fs = std::filesystem;

// ------------------------------------------------------------------ latency

TEST(Latency, NearestRankPercentiles) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_EQ(nearest_rank(v, 50), 50);
  EXPECT_EQ(nearest_rank(v, 90), 90);
  EXPECT_EQ(nearest_rank(v, 99), 99);
  EXPECT_EQ(nearest_rank(v, 100), 100);
  EXPECT_EQ(nearest_rank(v, 0.5), 1);
  // Ten values: p90 is the 9th, not an interpolation, and p99 the 10th.
  const std::vector<double> ten = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(nearest_rank(ten, 90), 9);
  EXPECT_EQ(nearest_rank(ten, 99), 10);
  EXPECT_EQ(nearest_rank({7.0}, 50), 7);
}

TEST(Latency, SummarizeSortsAndDerivesThroughput) {
  // Unsorted input, one slow outlier: the median ignores it, the mean and max do not.
  const LatencyStats s = summarize_latency(128, {0.002, 0.001, 0.001, 0.001, 0.010});
  EXPECT_EQ(s.batch_size, 128);
  EXPECT_EQ(s.batches, 5);
  EXPECT_DOUBLE_EQ(s.p50_s, 0.001);
  EXPECT_DOUBLE_EQ(s.max_s, 0.010);
  EXPECT_DOUBLE_EQ(s.p99_s, 0.010);
  EXPECT_NEAR(s.mean_s, 0.003, 1e-15);
  EXPECT_NEAR(s.samples_per_s, 128 / 0.003, 1e-6);
  EXPECT_THROW(summarize_latency(1, {}), std::invalid_argument);
  EXPECT_THROW(summarize_latency(1, {0.1, -0.1}), std::invalid_argument);
  EXPECT_THROW(summarize_latency(1, {NAN}), std::invalid_argument);
}

TEST(Latency, SummarizeBatchesSplitsEachPart) {
  // Ten batches: pre 1..10 ms, inference 10x that, post not measured (NaN) in one batch.
  std::vector<BatchTime> b;
  for (int i = 0; i < 10; ++i) {
    const double pre = (i + 1) * 1e-3, inf = (i + 1) * 1e-2, post = i == 4 ? NAN : 5e-4;
    b.push_back({i, i * 0.1, pre + inf + (std::isnan(post) ? 0 : post), pre, inf, post});
  }
  const LatencyStats s = summarize_batches(8, b);
  EXPECT_EQ(s.batches, 10);
  EXPECT_DOUBLE_EQ(s.pre.p50_s, 5e-3);  // nearest rank: the 5th of 10
  EXPECT_DOUBLE_EQ(s.pre.p90_s, 9e-3);
  EXPECT_DOUBLE_EQ(s.pre.p99_s, 10e-3);
  EXPECT_DOUBLE_EQ(s.inference.p90_s, 9e-2);
  EXPECT_TRUE(s.pre.measured() && s.inference.measured());
  EXPECT_FALSE(s.post.measured());  // not in every batch: not measured, not 0
  EXPECT_TRUE(std::isnan(s.post.p99_s));
  // The whole batch's percentiles come from the totals, as summarize_latency's.
  EXPECT_DOUBLE_EQ(s.p50_s, summarize_latency(8, {0.0115, 0.0225, 0.0335, 0.0445, 0.055, 0.0665, 0.0775, 0.0885,
                                                  0.0995, 0.1105})
                                .p50_s);
  ASSERT_EQ(s.trace.size(), 10u);  // few enough: all kept, in order
  EXPECT_EQ(s.trace[3].batch, 3);
  EXPECT_DOUBLE_EQ(s.trace[3].pre_s, 4e-3);
  EXPECT_DOUBLE_EQ(s.trace[3].start_s, 0.30000000000000004);
  EXPECT_THROW(summarize_part({0.1, -1}), std::invalid_argument);
  EXPECT_FALSE(summarize_part({}).measured());
}

TEST(Latency, TraceKeepsEveryKthBatchAndTheSlowest) {
  // Few enough: every batch.
  EXPECT_EQ(trace_keep({3, 1, 2}, 5), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(trace_keep(std::vector<double>(1000, 1.0)).size(), 1000u);
  // 2500 batches into 1000 rows: k = ceil(2500 / 999) = 3, so 0, 3, ..., 2499 (834 rows),
  // and the slowest (batch 1001, not a multiple of 3) in its place.
  std::vector<double> t(2500, 1.0);
  t[1001] = 50;
  t[1700] = 50;  // as slow: the first of them is the one kept
  const std::vector<std::size_t> keep = trace_keep(t);
  EXPECT_LE(keep.size(), kTraceRows);
  EXPECT_EQ(keep.size(), 835u);
  EXPECT_TRUE(std::is_sorted(keep.begin(), keep.end()));
  EXPECT_EQ(keep.front(), 0u);
  EXPECT_EQ(keep.back(), 2499u);
  EXPECT_TRUE(std::binary_search(keep.begin(), keep.end(), std::size_t{1001}));
  EXPECT_FALSE(std::binary_search(keep.begin(), keep.end(), std::size_t{1700}));
  EXPECT_EQ(trace_keep(t), keep);  // deterministic
  // The slowest on the stride: not kept twice.
  t[1001] = 1;
  t[1700] = 1;
  t[1701] = 50;  // 1701 = 3 x 567
  EXPECT_EQ(trace_keep(t).size(), 834u);
  // 1001 batches into 1000 rows: k = 2, 501 rows; the slowest (batch 7) makes 502.
  std::vector<double> u(1001, 1.0);
  u[7] = 9;
  EXPECT_EQ(trace_keep(u).size(), 502u);
  // The summary thins its trace by the same rule and keeps the maximum.
  std::vector<BatchTime> b;
  for (int i = 0; i < 2500; ++i) b.push_back({i, i * 1e-3, i == 1001 ? 0.05 : 1e-3, 0, 1e-3, 0});
  const LatencyStats s = summarize_batches(1, b);
  EXPECT_EQ(s.trace.size(), 835u);
  EXPECT_DOUBLE_EQ(std::max_element(s.trace.begin(), s.trace.end(), [](const BatchTime& x, const BatchTime& y) {
                     return x.total_s < y.total_s;
                   })->total_s, s.max_s);
}

// ------------------------------------------------------------------ leaders

search::Trial trial(search::TrialId id, double best) {
  search::Trial t;
  t.id = id;
  t.status = search::TrialStatus::Terminated;
  t.best = best;
  return t;
}

io::CheckpointRow ckpt(search::TrialId id, std::int64_t iteration, double score, bool dropped = false) {
  io::CheckpointRow r;
  r.trial = id;
  r.iteration = iteration;
  r.score = score;
  r.dropped = dropped;
  return r;
}

// Trials 1..5, best first: 3 (0.9), 5 (0.8), 1 (0.7), 2 (0.6), then 4 (NaN: never a leader).
io::ResultsFile board() {
  io::ResultsFile f;
  f.path = "b.h5";
  f.meta.metric = "acc";
  f.meta.mode = search::Mode::Max;
  f.trials = {trial(1, 0.7), trial(2, 0.6), trial(3, 0.9), trial(4, NAN), trial(5, 0.8)};
  f.checkpoints = {ckpt(0, 3, NAN),                                        // the experiment state
                   ckpt(3, 2, 0.9), ckpt(3, 4, 0.85), ckpt(3, 6, 0.9, true),  // best at 2; 6 dropped
                   ckpt(5, 1, 0.5, true),                                  // only a dropped one
                   ckpt(1, 1, NAN), ckpt(1, 3, NAN),                       // no scores: latest
                   ckpt(2, 5, 0.6), ckpt(2, 7, 0.6),                       // a tie: the later one
                   ckpt(4, 9, 0.1)};
  return f;
}

TEST(Leaders, TopTrialsWithACheckpointInLeaderboardOrder) {
  const io::ResultsFile f = board();
  const LeaderChoice c = choose_leaders(f, 3, {}, CheckpointChoice::Best);
  ASSERT_EQ(c.leaders.size(), 3u);
  EXPECT_EQ(c.leaders[0].trial->id, 3);
  EXPECT_EQ(c.leaders[0].checkpoint->iteration, 2);  // its best score, not its newest
  EXPECT_EQ(c.leaders[0].rank, 1u);
  EXPECT_EQ(c.leaders[1].trial->id, 1);  // trial 5 passed over: its only checkpoint is dropped
  EXPECT_EQ(c.leaders[1].rank, 3u);
  EXPECT_EQ(c.leaders[1].checkpoint->iteration, 3);  // no scores: the newest
  EXPECT_EQ(c.leaders[2].trial->id, 2);
  EXPECT_EQ(c.leaders[2].checkpoint->iteration, 7);  // equal scores: the later
  ASSERT_EQ(c.skipped.size(), 1u);
  EXPECT_CONTAINS(c.skipped[0], "trial 5 (rank 2)");
  EXPECT_CONTAINS(c.skipped[0], "none (dropped: 1)");

  // Trial 4 has a checkpoint but no finite best: it is not a leader however many are asked.
  EXPECT_EQ(choose_leaders(f, 10, {}, CheckpointChoice::Best).leaders.size(), 3u);
  // Latest takes the newest live one.
  EXPECT_EQ(choose_leaders(f, 1, {}, CheckpointChoice::Latest).leaders[0].checkpoint->iteration, 4);
}

// Issue 12 item 8: a trial that ended in ERROR is never a leader, whatever it reported.
// Since issue 27 item 13b it ranks last on the leaderboard too, so it is not even passed over.
TEST(Leaders, ATrialThatEndedInErrorIsPassedOver) {
  io::ResultsFile f = board();
  f.trials[2].status = search::TrialStatus::Error;  // trial 3, the best
  const LeaderChoice c = choose_leaders(f, 1, {}, CheckpointChoice::Best);
  ASSERT_EQ(c.leaders.size(), 1u);
  EXPECT_EQ(c.leaders[0].trial->id, 1);  // 3 ended in ERROR, 5 has no live checkpoint
  EXPECT_EQ(c.leaders[0].rank, 2u);      // 3 ranks last now: 5, then 1
  ASSERT_EQ(c.skipped.size(), 1u);
  EXPECT_CONTAINS(c.skipped[0], "trial 5 (rank 1)");
  // Asked for by id, it is found at its rank, last.
  f.checkpoints.push_back(ckpt(3, 8, 0.9));
  const LeaderChoice asked = choose_leaders(f, 1, {3}, CheckpointChoice::Best);
  ASSERT_EQ(asked.leaders.size(), 1u);
  EXPECT_EQ(asked.leaders[0].rank, 5u);
  // With every other trial ranked above it holding a value, the loop reaches it and still
  // passes it over.
  f.trials[3].best = 0.1;  // trial 4
  const LeaderChoice all = choose_leaders(f, 10, {}, CheckpointChoice::Best);
  for (const auto& l : all.leaders) EXPECT_NE(l.trial->id, 3);
  EXPECT_CONTAINS(all.skipped.back(), "trial 3 (rank 5): it ended in ERROR");
}

TEST(Leaders, MinModeRanksAscending) {
  io::ResultsFile f = board();
  f.meta.mode = search::Mode::Min;
  const LeaderChoice c = choose_leaders(f, 1, {}, CheckpointChoice::Best);
  ASSERT_EQ(c.leaders.size(), 1u);
  EXPECT_EQ(c.leaders[0].trial->id, 2);               // 0.6 is the lowest best
  EXPECT_EQ(c.leaders[0].checkpoint->iteration, 7);
  f.checkpoints.push_back(ckpt(2, 8, 0.7));
  EXPECT_EQ(choose_leaders(f, 1, {}, CheckpointChoice::Best).leaders[0].checkpoint->iteration, 7);
}

// `eval --front`: the trials of pareto_rank 0 in the view's order (crowding), each from the
// checkpoint asked for; a front trial without a live checkpoint is passed over, saying why.
TEST(Leaders, TheFrontInParetoOrder) {
  io::ResultsFile f = board();
  f.schema.metrics = {"acc", "speed"};
  // Last results (acc max, speed max): 1 (0.7, 5), 2 (0.6, 9), 3 (0.9, 1), 5 (0.8, 2) on the
  // front, 4 dominated by 1.
  const double acc[] = {0.7, 0.6, 0.9, 0.5, 0.8}, speed[] = {5, 9, 1, 4, 2};
  for (std::size_t i = 0; i < 5; ++i) {
    f.trials[i].pareto_rank = i == 3 ? 1 : 0;
    f.results.push_back({f.trials[i].id, 0, 1, 1.0, {acc[i], speed[i]}});
  }
  search::Objectives o;
  o.metrics = {"acc", "speed"};
  o.modes = {search::Mode::Max, search::Mode::Max};
  const auto view = report::pareto_view(f, o);
  ASSERT_TRUE(view);
  const LeaderChoice c = choose_front(f, *view, CheckpointChoice::Latest);
  // The ends of the front first (2 and 3, inf), then 1 (crowding 2/3 + 7/8) before 5 (2/3 + 1/2).
  std::vector<search::TrialId> ids;
  for (const Leader& l : c.leaders) ids.push_back(l.trial->id);
  EXPECT_EQ(ids, (std::vector<search::TrialId>{2, 3, 1}));
  EXPECT_EQ(c.leaders[0].checkpoint->iteration, 7);
  EXPECT_EQ(c.leaders[1].checkpoint->iteration, 4);  // latest live: 6 is dropped
  EXPECT_EQ(c.leaders[2].rank, 3u);
  ASSERT_EQ(c.skipped.size(), 1u);  // trial 5: its only checkpoint is dropped; 4 is not on the front
  EXPECT_CONTAINS(c.skipped[0], "trial 5 (on the front): no checkpoint to evaluate");
  EXPECT_EQ(choose_front(f, *view, CheckpointChoice::Best).leaders[1].checkpoint->iteration, 2);
}

// `eval --top N` on a multi-objective experiment: the Pareto leaderboard's order (rank, then
// crowding), as `report` shows it, not the first objective's; only ranked trials lead.
TEST(Leaders, TopFollowsTheParetoLeaderboard) {
  io::ResultsFile f = board();
  f.schema.metrics = {"acc", "speed"};
  // Last results (acc max, speed max): 1 (0.7, 5), 2 (0.6, 9), 3 (0.9, 1) on the front,
  // 4 (0.5, 4) dominated by 1 (rank 1), 5 not ranked.
  const double acc[] = {0.7, 0.6, 0.9, 0.5}, speed[] = {5, 9, 1, 4};
  for (std::size_t i = 0; i < 4; ++i) {
    f.trials[i].pareto_rank = i == 3 ? 1 : 0;
    f.results.push_back({f.trials[i].id, 0, 1, 1.0, {acc[i], speed[i]}});
  }
  f.trials[4].pareto_rank = -1;
  f.checkpoints.push_back(ckpt(4, 3, 0.5));
  f.checkpoints.push_back(ckpt(5, 3, 0.99));  // the best first objective, but not ranked
  search::Objectives o;
  o.metrics = {"acc", "speed"};
  o.modes = {search::Mode::Max, search::Mode::Max};
  const auto view = report::pareto_view(f, o);
  ASSERT_TRUE(view);
  const LeaderChoice c = choose_leaders(f, 10, {}, CheckpointChoice::Latest, &*view);
  // The front's ends (2 and 3, crowding inf) first, then 1, then 4 of rank 1; 5 never.
  std::vector<search::TrialId> ids;
  for (const Leader& l : c.leaders) ids.push_back(l.trial->id);
  EXPECT_EQ(ids, (std::vector<search::TrialId>{2, 3, 1, 4}));
  EXPECT_EQ(c.leaders[3].rank, 4u);
  // The single-objective order (by acc's best) would put 3 first.
  EXPECT_EQ(choose_leaders(f, 1, {}, CheckpointChoice::Latest).leaders[0].trial->id, 3);
  const LeaderChoice one = choose_leaders(f, 1, {}, CheckpointChoice::Latest, &*view);
  ASSERT_EQ(one.leaders.size(), 1u);
  EXPECT_EQ(one.leaders[0].trial->id, 2);
  // --trial ids are placed on the Pareto leaderboard too.
  EXPECT_EQ(choose_leaders(f, 1, {4}, CheckpointChoice::Latest, &*view).leaders[0].rank, 4u);
}

TEST(Leaders, ExplicitTrialsAreTakenAsGivenOrRefusedWithWhy) {
  const io::ResultsFile f = board();
  const LeaderChoice c = choose_leaders(f, 1, {2, 3}, CheckpointChoice::Best);
  ASSERT_EQ(c.leaders.size(), 2u);
  EXPECT_EQ(c.leaders[0].trial->id, 2);
  EXPECT_EQ(c.leaders[0].rank, 4u);
  EXPECT_EQ(c.leaders[1].trial->id, 3);
  try {
    choose_leaders(f, 1, {5}, CheckpointChoice::Best);
    FAIL() << "trial 5 has no live checkpoint";
  } catch (const std::invalid_argument& e) {
    EXPECT_CONTAINS(e.what(), "trial 5 has no checkpoint to evaluate");
    EXPECT_CONTAINS(e.what(), "(dropped: 1)");
  }
  try {
    choose_leaders(f, 1, {9}, CheckpointChoice::Best);
    FAIL() << "there is no trial 9";
  } catch (const std::invalid_argument& e) {
    EXPECT_CONTAINS(e.what(), "b.h5: no trial 9 (the file has 5 trials)");
  }
  EXPECT_THROW(parse_checkpoint_choice("first"), std::invalid_argument);
  EXPECT_EQ(parse_checkpoint_choice("latest"), CheckpointChoice::Latest);
}

// ------------------------------------------------------------------ /evaluations

class EvalFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ranktune_eval_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

io::StoreMeta mlp_meta() {
  io::StoreMeta m;
  m.experiment = "fashion_mlp_asha";
  m.metric = "val_accuracy";
  m.mode = search::Mode::Max;
  std::ifstream in(std::string(RANKTUNE_SOURCE_DIR) + "/configs/fashion_mlp_asha.toml");
  m.config_text.assign(std::istreambuf_iterator<char>(in), {});
  // Small enough for a unit test; the stored overrides must be applied by `eval` too.
  m.overrides = "trainable.train_samples=1000\ntrainable.val_samples=200\ntrainable.batches_per_step=5\n";
  return m;
}

io::StoreSchema mlp_schema() {
  io::StoreSchema s;
  s.params = {{"hidden", search::ValueType::String, 16}, {"lr", search::ValueType::Float, 0}};
  s.metrics = {"val_accuracy"};
  return s;
}

io::Evaluation sample_evaluation(double accuracy) {
  io::Evaluation e;
  e.split = "test";
  e.device = "cpu";
  e.threads = 2;
  e.trials = 1;
  e.manifest = R"({"trial": 1, "note": "a manifest"})";
  e.metrics = {{1, 3, "test_accuracy", accuracy}, {1, 3, "test_loss", 0.5}};
  e.latency = {{1, 3, 1, 100, 0.1, 0.09, 0.12, 0.2, 0.3, 10000}, {1, 3, 128, 50, 2.0, 1.9, 2.2, 2.5, 3.0, 64000}};
  return e;
}

TEST_F(EvalFileTest, AppendedEvaluationsReadBackAndSurviveResumeAndCompact) {
  const std::string p = path("r.h5");
  {
    io::ResultsWriter w(p, mlp_meta(), mlp_schema(), {});
    search::Trial t = trial(1, 0.8);
    w.write_trial(t);
    w.append_checkpoint(1, 0, 3, 1.0, "bytes of a checkpoint");
    w.flush();
  }
  EXPECT_TRUE(io::read_evaluations(p).empty());
  EXPECT_EQ(io::append_evaluation(p, sample_evaluation(0.81)), 1);
  EXPECT_EQ(io::append_evaluation(p, sample_evaluation(0.82)), 2);

  const auto check = [&](const std::string& file, std::size_t n) {
    SCOPED_TRACE(file);
    const std::vector<io::Evaluation> evs = io::read_evaluations(file);
    ASSERT_EQ(evs.size(), n);
    EXPECT_EQ(evs[0].id, 1);
    EXPECT_EQ(evs[1].id, 2);
    EXPECT_EQ(evs[1].device, "cpu");
    EXPECT_EQ(evs[1].threads, 2);
    EXPECT_EQ(evs[1].split, "test");
    EXPECT_EQ(evs[1].created.size(), 20u);  // 2026-11-29T17:20:41Z
    EXPECT_EQ(evs[1].manifest, sample_evaluation(0).manifest);
    ASSERT_EQ(evs[1].metrics.size(), 2u);
    EXPECT_EQ(evs[1].metrics[0].metric, "test_accuracy");
    EXPECT_DOUBLE_EQ(evs[1].metrics[0].value, 0.82);
    EXPECT_DOUBLE_EQ(evs[0].metrics[0].value, 0.81);
    ASSERT_EQ(evs[1].latency.size(), 2u);
    EXPECT_EQ(evs[1].latency[1].batch_size, 128);
    EXPECT_EQ(evs[1].latency[1].batches, 50);
    EXPECT_DOUBLE_EQ(evs[1].latency[1].p99_ms, 2.5);
    EXPECT_DOUBLE_EQ(evs[1].latency[1].samples_per_s, 64000);
  };
  check(p, 2);

  // A run resumed on the file goes on writing it, and the evaluations stay.
  {
    io::ResumeInfo info;
    io::ResultsWriter w(p, info);
    EXPECT_FALSE(info.mended);
    search::Trial t = trial(2, 0.9);
    w.write_trial(t);
    w.flush();
  }
  EXPECT_EQ(io::ResultsFile::read(p).trials.size(), 2u);
  check(p, 2);
  // Compacting copies them.
  io::compact_results(p, path("c.h5"));
  check(path("c.h5"), 2);
  EXPECT_EQ(io::append_evaluation(path("c.h5"), sample_evaluation(0.83)), 3);
}

// The split and the trace go into /evaluations/latency_split and /evaluations/trace and read
// back; a file whose /evaluations predates them (made here by removing them, which leaves
// exactly what the earlier ranktune wrote) reads as "not measured", and takes a new
// evaluation with them.
TEST_F(EvalFileTest, SplitAndTraceReadBackAndOlderFilesReadAsNotMeasured) {
  const std::string p = path("r.h5");
  {
    io::ResultsWriter w(p, mlp_meta(), mlp_schema(), {});
    search::Trial t = trial(1, 0.8);
    w.write_trial(t);
    w.flush();
  }
  io::Evaluation e = sample_evaluation(0.81);
  for (int i = 0; i < 9; ++i) e.latency[1].parts_ms[i] = 0.1 * (i + 1);
  e.latency[0].parts_ms[3] = 0.05;  // only inference of batch size 1: pre and post not measured
  e.latency[0].parts_ms[4] = 0.06;
  e.latency[0].parts_ms[5] = 0.07;
  e.trace = {{1, 3, 1, 0, 0.0, 0.12, NAN, 0.12, NAN}, {1, 3, 128, 7, 14.5, 2.1, 0.3, 1.6, 0.2}};
  ASSERT_EQ(io::append_evaluation(p, e), 1);
  io::Evaluation plain = sample_evaluation(0.5);  // measured no split (a script's old helper)
  ASSERT_EQ(io::append_evaluation(p, plain), 2);

  std::vector<io::Evaluation> evs = io::read_evaluations(p);
  ASSERT_EQ(evs.size(), 2u);
  ASSERT_EQ(evs[0].latency.size(), 2u);
  for (int i = 0; i < 9; ++i) EXPECT_DOUBLE_EQ(evs[0].latency[1].parts_ms[i], 0.1 * (i + 1)) << i;
  EXPECT_TRUE(std::isnan(evs[0].latency[0].parts_ms[0]));
  EXPECT_DOUBLE_EQ(evs[0].latency[0].parts_ms[4], 0.06);
  EXPECT_TRUE(std::isnan(evs[0].latency[0].parts_ms[8]));
  ASSERT_EQ(evs[0].trace.size(), 2u);
  EXPECT_EQ(evs[0].trace[1].batch, 7);
  EXPECT_EQ(evs[0].trace[1].batch_size, 128);
  EXPECT_DOUBLE_EQ(evs[0].trace[1].start_ms, 14.5);
  EXPECT_DOUBLE_EQ(evs[0].trace[1].inference_ms, 1.6);
  EXPECT_TRUE(std::isnan(evs[0].trace[0].pre_ms));
  EXPECT_FALSE(evs[1].latency[0].has_split());
  EXPECT_TRUE(evs[1].trace.empty());

  // The file of an earlier ranktune: /evaluations without the two tables.
  {
    const hid_t f = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    EXPECT_GE(H5Ldelete(f, "evaluations/trace", H5P_DEFAULT), 0);
    EXPECT_GE(H5Ldelete(f, "evaluations/latency_split", H5P_DEFAULT), 0);
    H5Fclose(f);
  }
  evs = io::read_evaluations(p);
  ASSERT_EQ(evs.size(), 2u);
  EXPECT_DOUBLE_EQ(evs[0].latency[1].p99_ms, 2.5);
  EXPECT_FALSE(evs[0].latency[1].has_split());
  EXPECT_TRUE(evs[0].trace.empty());
  // A new evaluation of it brings the tables, with its own rows only.
  ASSERT_EQ(io::append_evaluation(p, e), 3);
  evs = io::read_evaluations(p);
  ASSERT_EQ(evs.size(), 3u);
  EXPECT_FALSE(evs[0].latency[1].has_split());
  EXPECT_DOUBLE_EQ(evs[2].latency[1].parts_ms[8], 0.9);
  EXPECT_EQ(evs[2].trace.size(), 2u);
}

TEST_F(EvalFileTest, RefusedWhileARunWritesTheFile) {
  const std::string p = path("r.h5");
  io::ResultsWriter w(p, mlp_meta(), mlp_schema(), {});
  w.flush();
  try {
    io::check_recordable(p);
    FAIL() << "a run holds the file";
  } catch (const io::StoreError& e) {
    EXPECT_CONTAINS(e.what(), p + ": evaluations: another process is writing it");
  }
  EXPECT_THROW(io::append_evaluation(p, sample_evaluation(0.8)), io::StoreError);
  EXPECT_THROW(io::append_evaluation(path("missing.h5"), sample_evaluation(0.8)), io::StoreError);
}

// ------------------------------------------------------------------ a real mlp

TEST_F(EvalFileTest, RestoredMlpEvaluatesExactlyAsTheTrainableThatSavedIt) {
  const io::StoreMeta meta = mlp_meta();
  const std::string p = path("mlp.h5");
  const search::Config config = {{"hidden", std::string("32")}, {"lr", 0.05}};

  // Train trial 1 for two steps as a worker would, and store its checkpoint.
  config::ExperimentConfig cfg = config::parse_config(meta.config_text, path("x.toml"),
                                              {"trainable.train_samples=1000", "trainable.val_samples=200",
                                               "trainable.batches_per_step=5"});
  train::read_trainable(cfg);  // the kind's own keys
  train::MlpTrainable original(cfg.trainable);
  train::Context ctx;
  ctx.seed = cfg.seed;
  ctx.trial_id = 1;
  original.setup(config, ctx);
  original.step();
  const double val = original.step().metrics.at("val_accuracy");
  train::CheckpointBytes bytes;
  train::MemoryCheckpointWriter out(bytes);
  original.save(out);
  {
    io::ResultsWriter w(p, meta, mlp_schema(), {});
    search::Trial t = trial(1, val);
    t.config = config;
    t.best_iteration = 2;
    w.write_trial(t);
    w.append_checkpoint(1, 0, 2, 1.0, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    w.flush();
  }
  const train::HeldOutResult direct = original.evaluate_held_out();

  const io::ResultsFile file = io::ResultsFile::read(p);
  config::ExperimentConfig stored = config::stored_config(file);
  train::read_trainable(stored);  // the kind's own keys
  EXPECT_EQ(train::options_of<train::MlpOptions>(stored.trainable).train_samples, 1000);  // the stored overrides were applied
  const LeaderChoice leaders = choose_leaders(file, 3, {}, CheckpointChoice::Best);
  ASSERT_EQ(leaders.leaders.size(), 1u);
  EvalOptions opt;
  opt.device = "cpu";
  opt.batch_sizes = {1, 64};
  opt.latency_s = 0.05;
  opt.warmup = 2;
  opt.min_batches = 5;
  const LeaderEvaluation e = evaluate_leader(file, stored, leaders.leaders[0], opt);
  EXPECT_EQ(e.path, "cpu");
  EXPECT_EQ(e.samples, 10000);
  // Bit for bit: the same weights on the same data through the same code.
  EXPECT_EQ(e.metrics.at("test_accuracy"), direct.metrics.at("test_accuracy"));
  EXPECT_EQ(e.metrics.at("test_loss"), direct.metrics.at("test_loss"));
  EXPECT_GT(e.metrics.at("test_accuracy"), 0.3);  // two steps of 5 batches learn something
  ASSERT_EQ(e.latency.size(), 2u);
  EXPECT_EQ(e.latency[1].batch_size, 64);
  EXPECT_GE(e.latency[1].batches, 5);
  EXPECT_GT(e.latency[1].samples_per_s, 0);
  EXPECT_LE(e.latency[1].p50_s, e.latency[1].p99_s);
  // Each timed batch in three measured parts that make up its time (the rest: the clock
  // reads and the call); the trace holds every batch, or at most 1000 of them.
  for (const LatencyStats& l : e.latency) {
    SCOPED_TRACE(l.batch_size);
    EXPECT_TRUE(l.pre.measured() && l.inference.measured() && l.post.measured());
    if (l.batches <= static_cast<std::int64_t>(kTraceRows))
      EXPECT_EQ(static_cast<std::int64_t>(l.trace.size()), l.batches);
    else  // every k-th, and the slowest unless it is one of them
      EXPECT_LE(l.trace.size() - trace_keep(std::vector<double>(static_cast<std::size_t>(l.batches))).size(), 1u);
    double slowest = 0;
    for (const BatchTime& b : l.trace) slowest = std::max(slowest, b.total_s);
    EXPECT_EQ(slowest, l.max_s);
    // Per batch the parts lie within its time; together they make up nearly all of it (summed
    // over the batches, so that one preempted between the clock reads cannot fail it).
    double parts = 0, totals = 0;
    for (const BatchTime& b : l.trace) {
      EXPECT_GT(b.pre_s, 0);
      EXPECT_GT(b.inference_s, 0);
      EXPECT_GT(b.post_s, 0);
      EXPECT_LE(b.pre_s + b.inference_s + b.post_s, b.total_s);
      parts += b.pre_s + b.inference_s + b.post_s;
      totals += b.total_s;
    }
    EXPECT_GE(parts, 0.8 * totals);
    EXPECT_LE(l.inference.p50_s, l.inference.p99_s);
  }
  // At 64 images the forward pass outweighs the gather and the argmax.
  EXPECT_GT(e.latency[1].inference.p50_s, e.latency[1].post.p50_s);
  // The manifest pins what was evaluated.
  EXPECT_EQ(e.manifest.at("trial"), 1);
  EXPECT_EQ(e.manifest.at("checkpoint").at("iteration"), 2);
  EXPECT_EQ(e.manifest.at("config").at("hidden"), "32");
  EXPECT_EQ(e.manifest.at("held_out").at("files").size(), 2u);
  EXPECT_EQ(e.manifest.at("compute").at("path"), "cpu");

  // Asking for a batch larger than the test set is refused, naming the option.
  opt.batch_sizes = {20000};
  try {
    evaluate_leader(file, stored, leaders.leaders[0], opt);
    FAIL() << "a batch of 20000 from 10000 test images";
  } catch (const std::exception& ex) {
    EXPECT_CONTAINS(ex.what(), "--batch-sizes: 20000 is not in 1..10000");
  }
  // A device name that is not one.
  opt.device = "gpu0";
  EXPECT_THROW(evaluate_leader(file, stored, leaders.leaders[0], opt), std::invalid_argument);
}

TEST_F(EvalFileTest, SyntheticTrainablesHaveNoHeldOutEvaluation) {
  io::StoreMeta meta;
  meta.experiment = "q";
  meta.metric = "loss";
  meta.mode = search::Mode::Min;
  std::ifstream in(std::string(RANKTUNE_SOURCE_DIR) + "/tests/data/quickstart_branin.toml");
  meta.config_text.assign(std::istreambuf_iterator<char>(in), {});
  io::StoreSchema schema;
  schema.metrics = {"loss"};
  const std::string p = path("q.h5");
  {
    io::ResultsWriter w(p, meta, schema, {});
    search::Trial t = trial(1, 0.5);
    w.write_trial(t);
    w.append_checkpoint(1, 0, 1, 1.0, "x");
    w.flush();
  }
  const io::ResultsFile file = io::ResultsFile::read(p);
  const LeaderChoice leaders = choose_leaders(file, 1, {}, CheckpointChoice::Best);
  ASSERT_EQ(leaders.leaders.size(), 1u);
  try {
    evaluate_leader(file, config::stored_config(file), leaders.leaders[0], EvalOptions{});
    FAIL() << "a synthetic trainable was evaluated";
  } catch (const std::invalid_argument& e) {
    EXPECT_CONTAINS(e.what(), "the 'synthetic' trainable has no held-out evaluation");
    EXPECT_CONTAINS(e.what(), "export-checkpoint");
  }
}

// The stored config has no file: its relative paths resolve next to the results file (a
// command's program and workdir, which `ranktune eval` starts it in), not in "<file>:".
TEST_F(EvalFileTest, StoredConfigPathsResolveNextToTheResultsFile) {
  io::StoreMeta meta;
  meta.experiment = "c";
  meta.metric = "loss";
  meta.mode = search::Mode::Min;
  meta.config_text =
      "[experiment]\nname = \"c\"\nmetric = \"loss\"\nmode = \"min\"\n[search]\nalgorithm = \"random\"\n[search.space]\n"
      "x = { uniform = [0.0, 1.0] }\n[trainable]\nkind = \"command\"\ncommand = [\"./train.py\"]\ncheckpoint = true\n";
  io::StoreSchema schema;
  schema.metrics = {"loss"};
  const std::string p = path("c.h5");
  { io::ResultsWriter w(p, meta, schema, {}); }
  config::ExperimentConfig stored = config::stored_config(io::ResultsFile::read(p));
  train::read_trainable(stored);
  const auto& o = train::options_of<train::CommandOptions>(stored.trainable);
  const std::string dir = std::filesystem::absolute(p).parent_path().string();
  EXPECT_EQ(o.command.front(), dir + "/train.py");
  EXPECT_EQ(o.workdir, dir);
}

}  // namespace
}  // namespace ranktune::eval
