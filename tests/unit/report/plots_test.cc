// `ranktune report --plots` and `--schedule`: a PBT trial's schedule rebuilt from its
// exploit events, and the SVG charts, from an in-memory results file.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/store.h"
#include "report/html.h"
#include "report/plots.h"
#include "report/schedule.h"
#include "report/svg_chart.h"
#include "tests/unit/common/expect_text.h"

namespace ranktune::report {
namespace {

std::string lineage(int donor, int donor_iteration, int iteration, double lr_before, double lr_after) {
  return "{\"donor\":" + std::to_string(donor) + ",\"donor_iteration\":" + std::to_string(donor_iteration) +
         ",\"iteration\":" + std::to_string(iteration) + ",\"before\":{\"lr\":" + std::to_string(lr_before) +
         ",\"opt\":\"sgd\",\"width\":64},\"after\":{\"lr\":" + std::to_string(lr_after) + ",\"opt\":\"sgd\",\"width\":64}}";
}

// Three trials minimizing loss. Trial 2 (the best) was exploited twice: at iteration 4 from
// trial 1's checkpoint of iteration 4, at 8 from trial 3's of iteration 8.
io::ResultsFile pbt_file() {
  io::ResultsFile f;
  f.path = "pbt.h5";
  f.meta.experiment = "pbt";
  f.meta.metric = "loss";
  f.meta.mode = search::Mode::Min;
  f.schema.metrics = {"objective", "loss"};
  const double best[] = {3.0, 1.0, 2.0};
  for (int i = 0; i < 3; ++i) {
    search::Trial t;
    t.id = i + 1;
    t.status = search::TrialStatus::Terminated;
    t.best = best[i];
    t.iterations = 12;
    t.config = {{"lr", 0.1 * (i + 1)}, {"opt", std::string("sgd")}, {"width", std::int64_t{64}}};
    f.trials.push_back(t);
    for (int it = 1; it <= 12; ++it) f.results.push_back({t.id, 0, it, 0.0, {0.0, best[i] + 1.0 / it}});
  }
  f.events.push_back({1.0, 2, 1, search::EventKind::Start, ""});
  f.events.push_back({2.0, 2, 1, search::EventKind::Exploit, lineage(1, 4, 4, 0.2, 0.08)});
  f.events.push_back({3.0, 1, 1, search::EventKind::Exploit, lineage(2, 4, 4, 0.1, 0.3)});  // another trial's
  f.events.push_back({4.0, 2, 1, search::EventKind::Exploit, lineage(3, 8, 8, 0.08, 0.36)});
  return f;
}

TEST(Schedule, RebuildsEveryExploitInOrder) {
  const auto s = trial_schedule(pbt_file(), 2);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].from_iteration, 0);
  EXPECT_EQ(std::get<double>(s[0].config.at("lr")), 0.2);
  EXPECT_EQ(s[0].donor, 0);
  EXPECT_EQ(s[1].from_iteration, 4);
  EXPECT_EQ(s[1].donor, 1);
  EXPECT_EQ(s[1].donor_iteration, 4);
  EXPECT_EQ(std::get<double>(s[1].config.at("lr")), 0.08);
  EXPECT_EQ(s[2].from_iteration, 8);
  EXPECT_EQ(s[2].donor, 3);
  EXPECT_EQ(std::get<double>(s[2].config.at("lr")), 0.36);
  EXPECT_EQ(render_schedule(s, 12),
            "iterations 1-4: lr=0.2 opt=sgd width=64\n"
            "iterations 5-8: lr=0.08 opt=sgd width=64 (from trial 1 at iteration 4)\n"
            "iterations 9-12: lr=0.36 opt=sgd width=64 (from trial 3 at iteration 8)\n");
}

TEST(Schedule, ANeverExploitedTrialHasItsOwnConfig) {
  const auto s = trial_schedule(pbt_file(), 3);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(std::get<double>(s[0].config.at("lr")), 0.1 * 3);
}

TEST(Schedule, BadInputGivesClearErrors) {
  io::ResultsFile f = pbt_file();
  try {
    trial_schedule(f, 9);
    FAIL() << "no error for a missing trial";
  } catch (const std::invalid_argument& e) {
    EXPECT_CONTAINS(std::string(e.what()), "no trial 9 in pbt.h5 (it has 3 trials)");
  }
  f.events.push_back({5.0, 2, 1, search::EventKind::Exploit, "donor 1"});
  try {
    trial_schedule(f, 2);
    FAIL() << "no error for an exploit event without lineage";
  } catch (const std::invalid_argument& e) {
    EXPECT_CONTAINS(std::string(e.what()), "exploit event of trial 2 at time 5");
  }
}

TEST(Schedule, TrialsAreFoundByIdNotByPosition) {
  // A live run's /trials can have rows it has not written yet, which the reader skips: the
  // second trial in the list is then not trial 2.
  io::ResultsFile f = pbt_file();
  f.trials.erase(f.trials.begin());  // trial 1's row not written yet
  const auto s = trial_schedule(f, 3);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(std::get<double>(s[0].config.at("lr")), 0.3);  // trial 3's, not whatever sits at [2]
  EXPECT_THROW(trial_schedule(f, 1), std::invalid_argument);
}

// The fuzzer's findings (tests/fault/README.md): a file another tool wrote gets its page,
// with a line instead of each chart it cannot give, rather than an exception.
TEST(Html, ChartsThatCannotBeDrawnSayWhyAndThePageGoesOn) {
  io::ResultsFile bad_lineage = pbt_file();
  bad_lineage.events.push_back({5.0, 2, 1, search::EventKind::Exploit, "donor 1"});
  const std::string a = render_html(bad_lineage, {}, 0);
  EXPECT_CONTAINS(a, "This chart cannot be drawn: pbt.h5: exploit event of trial 2 at time 5");
  EXPECT_CONTAINS(a, "<h2>Hardware and software stack</h2>");
  // Every chart but the schedule is still there: curves, best so far, parallel coordinates,
  // scatter, timeline, lineage (the page had only the curves before the report grew its
  // other charts, hence 1 once). Importance says in a line that 3 trials are too few for
  // any method (issue 34; a chart of equal shares before, hence 7 once).
  EXPECT_CONTAINS(a, "aria-label=\"learning curves of every trial\"");
  EXPECT_CONTAINS(a, "3 trials with a value, under the 10 any method needs to tell an effect from chance: no shares");
  EXPECT_EQ(count_in(a, "<svg"), 6u);

  io::ResultsFile no_column = pbt_file();
  no_column.meta.metric = "accuracy";
  const std::string b = render_html(no_column, {}, 0);
  EXPECT_CONTAINS(b, "This chart cannot be drawn: pbt.h5: /results has no column for the metric 'accuracy'");
}

TEST(SvgChart, DrawsOneLinePerSeriesWithDataAndEscapesText) {
  Chart c{"a < b & c", "x", "y", {}};
  c.series.push_back({"one", {{0, 1}, {1, 2}}, false});
  c.series.push_back({"nan only", {{0, NAN}}, false});
  c.series.push_back({"steps", {{0, 1}, {2, 3}}, true});
  const std::string svg = render_svg({c, Chart{"empty", "x", "y", {}}});
  EXPECT_EQ(count_in(svg, "<polyline"), 2u);
  EXPECT_CONTAINS(svg, "a &lt; b &amp; c");
  EXPECT_LACKS(svg, "a < b");
  EXPECT_CONTAINS(svg, "no data");  // the second chart
  EXPECT_EQ(svg.rfind("</svg>\n"), svg.size() - 7);
}

TEST(Plots, LearningCurvesOfTheBestTrialsInLeaderboardOrder) {
  const std::string svg = learning_curves_svg(pbt_file(), 2);
  EXPECT_EQ(count_in(svg, "<polyline"), 2u);
  const auto first = svg.find(">trial 2<"), second = svg.find(">trial 3<");
  ASSERT_NE(first, std::string::npos);
  ASSERT_NE(second, std::string::npos);
  EXPECT_LT(first, second);
  EXPECT_LACKS(svg, ">trial 1<");
}

TEST(Plots, ScheduleHasAChartPerNumericParameterAndTheMetric) {
  const std::string svg = schedule_svg(pbt_file(), 2);
  EXPECT_CONTAINS(svg, "trial 2: lr (2 exploits)");
  EXPECT_CONTAINS(svg, "trial 2: width (2 exploits)");
  EXPECT_LACKS(svg, "trial 2: opt");  // a string: no axis for it
  EXPECT_CONTAINS(svg, "trial 2: loss");
  EXPECT_EQ(count_in(svg, "<polyline"), 3u);
}

}  // namespace
}  // namespace ranktune::report
