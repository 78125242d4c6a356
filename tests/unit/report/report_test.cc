// The leaderboard, rendered from a real results file in every format.

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "io/store.h"
#include "report/evaluations.h"
#include "report/leaderboard.h"

namespace ranktune::report {
namespace {

namespace fs = std::filesystem;
using search::TrialStatus;

// Writes a results file with six trials and reads it back:
//   id  status      ended    best  start  end   results
//   1   TERMINATED  max_t    0.5   0      10
//   2   TERMINATED  budget   0.9   1      21
//   3   ERROR       error    NaN   2      3
//   4   RUNNING              0.7   10     -     last at 25 -> wall 15
//   5   PENDING              NaN   -      -
//   6   TERMINATED  stopped  0.9   3      4     (ties with 2: the lower id ranks first)
io::ResultsFile make_file(search::Mode mode) {
  const fs::path p = fs::temp_directory_path() /
                     ("ranktune_report_test_" + std::to_string(getpid()) + ".h5");
  fs::remove(p);
  io::StoreMeta meta;
  meta.experiment = "mnist-asha";
  meta.metric = "acc";
  meta.mode = mode;
  meta.stack = {{"hosts", "n1,n2"}, {"mpi_library", "Open MPI v4.1.4\nbuilt by debian"}, {"hdf5", "1.10.8"}};
  io::StoreSchema schema;
  schema.params = {{"lr", search::ValueType::Float, 0}, {"act", search::ValueType::String, 16}};
  schema.metrics = {"acc"};
  {
    io::ResultsWriter w(p.string(), meta, schema, {{1, "n1", 0, "cpu", ""}, {2, "n2", 0, "cpu", ""}});
    struct Row { TrialStatus status; search::TrialEnd end; double best, start, end_time; };
    using E = search::TrialEnd;
    const Row rows[] = {{TrialStatus::Terminated, E::MaxT, 0.5, 0, 10}, {TrialStatus::Terminated, E::Budget, 0.9, 1, 21},
                        {TrialStatus::Error, E::Error, NAN, 2, 3},       {TrialStatus::Running, E::None, 0.7, 10, NAN},
                        {TrialStatus::Pending, E::None, NAN, NAN, NAN}, {TrialStatus::Terminated, E::Stopped, 0.9, 3, 4}};
    for (int i = 0; i < 6; ++i) {
      search::Trial t;
      t.id = i + 1;
      t.status = rows[i].status;
      t.end_reason = rows[i].end;
      t.best = rows[i].best;
      t.best_iteration = 10 + i;
      // Every trial with a value ran 21 iterations, so the order below is by value alone;
      // DeepestTrialsRankFirst covers the recommendation's tiers (search/recommend.h).
      t.iterations = std::isfinite(rows[i].best) ? 21 : 20 + i;
      t.start_time = rows[i].start;
      t.end_time = rows[i].end_time;
      t.config = {{"lr", 0.125 * (i + 1)}, {"act", std::string(i == 0 ? "a,\"b\"" : "relu")}};
      w.write_trial(t);
    }
    w.append_result(4, 0, 1, 20.0, {{"acc", 0.6}});
    w.append_result(4, 0, 2, 25.0, {{"acc", 0.7}});
    w.append_result(1, 0, 1, 99.0, {{"acc", 0.5}});  // ignored: trial 1 has an end time
  }
  io::ResultsFile file = io::ResultsFile::read(p.string());
  fs::remove(p);
  return file;
}

std::string render(const io::ResultsFile& f, Format format, std::size_t top = 0) {
  return render_leaderboard(f, {top, format});
}

// RFC 4180: fields separated by commas, quoted fields may hold commas, quotes ("") and
// newlines.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    std::string& field = rows.back().back();
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().emplace_back();
    } else if (c == '\n') {
      rows.emplace_back(1);
    } else {
      field += c;
    }
  }
  if (rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();
  return rows;
}

std::vector<std::int64_t> csv_ids(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::int64_t> ids;
  for (std::size_t i = 1; i < rows.size(); ++i) ids.push_back(std::stoll(rows[i][1]));
  return ids;
}

std::vector<std::int64_t> json_ids(const nlohmann::json& j) {
  std::vector<std::int64_t> ids;
  for (const auto& t : j.at("trials")) ids.push_back(t.at("trial_id").get<std::int64_t>());
  return ids;
}

TEST(Leaderboard, ParsesFormatNames) {
  EXPECT_EQ(parse_format("table"), Format::Table);
  EXPECT_EQ(parse_format("csv"), Format::Csv);
  EXPECT_EQ(parse_format("json"), Format::Json);
  EXPECT_EQ(parse_format("markdown"), Format::Markdown);
  EXPECT_EQ(parse_format("md"), Format::Markdown);
  EXPECT_EQ(parse_format("html"), std::nullopt);
  EXPECT_EQ(parse_format(""), std::nullopt);
}

TEST(Leaderboard, CsvIsSortedQuotedAndMachineReadable) {
  const io::ResultsFile f = make_file(search::Mode::Max);
  const auto rows = parse_csv(render(f, Format::Csv));
  ASSERT_EQ(rows.size(), 7u);
  // end_reason: why each trial ended (issue 27 item 9).
  EXPECT_EQ(rows[0], (std::vector<std::string>{"rank", "trial_id", "status", "end_reason", "best", "best_iteration",
                                               "iterations", "wall_s", "lr", "act"}));
  for (const auto& r : rows) ASSERT_EQ(r.size(), 10u);
  // The ERROR trial (3) ranks last (issue 27 item 13b), after the trial without a value.
  EXPECT_EQ(csv_ids(rows), (std::vector<std::int64_t>{2, 6, 4, 1, 5, 3}));
  EXPECT_EQ(rows[1][0], "1");
  EXPECT_EQ(rows[6][0], "6");
  EXPECT_EQ(rows[1][2], "TERMINATED");
  EXPECT_EQ(rows[1][3], "budget");  // the leader was cut by the time budget: it says so
  EXPECT_EQ(rows[2][3], "stopped");
  EXPECT_EQ(rows[3][3], "");        // running
  EXPECT_EQ(rows[6][3], "error");
  EXPECT_EQ(rows[1][4], "0.9");
  EXPECT_EQ(rows[1][5], "11");
  EXPECT_EQ(rows[1][6], "21");
  EXPECT_EQ(rows[1][7], "20");      // end - start
  EXPECT_EQ(rows[3][7], "15");      // running: last result - start
  EXPECT_EQ(rows[5][7], "");        // never started
  EXPECT_EQ(rows[6][4], "");        // no finite best
  EXPECT_EQ(rows[4][9], "a,\"b\"");  // survived quoting
  EXPECT_EQ(rows[4][8], "0.125");
}

TEST(Leaderboard, MinModeSortsAscendingAndTopLimits) {
  const io::ResultsFile f = make_file(search::Mode::Min);
  EXPECT_EQ(csv_ids(parse_csv(render(f, Format::Csv))), (std::vector<std::int64_t>{1, 4, 2, 6, 5, 3}));
  EXPECT_EQ(csv_ids(parse_csv(render(f, Format::Csv, 3))), (std::vector<std::int64_t>{1, 4, 2}));
}

// Issue 27 item 13b: a trial that ended in ERROR ranked first when its value before the
// failure was the best. It ranks last, below the trials without a value.
TEST(Leaderboard, ErrorsRankLast) {
  io::ResultsFile f = make_file(search::Mode::Max);
  f.trials[2].best = 5.0;  // trial 3, ERROR: the best value of all
  EXPECT_EQ(csv_ids(parse_csv(render(f, Format::Csv))), (std::vector<std::int64_t>{2, 6, 4, 1, 5, 3}));
  f.trials[4].status = TrialStatus::Error;  // trial 5: ERROR without a value, after trial 3
  EXPECT_EQ(csv_ids(parse_csv(render(f, Format::Csv))), (std::vector<std::int64_t>{2, 6, 4, 1, 3, 5}));
  EXPECT_EQ(best_first(f).front()->id, 2);
}

// Issue 29: a trial stopped at a low rung with a lucky value does not top the leaderboard:
// the deepest trials rank first, the header says so, and JSON names the recommendation.
TEST(Leaderboard, DeepestTrialsRankFirst) {
  io::ResultsFile f = make_file(search::Mode::Max);
  for (search::Trial& t : f.trials)
    if (t.id == 6) t.iterations = 3;  // stopped at rung 3 with 0.9, tied with trial 2's 0.9 at 21
  for (search::Trial& t : f.trials)
    if (t.id == 1) t.best = 0.95;  // now trial 1 beats trial 2 at the same depth
  const nlohmann::json j = nlohmann::json::parse(render(f, Format::Json));
  EXPECT_EQ(json_ids(j), (std::vector<std::int64_t>{1, 2, 4, 6, 5, 3}));
  EXPECT_EQ(j.at("recommended"), 1);
  EXPECT_EQ(j.at("deepest_iterations"), 21);
  f.trials[0].best = 0.99;
  f.trials[5].best = 5.0;  // better than all, but only 3 iterations deep
  const std::string table = render(f, Format::Table);
  EXPECT_NE(table.find("ranked      the 3 trials that reached iteration 21 first (rank 1 is the recommended config), "
                       "then the 1 stopped sooner"),
            std::string::npos)
      << table;
  const nlohmann::json k = nlohmann::json::parse(render(f, Format::Json));
  EXPECT_EQ(json_ids(k), (std::vector<std::int64_t>{1, 2, 4, 6, 5, 3}));
  // When every trial with a value is equally deep, the header has no "ranked" line.
  EXPECT_EQ(render(make_file(search::Mode::Max), Format::Table).find("ranked "), std::string::npos);
}

TEST(Leaderboard, JsonObject) {
  for (search::Mode mode : {search::Mode::Max, search::Mode::Min}) {
    const bool max = mode == search::Mode::Max;
    SCOPED_TRACE(max ? "max" : "min");
    const io::ResultsFile f = make_file(mode);
    const nlohmann::json j = nlohmann::json::parse(render(f, Format::Json));
    EXPECT_EQ(j.at("experiment"), "mnist-asha");
    EXPECT_EQ(j.at("metric"), "acc");
    EXPECT_EQ(j.at("mode"), max ? "max" : "min");
    EXPECT_EQ(j.at("counts"),
              (nlohmann::json{{"TERMINATED", 3}, {"ERROR", 1}, {"RUNNING", 1}, {"PENDING", 1}}));
    EXPECT_EQ(j.at("end_reasons"), (nlohmann::json{{"max_t", 1}, {"budget", 1}, {"stopped", 1}, {"error", 1}}));
    EXPECT_EQ(json_ids(j), max ? (std::vector<std::int64_t>{2, 6, 4, 1, 5, 3})
                               : (std::vector<std::int64_t>{1, 4, 2, 6, 5, 3}));
    const auto& trials = j.at("trials");
    for (std::size_t i = 0; i < trials.size(); ++i) EXPECT_EQ(trials[i].at("rank"), i + 1);
    const auto& fifth = trials[4];  // trial 5: nothing finite
    EXPECT_TRUE(fifth.at("end_reason").is_null());
    EXPECT_TRUE(fifth.at("best").is_null());
    EXPECT_TRUE(fifth.at("wall_s").is_null());
    EXPECT_TRUE(trials.back().at("best").is_null());  // trial 3, ERROR: last
    EXPECT_EQ(trials.back().at("end_reason"), "error");
    EXPECT_DOUBLE_EQ(trials.back().at("wall_s").get<double>(), 1.0);
    EXPECT_EQ(trials[0].at("config").at("act"), max ? "relu" : "a,\"b\"");
    EXPECT_DOUBLE_EQ(trials[0].at("config").at("lr").get<double>(), max ? 0.25 : 0.125);
  }
  const nlohmann::json top2 = nlohmann::json::parse(render(make_file(search::Mode::Max), Format::Json, 2));
  EXPECT_EQ(json_ids(top2), (std::vector<std::int64_t>{2, 6}));
  EXPECT_EQ(top2.at("counts").at("TERMINATED"), 3);  // counts cover every trial
}

TEST(Leaderboard, TableHasHeaderAndAlignedRows) {
  const io::ResultsFile f = make_file(search::Mode::Max);
  const std::string text = render(f, Format::Table, 4);
  EXPECT_NE(text.find("mnist-asha"), std::string::npos) << text;
  EXPECT_NE(text.find("acc (max)"), std::string::npos) << text;
  EXPECT_NE(text.find("PENDING 1, RUNNING 1, TERMINATED 3, ERROR 1"), std::string::npos) << text;
  EXPECT_NE(text.find("\nended       max_t 1, stopped 1, budget 1, error 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("showing the top 4"), std::string::npos) << text;
  EXPECT_NE(text.find("hosts n1,n2 | Open MPI v4.1.4 | HDF5 1.10.8 | cpu mode, 2 workers"), std::string::npos) << text;
  EXPECT_EQ(text.find("built by debian"), std::string::npos) << text;

  std::istringstream in(text.substr(text.find("\nrank") + 1));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 2u + 4u) << text;  // header, rule, 4 rows
  EXPECT_EQ(lines[1].find_first_not_of("- "), std::string::npos);
  // Right-aligned numeric columns end where the rule's dashes end.
  const std::size_t trial_end = lines[1].find(' ', lines[1].find('-', lines[1].find(' ')));
  for (std::size_t i = 2; i < lines.size(); ++i) EXPECT_NE(lines[i][trial_end - 1], ' ') << lines[i];
  EXPECT_NE(lines[2].find("TERMINATED  budget"), std::string::npos) << lines[2];
  EXPECT_EQ(lines[2].rfind("   1", 0), 0u) << lines[2];
}

// Issue 12 items 1 and 6: the run's warnings (a ctl set not applied, dropped metrics, a
// revert) end the report; JSON lists them all.
TEST(Leaderboard, WarningsEndTheReport) {
  io::ResultsFile f = make_file(search::Mode::Max);
  f.events = {{1.0, 2, 1, search::EventKind::Warning, "trial 2 reported metrics that are not in [trainable] metrics, so they are dropped: f1"},
              {2.0, 3, 2, search::EventKind::Start, ""},
              {3.0, 3, -1, search::EventKind::Warning, "ctl set #ab not applied: the trial ended (TERMINATED) at iteration 3"},
              {4.0, 4, 1, search::EventKind::Revert, "failed before its first result after ctl set channels 8 -> 4: exited with code 1"}};
  const std::string text = render(f, Format::Table);
  const std::size_t at = text.find("\nwarnings    3\n");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_NE(text.find("  trial 2, warning: trial 2 reported metrics", at), std::string::npos) << text;
  EXPECT_NE(text.find("  trial 3, warning: ctl set #ab not applied", at), std::string::npos) << text;
  EXPECT_NE(text.find("  trial 4, revert: failed before its first result after ctl set channels 8 -> 4", at),
            std::string::npos) << text;
  EXPECT_NE(render(f, Format::Markdown).find("### Warnings\n\n- trial 2, warning:"), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(render(f, Format::Json));
  ASSERT_EQ(j.at("warnings").size(), 3u);
  EXPECT_EQ(j["warnings"][1]["message"], "ctl set #ab not applied: the trial ended (TERMINATED) at iteration 3");
  // None recorded: no section (the tables above end the report as before).
  f.events.clear();
  EXPECT_EQ(render(f, Format::Table).find("warnings"), std::string::npos);
}

TEST(Leaderboard, MarkdownTable) {
  const io::ResultsFile f = make_file(search::Mode::Max);
  const std::string text = render(f, Format::Markdown);
  EXPECT_EQ(text.rfind("## Leaderboard: mnist-asha\n", 0), 0u) << text;
  EXPECT_NE(text.find("TERMINATED 3"), std::string::npos);
  EXPECT_NE(text.find("- ended: max_t 1, stopped 1, budget 1, error 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("| rank | trial_id | status | end_reason | best |"), std::string::npos) << text;
  EXPECT_NE(text.find("|---:|---:|---|---|---:|"), std::string::npos) << text;
  EXPECT_NE(text.find("| TERMINATED | budget | 0.9 |"), std::string::npos) << text;
  std::size_t table_lines = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("|", 0) != 0) continue;
    ++table_lines;
    EXPECT_EQ(std::count(line.begin(), line.end(), '|'), 11) << line;
  }
  EXPECT_EQ(table_lines, 2u + 6u);
}

TEST(Leaderboard, EmptyFileRendersEveryFormat) {
  io::ResultsFile f;
  f.meta.experiment = "empty";
  f.meta.metric = "loss";
  f.meta.mode = search::Mode::Min;
  EXPECT_NE(render(f, Format::Table).find("none"), std::string::npos);
  EXPECT_EQ(parse_csv(render(f, Format::Csv)).size(), 1u);
  EXPECT_TRUE(nlohmann::json::parse(render(f, Format::Json)).at("trials").empty());
  EXPECT_NE(render(f, Format::Markdown).find("| rank |"), std::string::npos);
}

}  // namespace
}  // namespace ranktune::report

// ------------------------------------------------------------------ the latency split

namespace ranktune::report {
namespace {

// Two batch sizes of trial 4: batch size 1 with inference only (a script without
// preprocess and postprocess), 64 with all three parts; a trace of three batches.
io::Evaluation split_evaluation() {
  io::Evaluation e;
  e.id = 3;
  e.split = "test";
  e.device = "cpu";
  e.latency = {{4, 2, 1, 30, 0.1, 0.1, 0.2, 0.3, 0.3, 10000}, {4, 2, 64, 20, 2.0, 1.9, 2.2, 2.5, 3.0, 32000}};
  e.latency[0].parts_ms[3] = 0.1;
  e.latency[0].parts_ms[4] = 0.2;
  e.latency[0].parts_ms[5] = 0.3;
  for (int i = 0; i < 9; ++i) e.latency[1].parts_ms[i] = 0.25 * (i + 1);
  e.trace = {{4, 2, 64, 0, 0.0, 1.9, 0.3, 1.4, 0.2}, {4, 2, 64, 1, 2.0, 3.0, 0.4, 2.4, 0.2}, {4, 2, 1, 0, 0.0, 0.1, NAN, 0.1, NAN}};
  return e;
}

TEST(EvaluationSplit, GridHasEachPartsPercentilesBlankWhereNotMeasured) {
  const Grid g = latency_split_grid(split_evaluation());
  ASSERT_EQ(g.head.size(), 12u);
  EXPECT_EQ(g.head[3], "pre p50_ms");
  EXPECT_EQ(g.head[7], "inf p90_ms");
  EXPECT_EQ(g.head[11], "post p99_ms");
  ASSERT_EQ(g.body.size(), 2u);
  EXPECT_EQ(g.body[0][2], "1");
  EXPECT_EQ(g.body[0][3], "");  // pre not measured: blank, not 0
  EXPECT_EQ(g.body[0][6], "0.100");
  EXPECT_EQ(g.body[0][11], "");
  EXPECT_EQ(g.body[1][11], "2.250");
  // An evaluation without a split has no rows, and no charts.
  io::Evaluation plain = split_evaluation();
  for (auto& l : plain.latency) std::fill(std::begin(l.parts_ms), std::end(l.parts_ms), NAN);
  plain.trace.clear();
  EXPECT_TRUE(latency_split_grid(plain).body.empty());
  EXPECT_EQ(latency_split_chart(plain), "");
  EXPECT_EQ(latency_trace_chart(plain), "");
}

TEST(EvaluationSplit, ChartsDrawEachPartAndEachBatchSize) {
  const std::string split = latency_split_chart(split_evaluation());
  // A segment per measured part: batch size 1 has inference only, 64 all three.
  const auto count = [](const std::string& s, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(split, "<title>preprocessing p50: "), 1u);
  EXPECT_EQ(count(split, "<title>inference p50: "), 2u);
  EXPECT_EQ(count(split, "<title>postprocessing p50: "), 1u);
  EXPECT_NE(split.find("not measured + 0.1 ms + not measured"), std::string::npos) << split;
  const std::string trace = latency_trace_chart(split_evaluation());
  EXPECT_NE(trace.find("batch size 64 (2 kept)"), std::string::npos) << trace;
  EXPECT_NE(trace.find("batch size 1 (1 kept)"), std::string::npos) << trace;
  // A line through batch size 64's two batches; batch size 1's one batch a point.
  EXPECT_EQ(count(trace, "<polyline"), 1u);
  EXPECT_EQ(count(trace, "<circle"), 1u);
}

}  // namespace
}  // namespace ranktune::report
