// The HTML report's charts: scales and ticks, downsampling, the SVG marks, and the charts
// and page drawn from an in-memory results file (report/scale.h, report/svg_canvas.h,
// report/charts.h, report/html.h).
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "report/charts.h"
#include "report/html.h"
#include "report/run_config.h"
#include "report/scale.h"
#include "report/svg_canvas.h"
#include "tests/unit/common/expect_text.h"

namespace ranktune::report {
namespace {

TEST(Scale, LinearTicksAreRoundAndCoverTheRange) {
  const Scale s = linear_scale(0, 10);
  EXPECT_LT(s.lo, 0);
  EXPECT_GT(s.hi, 10);
  EXPECT_DOUBLE_EQ(s.unit(s.lo), 0);
  EXPECT_DOUBLE_EQ(s.unit(s.hi), 1);
  EXPECT_EQ(s.ticks(5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(s.label(2), "2");
  // A flat range still gets a band and a tick at its value.
  const Scale flat = linear_scale(3, 3);
  EXPECT_LT(flat.lo, 3);
  EXPECT_GT(flat.hi, 3);
  const auto t = flat.ticks();
  EXPECT_TRUE(std::any_of(t.begin(), t.end(), [](double v) { return std::abs(v - 3) < 1e-12; }));
}

TEST(Scale, LogTicksArePowersOfTenOrTheirMultiplesInOneDecade) {
  const Scale wide = log_scale(1e-5, 10);
  EXPECT_EQ(wide.kind, Scale::Kind::Log);
  const auto t = wide.ticks(6);
  ASSERT_FALSE(t.empty());
  for (const double v : t) EXPECT_NEAR(std::log10(v), std::round(std::log10(v)), 1e-9);
  EXPECT_EQ(wide.label(1e-5), "1e-05");
  EXPECT_NEAR(wide.unit(std::sqrt(1e-5 * 10)), 0.5, 1e-9);
  EXPECT_TRUE(std::isnan(wide.unit(0)));  // a log axis cannot place 0
  const Scale narrow = log_scale(2, 30);
  EXPECT_EQ(narrow.ticks(), (std::vector<double>{2, 5, 10, 20}));
}

TEST(Scale, FitChoosesLogOverTwoDecadesOfPositiveValues) {
  EXPECT_EQ(fit_scale({1, 1700}).kind, Scale::Kind::Log);
  EXPECT_EQ(fit_scale({1, 50}).kind, Scale::Kind::Linear);
  EXPECT_EQ(fit_scale({-1, 1700}).kind, Scale::Kind::Linear);  // a log axis cannot show -1
  EXPECT_EQ(fit_scale({1, 50}, LogChoice::Always).kind, Scale::Kind::Log);
  EXPECT_EQ(fit_scale({1, 1700}, LogChoice::Never).kind, Scale::Kind::Linear);
  EXPECT_EQ(fit_scale({-1, 5}, LogChoice::Always).kind, Scale::Kind::Linear);
  // No finite value: a unit range; one value: a band around it.
  const Scale none = fit_scale({NAN, INFINITY});
  EXPECT_EQ(none.lo, 0);
  EXPECT_EQ(none.hi, 1);
  const Scale one = fit_scale({7});
  EXPECT_LT(one.lo, 7);
  EXPECT_GT(one.hi, 7);
}

TEST(Scale, CategoricalAxesHaveABandPerValue) {
  const Scale s = categorical_scale({"relu", "tanh", "gelu", "silu"});
  EXPECT_DOUBLE_EQ(s.unit(0), 0.125);
  EXPECT_DOUBLE_EQ(s.unit(3), 0.875);
  EXPECT_EQ(s.ticks().size(), 4u);
  EXPECT_EQ(s.label(2), "gelu");
  std::vector<std::string> many;
  for (int i = 0; i < 30; ++i) many.push_back("v" + std::to_string(i));
  EXPECT_LE(categorical_scale(many).ticks().size(), 12u);
}

TEST(Downsample, KeepsTheExtremesAndTheEnds) {
  std::vector<std::pair<double, double>> pts;
  for (int i = 0; i < 10000; ++i) pts.emplace_back(i, std::sin(i * 0.01));
  pts[4321].second = -50;  // a spike down
  pts[8765].second = 80;   // and up
  const auto out = downsample(pts, 200);
  EXPECT_LE(out.size(), 200u);
  EXPECT_EQ(out.front(), pts.front());
  EXPECT_EQ(out.back(), pts.back());
  EXPECT_NE(std::find(out.begin(), out.end(), pts[4321]), out.end());
  EXPECT_NE(std::find(out.begin(), out.end(), pts[8765]), out.end());
  EXPECT_TRUE(std::is_sorted(out.begin(), out.end()));
  // Short series and the empty one come back as they are.
  EXPECT_EQ(downsample({{0, 1}, {1, 2}}, 200).size(), 2u);
  EXPECT_TRUE(downsample({}, 200).empty());
}

TEST(SvgCanvas, MarksCarryEscapedTitlesAndNanBreaksALine) {
  SvgCanvas svg(100, 100);
  Panel p{0, 0, 100, 100, linear_scale(0, 10), linear_scale(0, 10)};
  svg.polyline(p, {{0, 1}, {1, 2}, {2, NAN}, {3, 4}, {4, 5}}, {"#000"}, "trial <7> & co");
  const std::string s = svg.str("a \"chart\"");
  EXPECT_EQ(count_in(s, "<polyline"), 2u);
  EXPECT_CONTAINS(s, "<title>trial &lt;7&gt; &amp; co</title>");
  EXPECT_CONTAINS(s, "aria-label=\"a &quot;chart&quot;\"");
  EXPECT_EQ(s.rfind("</svg>\n"), s.size() - 7);
  EXPECT_EQ(ramp_color(0), "#440154");
  EXPECT_EQ(ramp_color(1), "#fde725");
}

// Five trials minimizing a loss that spans 0.84 to 1,700; trial 4 stopped by ASHA at
// iteration 3, trial 5 failed; two workers, each running its trials back to back.
io::ResultsFile asha_file() {
  io::ResultsFile f;
  f.path = "asha.h5";
  f.meta.experiment = "asha";
  f.meta.metric = "loss";
  f.meta.mode = search::Mode::Min;
  f.meta.config_text = "[experiment]\nname = \"asha\"\nmetric = \"loss\"\nmode = \"min\"\nnum_samples = 5\n"
                       "[search.space]\nlr = { loguniform = [0.0001, 1.0] }\nact = { choice = [\"relu\", \"tanh\"] }\n"
                       "[scheduler]\nkind = \"asha\"\n[trainable]\nkind = \"synthetic\"\nfunction = \"sphere\"\n"
                       "[stop]\nmax_t = 9\n";
  f.schema.metrics = {"loss"};
  for (int i = 1; i <= 5; ++i) {
    search::Trial t;
    t.id = i;
    t.status = i == 5 ? search::TrialStatus::Error : search::TrialStatus::Terminated;
    t.iterations = i == 4 ? 3 : 9;
    t.config = {{"lr", std::pow(10.0, -i + 1.0)}, {"act", std::string(i % 2 ? "relu" : "tanh")}};
    // Each rank runs its trials one after the other: rank 2 trials 1, 3, 5, rank 1 trials 2, 4.
    t.start_time = 9.0 * ((i - 1) / 2);
    t.end_time = t.start_time + t.iterations;
    double best = INFINITY;
    for (int it = 1; it <= t.iterations; ++it) {
      const double v = 1700.0 / ((i * it) * (i * it));
      best = std::min(best, v);
      f.results.push_back({t.id, 0, it, t.start_time + it, {v}});
    }
    t.best = best;
    t.best_iteration = t.iterations;
    f.trials.push_back(t);
    f.events.push_back({t.start_time, t.id, 1 + i % 2, search::EventKind::Start, ""});
  }
  f.events.push_back({12.0, 4, 1, search::EventKind::EarlyStop, "stopped by the scheduler"});
  f.workers = {{1, "n1", 0, "cpu", ""}, {2, "n1", 1, "cpu", ""}};
  return f;
}

TEST(Charts, CurvesOfEveryTrialWithLogAxisRungsAndStyles) {
  const io::ResultsFile f = asha_file();
  const RunConfig cfg = run_config(f);
  ASSERT_TRUE(cfg.parsed) << cfg.error;
  const ChartData d = chart_data(f, LogChoice::Auto, &cfg);
  EXPECT_EQ(d.scheduler, "asha");
  EXPECT_EQ(d.curves.size(), 5u);
  const std::string svg = curves_chart(d);
  EXPECT_CONTAINS(svg, "loss (log scale)");  // over three decades
  EXPECT_EQ(count_in(svg, "<title>trial "), 5u);
  EXPECT_CONTAINS(svg, "trial 4 (TERMINATED, stopped by the scheduler)");
  EXPECT_CONTAINS(svg, "stroke=\"#d62728\"");   // the failed trial in red
  EXPECT_CONTAINS(svg, "stroke-dasharray=\"5 3\"");  // the stopped one dashed
  EXPECT_CONTAINS(svg, "rung at iteration 3");
  EXPECT_LACKS(curves_chart(chart_data(f, LogChoice::Never, &cfg)), "(log scale)");
}

// The rungs are drawn for a scheduler whose traits say it has them (search::SchedulerTraits),
// not for one that stops anywhere.
TEST(Charts, RungsOnlyForARungScheduler) {
  io::ResultsFile f = asha_file();
  const std::string asha = "kind = \"asha\"";
  f.meta.config_text.replace(f.meta.config_text.find(asha), asha.size(), "kind = \"median_stopping\"");
  const RunConfig cfg = run_config(f);
  ASSERT_TRUE(cfg.parsed) << cfg.error;
  const ChartData d = chart_data(f, LogChoice::Auto, &cfg);
  EXPECT_EQ(d.scheduler, "median_stopping");
  const std::string svg = curves_chart(d);
  EXPECT_CONTAINS(svg, "trial 4 (TERMINATED, stopped by the scheduler)");
  EXPECT_LACKS(svg, "rung at iteration");
}

TEST(Charts, ParametersOnTheirDomainsScales) {
  const io::ResultsFile f = asha_file();
  const RunConfig cfg = run_config(f);
  ASSERT_TRUE(cfg.parsed) << cfg.error;
  const ChartData d = chart_data(f, LogChoice::Auto, &cfg);
  const std::string pc = parallel_coordinates_chart(d);
  EXPECT_CONTAINS(pc, ">lr (log)</text>");
  EXPECT_CONTAINS(pc, ">relu</text>");
  EXPECT_EQ(count_in(pc, "<polyline"), 5u);
  const std::string sc = scatter_chart(d);
  EXPECT_EQ(count_in(sc, "<circle"), 10u);  // 5 trials x 2 hyperparameters
  EXPECT_CONTAINS(sc, "trial 1: lr=1, loss ");
}

TEST(Charts, TimelineAndUtilization) {
  const io::ResultsFile f = asha_file();
  const RunConfig cfg = run_config(f);
  ASSERT_TRUE(cfg.parsed) << cfg.error;
  const ChartData d = chart_data(f, LogChoice::Auto, &cfg);
  const Utilization u = utilization(d);
  // Trial i runs on rank 1 + i % 2: rank 2 ran trials 1, 3 and 5, rank 1 trials 2 and 4.
  EXPECT_DOUBLE_EQ(u.busy_by_rank.at(2), 9 + 9 + 9);
  EXPECT_DOUBLE_EQ(u.busy_by_rank.at(1), 9 + 3);
  EXPECT_EQ(u.workers, 2u);
  EXPECT_DOUBLE_EQ(u.span, 27);  // from the first starts at 0 to trial 5's last result
  EXPECT_NEAR(u.share(), 39.0 / (2 * 27), 1e-12);
  const std::string svg = timeline_chart(d, u);
  EXPECT_CONTAINS(svg, ">rank 1</text>");
  EXPECT_CONTAINS(svg, "(early_stop)");
}

}  // namespace
}  // namespace ranktune::report
