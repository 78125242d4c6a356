// The layout of the results file's tables (issue 16, "Results file size"): a trial's error
// and log tail in /trial_texts rather than in every /trials row, compressed tables for
// writers that flush in bulk, and files written before either still read and resume.

#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/store.h"
#include "io/store_detail.h"

namespace ranktune::io {
namespace {

namespace fs = std::filesystem;
using search::Trial;
using search::TrialStatus;

class ResultsLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("ranktune_layout_test_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

StoreMeta meta() {
  StoreMeta m;
  m.experiment = "layout";
  m.metric = "loss";
  m.mode = search::Mode::Min;
  m.config_text = "[experiment]\nname = \"layout\"\n";
  return m;
}

StoreSchema schema() {
  StoreSchema s;
  s.params = {{"x", search::ValueType::Float, 0}};
  s.metrics = {"loss"};
  return s;
}

Trial trial(search::TrialId id, TrialStatus status, int attempt = 0) {
  Trial t;
  t.id = id;
  t.status = status;
  t.attempt = attempt;
  t.config = {{"x", 0.5}};
  t.start_time = 1.0;
  return t;
}

// A log tail and an error as long as their columns hold, with a multi-byte character, so a
// cut in the wrong place would show.
std::string long_text(char c, std::size_t n) {
  std::string s = "é";
  while (s.size() < n) s.push_back(c);
  return s;
}

struct Dataset {
  std::size_t row_bytes = 0;
  hsize_t rows = 0;
  bool deflate = false;
  bool exists = false;
  std::vector<std::string> columns;
};

// The file type, extent and filters of /NAME, read with the HDF5 API (what h5py sees).
Dataset inspect(const std::string& file, const char* name) {
  Dataset d;
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, H5P_DEFAULT);
  if (f < 0) return d;
  if (H5Lexists(f, name, H5P_DEFAULT) > 0) {
    const hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
    const hid_t type = H5Dget_type(ds), space = H5Dget_space(ds), dcpl = H5Dget_create_plist(ds);
    d.exists = true;
    d.row_bytes = H5Tget_size(type);
    H5Sget_simple_extent_dims(space, &d.rows, nullptr);
    for (int i = 0; i < H5Tget_nmembers(type); ++i) {
      char* member = H5Tget_member_name(type, static_cast<unsigned>(i));
      d.columns.emplace_back(member);
      H5free_memory(member);
    }
    for (int i = 0; i < H5Pget_nfilters(dcpl); ++i) {
      unsigned flags = 0;
      std::size_t n = 0;
      d.deflate = d.deflate ||
                  H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &n, nullptr, 0, nullptr, nullptr) == H5Z_FILTER_DEFLATE;
    }
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Tclose(type);
    H5Dclose(ds);
  }
  H5Fclose(f);
  return d;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

TEST_F(ResultsLayoutTest, TrialRowsHoldNoTextColumns) {
  const std::string p = path("narrow.h5");
  { ResultsWriter w(p, meta(), schema(), {}); }
  const Dataset trials = inspect(p, "trials");
  ASSERT_TRUE(trials.exists);
  EXPECT_FALSE(has(trials.columns, "error"));
  EXPECT_FALSE(has(trials.columns, "log_tail"));
  // 2,744 bytes before (2,304 of them error and log_tail); the hosts column is most of it now.
  EXPECT_LT(trials.row_bytes, 500u);
  const Dataset texts = inspect(p, "trial_texts");
  ASSERT_TRUE(texts.exists);
  EXPECT_EQ(texts.columns, (std::vector<std::string>{"trial_id", "attempt", "error", "log_tail"}));
  EXPECT_FALSE(texts.deflate);  // a live run's writer compresses nothing (WriterOptions)
  EXPECT_FALSE(inspect(p, "trials").deflate);
}

// Issue 27 item 8: the limits a config is held to (io/schema.h) always make a file, and their
// estimate of the row type's bytes is never below HDF5's: where HDF5 first refuses ("object
// header message is too large"), the estimate is over the limit already.
std::vector<ParamColumn> columns(std::size_t n, std::size_t name_length, search::ValueType type) {
  std::vector<ParamColumn> out;
  for (std::size_t i = 0; i < n; ++i) {
    std::string name = "p";  // appended: GCC 12 warns falsely (-Wrestrict) about "p" + ...
    name += std::to_string(i);
    name.resize(std::max(name.size(), name_length), '_');
    out.push_back({name, type, type == search::ValueType::String ? 8u : 0u});
  }
  return out;
}

std::vector<std::string> names_of(const std::vector<ParamColumn>& params) {
  std::vector<std::string> names;
  for (const ParamColumn& p : params) names.push_back(p.name);
  return names;
}

TEST_F(ResultsLayoutTest, ConfigLimitsAlwaysMakeAFileAndTheirEstimateIsSafe) {
  int files = 0;
  const auto makes = [&](const std::vector<ParamColumn>& params, const std::vector<std::string>& metrics) {
    StoreSchema s;
    s.params = params;
    s.metrics = metrics;
    const std::string p = path("limit" + std::to_string(files++) + ".h5");
    try {
      ResultsWriter w(p, meta(), s, {});
      Trial t = trial(1, TrialStatus::Terminated);
      t.config.clear();
      w.write_trial(t);
      w.append_result(1, 0, 1, 1.0, {{metrics.front(), 0.5}});
    } catch (const StoreError&) {
      fs::remove(p);
      return false;
    }
    const ResultsFile f = ResultsFile::read(p);
    fs::remove(p);
    return f.schema.params.size() == params.size() && f.schema.metrics.size() == metrics.size();
  };
  const std::size_t room = kMaxRowTypeBytes - trial_row_type_bytes({});
  const std::size_t per_column = trial_row_type_bytes({"a"}) - trial_row_type_bytes({}) - 1;  // besides the name
  for (const auto type : {search::ValueType::Float, search::ValueType::Int, search::ValueType::String}) {
    SCOPED_TRACE(search::to_string(type));
    // The most columns, each name as long as they leave room for; one name as long as it can be.
    const auto many = columns(kMaxParams, room / kMaxParams - per_column, type);
    ASSERT_LE(trial_row_type_bytes(names_of(many)), kMaxRowTypeBytes);
    EXPECT_TRUE(makes(many, {"loss"}));
    const auto one = columns(1, room - per_column, type);
    ASSERT_LE(trial_row_type_bytes(names_of(one)), kMaxRowTypeBytes);
    EXPECT_TRUE(makes(one, {"loss"}));
  }
  // A row of strings as wide as allowed.
  EXPECT_TRUE(makes({{"s", search::ValueType::String, kMaxParamRowBytes}}, {"loss"}));
  // The metrics of /results, the same way.
  std::vector<std::string> metrics = {"loss"};
  const std::size_t metric_room = kMaxRowTypeBytes - result_row_type_bytes({});
  for (const ParamColumn& c : columns(kMaxMetrics - 1, metric_room / kMaxMetrics - per_column, search::ValueType::Float))
    metrics.push_back(c.name);
  ASSERT_LE(result_row_type_bytes(metrics), kMaxRowTypeBytes);
  EXPECT_TRUE(makes({{"x", search::ValueType::Float, 0}}, metrics));

  // Where HDF5 first refuses float columns (the largest per column) with short, middling and
  // long names, the estimate is over the limit.
  for (const std::size_t length : {std::size_t{2}, std::size_t{40}, std::size_t{1000}}) {
    std::size_t ok = 1, refused = 1;
    while (makes(columns(refused, length, search::ValueType::Float), {"loss"})) ok = refused, refused *= 2;
    while (refused - ok > 1) {
      const std::size_t mid = (ok + refused) / 2;
      (makes(columns(mid, length, search::ValueType::Float), {"loss"}) ? ok : refused) = mid;
    }
    SCOPED_TRACE("names of " + std::to_string(length) + " bytes: HDF5 refuses " + std::to_string(refused) + " columns");
    EXPECT_GT(trial_row_type_bytes(names_of(columns(refused, length, search::ValueType::Float))), kMaxRowTypeBytes);
  }
}

// The writer's check of column names was quadratic: 100,000 names kept rank 0 for minutes.
TEST(ColumnNames, AreCheckedInLinearTime) {
  std::vector<std::string> names;
  for (int i = 0; i < 200000; ++i) names.emplace_back("m").append(std::to_string(i));  // not "m" + ...: a false GCC 12 -Wrestrict
  const auto start = std::chrono::steady_clock::now();
  detail::check_extra_names(detail::kResults, names, "metric");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  names.push_back("m7");
  EXPECT_THROW(detail::check_extra_names(detail::kResults, names, "metric"), StoreError);
  EXPECT_THROW(detail::check_extra_names(detail::kTrials, {"best"}, "parameter"), StoreError);
  EXPECT_THROW(detail::check_extra_names(detail::kTrials, {"error"}, "parameter"), StoreError);  // a legacy column
}

TEST_F(ResultsLayoutTest, LongTextsRoundTripWithARowOnlyPerChange) {
  const std::string p = path("texts.h5");
  const std::string tail = long_text('t', kLogTailLen), error = long_text('e', kErrorLen);
  {
    ResultsWriter w(p, meta(), schema(), {});
    for (int id = 1; id <= 50; ++id) w.write_trial(trial(id, TrialStatus::Running));  // no text: no row
    Trial failed = trial(7, TrialStatus::Error);
    failed.error = error;
    failed.log_tail = tail;
    w.write_trial(failed);
    w.flush();
    w.write_trial(failed);  // the same texts again (a progress rewrite): no row
    Trial retried = trial(9, TrialStatus::Error);
    retried.error = "first failure";
    w.write_trial(retried);
    retried.attempt = 1;
    retried.status = TrialStatus::Running;
    retried.error.clear();  // the retry clears it: a row saying so
    w.write_trial(retried);
    w.flush();
  }
  EXPECT_EQ(inspect(p, "trial_texts").rows, 3u);
  const ResultsFile f = ResultsFile::read(p);
  ASSERT_EQ(f.trials.size(), 50u);
  EXPECT_EQ(f.trials[6].error, error);
  EXPECT_EQ(f.trials[6].log_tail, tail);
  EXPECT_EQ(f.trials[8].error, "");
  EXPECT_EQ(f.trials[8].attempt, 1);
  for (const Trial& t : f.trials)
    if (t.id != 7) {
      EXPECT_TRUE(t.error.empty() && t.log_tail.empty()) << t.id;
    }
}

TEST_F(ResultsLayoutTest, ResumedWriterAddsOnlyChangedTexts) {
  const std::string p = path("resumed.h5");
  Trial t = trial(1, TrialStatus::Error);
  t.error = "boom";
  t.log_tail = "last line\n";
  {
    ResultsWriter w(p, meta(), schema(), {});
    w.write_trial(t);
  }
  {
    ResumeInfo info;
    ResultsWriter w(p, info);
    w.write_trial(t);  // as the file has it: no row
    w.write_trial(trial(2, TrialStatus::Pending));
    Trial other = trial(3, TrialStatus::Error);
    other.log_tail = "resumed and failed\n";
    w.write_trial(other);
  }
  EXPECT_EQ(inspect(p, "trial_texts").rows, 2u);
  const ResultsFile f = ResultsFile::read(p);
  ASSERT_EQ(f.trials.size(), 3u);
  EXPECT_EQ(f.trials[0].error, "boom");
  EXPECT_EQ(f.trials[0].log_tail, "last line\n");
  EXPECT_EQ(f.trials[2].log_tail, "resumed and failed\n");
}

TEST_F(ResultsLayoutTest, TextsOfATrialThatTrialsLacksAreSkipped) {
  // A flush cut short by kill -9 can leave a /trial_texts row without its /trials row.
  const std::string p = path("orphan.h5");
  {
    ResultsWriter w(p, meta(), schema(), {});
    w.write_trial(trial(1, TrialStatus::Running));
    w.write_trial(trial(3, TrialStatus::Running));
  }
  {
    const hid_t f = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    const hid_t ds = H5Dopen2(f, "trial_texts", H5P_DEFAULT);
    const hid_t type = H5Dget_type(ds);
    std::vector<char> row(H5Tget_size(type), 0);
    const std::int64_t ids[] = {2, 5};  // 2: a row never written; 5: past the table
    hsize_t n = 0;
    for (const std::int64_t id : ids) {
      std::memcpy(row.data(), &id, sizeof id);
      std::memcpy(row.data() + 12, "orphan", 6);  // error, after trial_id and attempt
      const hsize_t extent = n + 1;
      H5Dset_extent(ds, &extent);
      const hid_t space = H5Dget_space(ds);
      const hsize_t one = 1;
      H5Sselect_hyperslab(space, H5S_SELECT_SET, &n, nullptr, &one, nullptr);
      const hid_t mem = H5Screate_simple(1, &one, nullptr);
      ASSERT_GE(H5Dwrite(ds, type, mem, space, H5P_DEFAULT, row.data()), 0);
      H5Sclose(mem);
      H5Sclose(space);
      ++n;
    }
    H5Tclose(type);
    H5Dclose(ds);
    H5Fclose(f);
  }
  const ResultsFile f = ResultsFile::read(p);
  ASSERT_EQ(f.trials.size(), 2u);
  EXPECT_EQ(f.trials[0].error, "");
  EXPECT_EQ(f.trials[1].error, "");
}

// tests/data/old_results/failed_attempts.h5.gz: written by ranktune before /trial_texts
// (schema 2), with two trials that failed twice (error and log tail in /trials) and
// warnings longer than an /events row (see the README there).
class OldFileTest : public ResultsLayoutTest {
 protected:
  std::string unpack() {
    const std::string p = path("old.h5");
    EXPECT_EQ(std::system(("gzip -dc " RANKTUNE_SOURCE_DIR "/tests/data/old_results/failed_attempts.h5.gz > '" + p + "'").c_str()), 0);
    return p;
  }
};

void expect_old_texts(const ResultsFile& f) {
  ASSERT_GE(f.trials.size(), 4u);
  for (const search::TrialId id : {1, 2}) {
    const Trial& t = f.trials[static_cast<std::size_t>(id - 1)];
    EXPECT_EQ(t.status, TrialStatus::Error);
    EXPECT_EQ(t.attempt, 1);
    EXPECT_EQ(t.error.rfind("exited with code 1: RuntimeError: the model diverged: layer0.weight has NaN", 0), 0u) << t.error;
    EXPECT_NE(t.log_tail.find("line 59 of trial " + std::to_string(id) + " attempt 1 (raise)"), std::string::npos) << t.log_tail;
    EXPECT_NE(t.log_tail.find("layer39.weight has NaN\n"), std::string::npos);
  }
  EXPECT_TRUE(f.trials[2].error.empty() && f.trials[2].log_tail.empty());
  std::size_t warnings = 0;
  for (const EventRow& e : f.events) {
    if (e.kind != search::EventKind::Warning) continue;
    ++warnings;
    EXPECT_GT(e.message.size(), 700u);
    EXPECT_EQ(e.message.substr(e.message.size() - 15), "to record them)") << e.message;
  }
  EXPECT_EQ(warnings, 2u);
}

TEST_F(OldFileTest, ReadsItsTextsFromTrials) {
  const std::string p = unpack();
  EXPECT_TRUE(has(inspect(p, "trials").columns, "log_tail"));
  EXPECT_FALSE(inspect(p, "trial_texts").exists);
  const ResultsFile f = ResultsFile::read(p);
  EXPECT_EQ(f.meta.schema_version, 2);
  expect_old_texts(f);
}

// Issue 27 item 9: why each trial ended is a /trials column; a file from before it reads, its
// reasons derived from its status and events, and its resume goes on without the column.
TEST_F(ResultsLayoutTest, EndReasonsRoundTrip) {
  const std::string p = path("ends.h5");
  {
    ResultsWriter w(p, meta(), schema(), {});
    const search::TrialEnd ends[] = {search::TrialEnd::MaxT, search::TrialEnd::Budget, search::TrialEnd::None};
    for (search::TrialId id = 1; id <= 3; ++id) {
      Trial t = trial(id, id == 3 ? TrialStatus::Running : TrialStatus::Terminated);
      t.end_reason = ends[id - 1];
      w.write_trial(t);
    }
  }
  EXPECT_TRUE(has(inspect(p, "trials").columns, "end_reason"));
  const ResultsFile f = ResultsFile::read(p);
  ASSERT_EQ(f.trials.size(), 3u);
  EXPECT_EQ(f.trials[0].end_reason, search::TrialEnd::MaxT);
  EXPECT_EQ(f.trials[1].end_reason, search::TrialEnd::Budget);
  EXPECT_EQ(f.trials[2].end_reason, search::TrialEnd::None);
  // A name this reader does not know (a newer ranktune's), or none for an ended trial (an
  // older ranktune's resume wrote the row), reads as what the file tells otherwise.
  {
    const hid_t file = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    const hid_t ds = H5Dopen2(file, "trials", H5P_DEFAULT);
    const hid_t type = H5Dget_type(ds), space = H5Dget_space(ds);
    hsize_t rows = 0;
    H5Sget_simple_extent_dims(space, &rows, nullptr);
    const std::size_t size = H5Tget_size(type);
    const std::size_t at = H5Tget_member_offset(type, static_cast<unsigned>(H5Tget_member_index(type, "end_reason")));
    std::vector<char> data(rows * size);
    ASSERT_GE(H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), 0);
    std::memset(data.data() + 0 * size + at, 0, kEndReasonLen);
    std::memcpy(data.data() + 1 * size + at, "overtime", 8);
    ASSERT_GE(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), 0);
    H5Sclose(space);
    H5Tclose(type);
    H5Dclose(ds);
    H5Fclose(file);
  }
  const ResultsFile edited = ResultsFile::read(p);
  EXPECT_EQ(edited.trials[0].end_reason, search::TrialEnd::Unknown);
  EXPECT_EQ(edited.trials[1].end_reason, search::TrialEnd::Unknown);
  EXPECT_EQ(edited.trials[2].end_reason, search::TrialEnd::None);
}

TEST_F(OldFileTest, EndReasonsAreDerivedFromStatusAndEvents) {
  const std::string p = unpack();
  EXPECT_FALSE(has(inspect(p, "trials").columns, "end_reason"));
  const ResultsFile f = ResultsFile::read(p);
  ASSERT_EQ(f.trials.size(), 4u);
  EXPECT_EQ(f.trials[0].end_reason, search::TrialEnd::Error);
  EXPECT_EQ(f.trials[1].end_reason, search::TrialEnd::Error);
  EXPECT_EQ(f.trials[2].end_reason, search::TrialEnd::Unknown);  // TERMINATED: the file does not say why
  {
    ResumeInfo info;
    ResultsWriter w(p, info);
    Trial t = trial(5, TrialStatus::Terminated);
    t.config = {{"mode", std::string("ok")}, {"x", 0.5}};
    t.end_reason = search::TrialEnd::Budget;
    w.write_trial(t);
  }
  EXPECT_FALSE(has(inspect(p, "trials").columns, "end_reason"));  // the old layout stays whole
  const ResultsFile again = ResultsFile::read(p);
  ASSERT_EQ(again.trials.size(), 5u);
  EXPECT_EQ(again.trials[4].end_reason, search::TrialEnd::Unknown);
}

TEST_F(OldFileTest, ResumedItKeepsTextsInTrials) {
  const std::string p = unpack();
  {
    ResumeInfo info;
    ResultsWriter w(p, info);
    Trial t = trial(5, TrialStatus::Error);
    t.config = {{"mode", std::string("raise")}, {"x", 0.5}};
    t.error = "failed after the resume";
    t.log_tail = long_text('r', kLogTailLen);
    w.write_trial(t);
  }
  EXPECT_FALSE(inspect(p, "trial_texts").exists);  // the old layout stays whole
  const ResultsFile f = ResultsFile::read(p);
  expect_old_texts(f);
  ASSERT_EQ(f.trials.size(), 5u);
  EXPECT_EQ(f.trials[4].error, "failed after the resume");
  EXPECT_EQ(f.trials[4].log_tail, long_text('r', kLogTailLen));
}

TEST_F(ResultsLayoutTest, CompressedTablesReadBackAndCompress) {
  const std::string plain = path("plain.h5"), packed = path("packed.h5");
  for (const bool compress : {false, true}) {
    WriterOptions o;
    o.compress = compress;
    ResultsWriter w(compress ? packed : plain, meta(), schema(), {}, o);
    for (int id = 1; id <= 2000; ++id) {
      Trial t = trial(id, id % 100 ? TrialStatus::Terminated : TrialStatus::Error);
      if (id % 100 == 0) t.log_tail = long_text('z', 1000);
      w.write_trial(t);
      for (int i = 1; i <= 3; ++i) w.append_result(id, 0, i, id + 0.1 * i, {{"loss", 1.0 / (id + i)}});
      w.append_event({static_cast<double>(id), id, 1, search::EventKind::Start, ""});
    }
  }
  for (const char* name : {"trials", "results", "events", "trial_texts"}) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(inspect(plain, name).deflate);
    EXPECT_TRUE(inspect(packed, name).deflate);
  }
  EXPECT_LT(fs::file_size(packed) * 4, fs::file_size(plain));
  const ResultsFile a = ResultsFile::read(plain), b = ResultsFile::read(packed);
  ASSERT_EQ(a.trials.size(), b.trials.size());
  ASSERT_EQ(b.results.size(), 6000u);
  ASSERT_EQ(b.events.size(), 2000u);
  for (std::size_t i = 0; i < a.trials.size(); ++i) {
    EXPECT_EQ(a.trials[i].log_tail, b.trials[i].log_tail);
    EXPECT_EQ(a.trials[i].status, b.trials[i].status);
  }
  EXPECT_EQ(b.trials[99].log_tail, long_text('z', 1000));
}

// The child half of the cross-process SWMR test below: prints what it reads.
TEST(ResultsLayoutChild, PrintCounts) {
  const char* p = std::getenv("RANKTUNE_LAYOUT_TEST_CHILD");
  if (!p) GTEST_SKIP() << "only run by CompressedFileReadsLiveAndAfterAKill";
  try {
    const ResultsFile f = ResultsFile::read(p);
    std::printf("COUNTS %zu %zu %zu %s\n", f.trials.size(), f.results.size(), f.events.size(),
                f.trials.empty() ? "-" : f.trials.back().log_tail.c_str());
  } catch (const std::exception& e) {
    std::printf("ERROR %s\n", e.what());
  }
}

std::string read_in_child(const std::string& p) {
  const std::string cmd = "RANKTUNE_LAYOUT_TEST_CHILD='" + p + "' " + fs::read_symlink("/proc/self/exe").string() +
                          " --gtest_filter=ResultsLayoutChild.PrintCounts 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return "popen failed";
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe)) {
    const std::string line = buf;
    if (line.rfind("COUNTS", 0) == 0 || line.rfind("ERROR", 0) == 0) out = line;
  }
  pclose(pipe);
  return out;
}

TEST_F(ResultsLayoutTest, CompressedFileReadsLiveAndAfterAKill) {
  const std::string p = path("live.h5");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // the writer: flushes, lets the parent read, flushes more, then dies as under kill -9
    WriterOptions o;
    o.compress = true;
    ResultsWriter w(p, meta(), schema(), {}, o);
    for (int round = 1; round <= 3; ++round) {
      for (int id = 1; id <= 300 * round; ++id) {
        Trial t = trial(id, TrialStatus::Running);
        t.iterations = round;
        t.log_tail = "round " + std::to_string(round);
        w.write_trial(t);  // every row rewritten: chunks are rewritten, as in a run
        w.append_result(id, 0, round, round, {{"loss", 0.5}});
      }
      w.append_event({static_cast<double>(round), -1, -1, std::nullopt, std::string(600, 'm'), "round"});  // a kind of its own
      w.flush();
      if (round == 2) {
        std::fclose(std::fopen((p + ".ready").c_str(), "w"));
        while (!fs::exists(p + ".go")) usleep(10000);
      }
    }
    w.append_result(1, 0, 99, 99, {{"loss", 0.5}});  // never flushed
    _exit(0);
  }
  for (int i = 0; i < 3000 && !fs::exists(p + ".ready"); ++i) usleep(10000);
  ASSERT_TRUE(fs::exists(p + ".ready"));
  EXPECT_EQ(read_in_child(p), "COUNTS 600 900 2 round 2\n");  // while the writer holds it
  std::fclose(std::fopen((p + ".go").c_str(), "w"));
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_TRUE(marked_open_for_writing(p));
  EXPECT_EQ(read_in_child(p), "COUNTS 900 1800 3 round 3\n");  // after its death: what it flushed
  ResumeInfo info;
  { ResultsWriter w(p, info); }  // mends it, as `ranktune run --resume` does
  EXPECT_TRUE(info.mended);
  const ResultsFile f = ResultsFile::read(p);
  EXPECT_EQ(f.results.size(), 1800u);
  EXPECT_EQ(f.events.back().message, std::string(600, 'm'));
}

}  // namespace
}  // namespace ranktune::io
