// The report's text views: the sparkline of `--trial`, and the ranking across experiments
// (report/trial_view.h, report/cross_leaderboard.h).
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "report/cross_leaderboard.h"
#include "report/trial_view.h"
#include "tests/unit/common/expect_text.h"

namespace ranktune::report {
namespace {

TEST(Sparkline, LowestToHighestWithGapsAndBuckets) {
  EXPECT_EQ(sparkline({0, 1, 2, 3, 4, 5, 6, 7}), "▁▂▃▄▅▆▇█");
  EXPECT_EQ(sparkline({1, NAN, 1}), "▅ ▅");  // flat: the middle; NaN: a gap
  EXPECT_EQ(sparkline({}), "");
  std::vector<double> many(1000);
  for (std::size_t i = 0; i < many.size(); ++i) many[i] = static_cast<double>(i);
  const std::string s = sparkline(many, 10);
  EXPECT_EQ(s.size(), 10u * 3);  // ten 3-byte characters
  EXPECT_EQ(s.substr(0, 3), "▁");
  EXPECT_EQ(s.substr(27), "█");
}

io::ResultsFile experiment(const std::string& path, search::Mode mode, std::vector<double> bests) {
  io::ResultsFile f;
  f.path = path;
  f.meta.experiment = path.substr(0, path.find('.'));
  f.meta.metric = "loss";
  f.meta.mode = mode;
  f.schema.metrics = {"loss", "acc"};
  for (std::size_t i = 0; i < bests.size(); ++i) {
    search::Trial t;
    t.id = static_cast<search::TrialId>(i + 1);
    t.best = bests[i];
    t.best_iteration = 1;
    t.config = {{"lr", 0.1}};
    f.trials.push_back(t);
    f.results.push_back({t.id, 0, 1, 0.0, {bests[i], 1 - bests[i]}});
  }
  return f;
}

TEST(CrossLeaderboard, RanksTrialsOfSeveralFilesTogether) {
  const std::vector<io::ResultsFile> files = {experiment("a.h5", search::Mode::Min, {0.5, NAN, 0.1}),
                                              experiment("b.h5", search::Mode::Min, {0.3, 0.1})};
  const std::string csv = render_cross_leaderboard(files, "", std::nullopt, 0, Format::Csv);
  // Best first; a tie keeps file order; a trial without a value comes last.
  EXPECT_EQ(csv,
            "rank,experiment,file,trial_id,status,end_reason,best,best_iteration,iterations,config\n"
            "1,a,a.h5,3,PENDING,,0.1,1,0,lr=0.1\n"
            "2,b,b.h5,2,PENDING,,0.1,1,0,lr=0.1\n"
            "3,b,b.h5,1,PENDING,,0.3,1,0,lr=0.1\n"
            "4,a,a.h5,1,PENDING,,0.5,1,0,lr=0.1\n"
            "5,a,a.h5,2,PENDING,,,,0,lr=0.1\n");
  // By another metric: each trial's best of that column, in the mode given for it.
  EXPECT_CONTAINS(render_cross_leaderboard(files, "acc", search::Mode::Min, 1, Format::Csv),
                  "1,a,a.h5,1,PENDING,,0.5,1,0,lr=0.1\n");
  EXPECT_CONTAINS(render_cross_leaderboard(files, "acc", search::Mode::Max, 1, Format::Csv),
                  "1,a,a.h5,3,PENDING,,0.9,1,0,lr=0.1\n");
}

// Issue 27 item 5: `--metric val_loss` over accuracy experiments ranked the losses in the
// experiments' mode (max), the worst on top. A metric that is not the experiments' needs its
// own mode: given, or known from a file whose experiment metric it is.
TEST(CrossLeaderboard, AnotherMetricNeedsItsOwnMode) {
  const std::vector<io::ResultsFile> files = {experiment("a.h5", search::Mode::Min, {0.5, 0.1}),
                                              experiment("b.h5", search::Mode::Min, {0.3})};
  try {
    render_cross_leaderboard(files, "acc", std::nullopt, 0, Format::Table);
    FAIL() << "ranked acc in the loss experiments' mode";
  } catch (const std::invalid_argument& e) {
    EXPECT_CONTAINS(e.what(), "--metric acc is not the metric of any of these experiments");
    EXPECT_CONTAINS(e.what(), "give --mode min or --mode max");
  }
  // A file whose experiment metric is acc says its mode (max): the best acc first, for every file.
  io::ResultsFile c = experiment("c.h5", search::Mode::Max, {0.8});
  c.meta.metric = "acc";
  const std::string by_acc = render_cross_leaderboard({files[0], files[1], c}, "acc", std::nullopt, 0, Format::Csv);
  EXPECT_CONTAINS(by_acc, "1,a,a.h5,2,PENDING,,0.9,1,0,lr=0.1\n");
  EXPECT_CONTAINS(by_acc, "2,c,c.h5,1,PENDING,,0.8,1,0,lr=0.1\n");
  EXPECT_CONTAINS(by_acc, "3,b,b.h5,1,PENDING,,0.7,1,0,lr=0.1\n");
  EXPECT_CONTAINS(render_cross_leaderboard({files[0], c}, "acc", std::nullopt, 0, Format::Json), "\"mode\": \"max\"");
  // Two files that rank acc in opposite modes do not say; --mode settles it.
  io::ResultsFile d = experiment("d.h5", search::Mode::Min, {0.4});
  d.meta.metric = "acc";
  EXPECT_THROW(render_cross_leaderboard({c, d}, "acc", std::nullopt, 0, Format::Table), std::invalid_argument);
  EXPECT_CONTAINS(render_cross_leaderboard({c, d}, "acc", search::Mode::Min, 1, Format::Csv), "1,c,c.h5,1,PENDING,,0.2,1,0");
  // --mode against a file's own mode for its own metric: the best worked out again from its
  // results, not the file's best (which is the other way's).
  EXPECT_CONTAINS(render_cross_leaderboard(files, "", search::Mode::Max, 1, Format::Csv), "1,a,a.h5,1,PENDING,,0.5,1,0");
  EXPECT_CONTAINS(render_cross_leaderboard(files, "", search::Mode::Max, 0, Format::Table), "ranked by loss (max)");
}

// Issue 27 item 13b: a trial that ended in ERROR ranked first when it had the best value.
TEST(CrossLeaderboard, ErrorsRankLast) {
  std::vector<io::ResultsFile> files = {experiment("a.h5", search::Mode::Min, {0.5, 0.01, NAN})};
  files[0].trials[1].status = search::TrialStatus::Error;
  files[0].trials[1].end_reason = search::TrialEnd::Error;
  EXPECT_EQ(render_cross_leaderboard(files, "", std::nullopt, 0, Format::Csv),
            "rank,experiment,file,trial_id,status,end_reason,best,best_iteration,iterations,config\n"
            "1,a,a.h5,1,PENDING,,0.5,1,0,lr=0.1\n"
            "2,a,a.h5,3,PENDING,,,,0,lr=0.1\n"
            "3,a,a.h5,2,ERROR,error,0.01,1,0,lr=0.1\n");
}

TEST(CrossLeaderboard, RefusesFilesThatDoNotCompare) {
  const io::ResultsFile a = experiment("a.h5", search::Mode::Min, {0.5});
  io::ResultsFile other_metric = experiment("b.h5", search::Mode::Min, {0.5});
  other_metric.meta.metric = "acc";
  EXPECT_THROW(render_cross_leaderboard({a, other_metric}, "", std::nullopt, 0, Format::Table), std::invalid_argument);
  EXPECT_NO_THROW(render_cross_leaderboard({a, other_metric}, "loss", std::nullopt, 0, Format::Table));
  const io::ResultsFile max = experiment("c.h5", search::Mode::Max, {0.5});
  EXPECT_THROW(render_cross_leaderboard({a, max}, "", std::nullopt, 0, Format::Table), std::invalid_argument);
  EXPECT_THROW(render_cross_leaderboard({a}, "f1", std::nullopt, 0, Format::Table), std::invalid_argument);
  EXPECT_THROW(render_cross_leaderboard({}, "", std::nullopt, 0, Format::Table), std::invalid_argument);
}

}  // namespace
}  // namespace ranktune::report
