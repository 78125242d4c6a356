// The results file: round trips, group commit, SWMR reading, and never trusting the file.

#include <hdf5.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/store.h"

namespace ranktune::io {
namespace {

namespace fs = std::filesystem;
using search::Trial;
using search::TrialStatus;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("ranktune_store_test_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

StoreMeta sample_meta() {
  StoreMeta m;
  m.experiment = "mnist-asha";
  m.metric = "acc";
  m.mode = search::Mode::Max;
  m.config_text = "[experiment]\nname = \"mnist-asha\"\n";
  m.overrides = "search.samples=8\nscheduler.name=asha";
  m.command_line = "ranktune run exp.toml";
  m.algorithm = "gp";
  m.created = "2024-01-02T03:04:05Z";
  m.stack = {{"hosts", "n1,n2"}, {"mpi_library", "Open MPI v4.1.4\nbuilt here"}, {"hdf5", "1.10.8"}};
  return m;
}

StoreSchema sample_schema() {
  StoreSchema s;
  s.params = {{"lr", search::ValueType::Float, 0},
              {"layers", search::ValueType::Int, 0},
              {"act", search::ValueType::String, 8}};
  s.metrics = {"acc", "loss"};
  return s;
}

std::vector<WorkerInfo> sample_workers() {
  return {{1, "n1", 0, "cpu", "Intel Xeon"}, {2, "n2", 0, "cuda:0", "NVIDIA H200"}};
}

Trial make_trial(search::TrialId id, TrialStatus status, double best) {
  Trial t;
  t.id = id;
  t.status = status;
  t.config = {{"lr", 0.001 * static_cast<double>(id)},
              {"layers", std::int64_t{id + 1}},
              {"act", std::string(id % 2 ? "relu" : "tanh")}};
  t.attempt = static_cast<int>(id % 2);
  t.iterations = 10 * id;
  t.best = best;
  t.best_iteration = 3 * id;
  t.last = best / 2;
  t.start_time = 1.5 * static_cast<double>(id);
  t.end_time = status == TrialStatus::Terminated ? 100.0 + static_cast<double>(id) : NAN;
  t.workers = status == TrialStatus::Running ? std::vector<int>{1, 2, 17} : std::vector<int>{};
  if (status == TrialStatus::Running) t.hosts = {"n1", "n1", "n9"};
  t.error = status == TrialStatus::Error ? "boom: exit code 3" : "";
  t.log_tail = "line 1\nline 2";
  return t;
}

void expect_same_double(double a, double b) {
  if (std::isnan(a)) {
    EXPECT_TRUE(std::isnan(b));
  } else {
    EXPECT_DOUBLE_EQ(a, b);
  }
}

void expect_same_trial(const Trial& a, const Trial& b) {
  SCOPED_TRACE("trial " + std::to_string(a.id));
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.config, b.config);
  EXPECT_EQ(a.attempt, b.attempt);
  EXPECT_EQ(a.iterations, b.iterations);
  expect_same_double(a.best, b.best);
  EXPECT_EQ(a.best_iteration, b.best_iteration);
  expect_same_double(a.last, b.last);
  expect_same_double(a.start_time, b.start_time);
  expect_same_double(a.end_time, b.end_time);
  EXPECT_EQ(a.workers, b.workers);
  EXPECT_EQ(a.hosts, b.hosts);
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.log_tail, b.log_tail);
}

// Expects `path` to be rejected with a one-line StoreError that names it and contains
// `needle`; returns the message.
std::string expect_store_error(const std::string& path, const std::string& needle) {
  try {
    ResultsFile::read(path);
  } catch (const StoreError& e) {
    std::string what = e.what();
    EXPECT_EQ(what.rfind(path + ": ", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << what;
    EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0) << "a handle leaked";
    return what;
  }
  ADD_FAILURE() << path << " was read without error";
  return "";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A complete, closed results file with `results` result rows.
void write_sample_file(const std::string& path, int results = 100) {
  ResultsWriter w(path, sample_meta(), sample_schema(), sample_workers());
  for (int id = 1; id <= 6; ++id)
    w.write_trial(make_trial(id, id % 3 ? TrialStatus::Terminated : TrialStatus::Error, 0.1 * id));
  for (int i = 0; i < results; ++i)
    w.append_result(1 + i % 6, 0, i, 0.5 * i, {{"acc", 0.001 * i}, {"loss", 1.0 / (1 + i)}});
  for (int i = 0; i < 20; ++i) w.append_event({0.1 * i, 1 + i % 6, 1, search::EventKind::Start, "trial started"});
}

TEST_F(StoreTest, RoundTripsEveryTable) {
  const std::string p = path("r.h5");
  std::vector<Trial> expected = {make_trial(1, TrialStatus::Terminated, 0.9),
                                 make_trial(3, TrialStatus::Running, 0.7),
                                 make_trial(5, TrialStatus::Error, NAN)};
  {
    ResultsWriter w(p, sample_meta(), sample_schema(), sample_workers());
    EXPECT_EQ(w.path(), p);
    // Out of order, with gaps (2 and 4 never written), and trial 3 rewritten: the latest wins.
    w.write_trial(expected[2]);
    w.write_trial(make_trial(3, TrialStatus::Pending, NAN));
    w.write_trial(expected[0]);
    w.flush();
    w.write_trial(expected[1]);
    w.append_result(1, 0, 1, 2.5, {{"acc", 0.5}, {"loss", 1.25}, {"unknown", 7}});
    w.append_result(1, 0, 2, 3.5, {{"acc", NAN}});  // loss missing -> NaN too
    w.append_result(3, 1, 1, 4.0, {{"acc", 0.7}, {"loss", -INFINITY}});
    w.append_event({1.0, 1, 2, search::EventKind::Start, "on rank 2"});
    w.append_event({2.0, -1, -1, search::EventKind::Checkpoint, "global"});
    EXPECT_EQ(w.pending(), 6u);
    w.flush();
    EXPECT_EQ(w.pending(), 0u);
  }

  const ResultsFile f = ResultsFile::read(p);
  EXPECT_EQ(f.path, p);
  const StoreMeta m = sample_meta();
  EXPECT_EQ(f.meta.experiment, m.experiment);
  EXPECT_EQ(f.meta.metric, m.metric);
  EXPECT_EQ(f.meta.mode, search::Mode::Max);
  EXPECT_EQ(f.meta.config_text, m.config_text);
  EXPECT_EQ(f.meta.overrides, m.overrides);
  EXPECT_EQ(f.meta.command_line, m.command_line);
  EXPECT_EQ(f.meta.algorithm, "gp");  // the searcher the run chose (issue 29), for a resume
  EXPECT_EQ(f.meta.created, m.created);
  EXPECT_EQ(f.meta.created_unix, 1704164645);  // the same instant, in epoch seconds (issue 12 item 3)
  EXPECT_EQ(f.meta.stack, m.stack);
  EXPECT_EQ(f.meta.schema_version, kSchemaVersion);
  EXPECT_FALSE(f.meta.ranktune_version.empty());

  ASSERT_EQ(f.schema.params.size(), 3u);
  EXPECT_EQ(f.schema.params[0].name, "lr");
  EXPECT_EQ(f.schema.params[0].type, search::ValueType::Float);
  EXPECT_EQ(f.schema.params[1].type, search::ValueType::Int);
  EXPECT_EQ(f.schema.params[2].type, search::ValueType::String);
  EXPECT_EQ(f.schema.params[2].length, 8u);
  EXPECT_EQ(f.schema.metrics, (std::vector<std::string>{"acc", "loss"}));

  ASSERT_EQ(f.trials.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) expect_same_trial(expected[i], f.trials[i]);

  ASSERT_EQ(f.results.size(), 3u);
  EXPECT_EQ(f.results[0].trial, 1);
  EXPECT_EQ(f.results[0].iteration, 1);
  EXPECT_DOUBLE_EQ(f.results[0].time, 2.5);
  EXPECT_EQ(f.results[0].values, (std::vector<double>{0.5, 1.25}));
  EXPECT_TRUE(std::isnan(f.results[1].values[0]));
  EXPECT_TRUE(std::isnan(f.results[1].values[1]));
  EXPECT_EQ(f.results[2].attempt, 1);
  EXPECT_EQ(f.results[2].values[1], -INFINITY);

  ASSERT_EQ(f.events.size(), 2u);
  EXPECT_EQ(f.events[0].kind_name(), "start");
  EXPECT_EQ(f.events[0].message, "on rank 2");
  EXPECT_EQ(f.events[0].worker, 2);
  EXPECT_EQ(f.events[1].trial, -1);
  EXPECT_DOUBLE_EQ(f.events[1].time, 2.0);

  ASSERT_EQ(f.workers.size(), 2u);
  EXPECT_EQ(f.workers[1].rank, 2);
  EXPECT_EQ(f.workers[1].host, "n2");
  EXPECT_EQ(f.workers[1].device, "cuda:0");
  EXPECT_EQ(f.workers[1].device_name, "NVIDIA H200");
}

TEST_F(StoreTest, DestructorFlushesBufferedRows) {
  const std::string p = path("d.h5");
  {
    ResultsWriter w(p, sample_meta(), sample_schema(), {});
    w.write_trial(make_trial(2, TrialStatus::Pending, NAN));
    w.append_result(2, 0, 1, 1.0, {{"acc", 0.25}});
  }
  const ResultsFile f = ResultsFile::read(p);
  ASSERT_EQ(f.trials.size(), 1u);
  EXPECT_EQ(f.trials[0].id, 2);
  ASSERT_EQ(f.results.size(), 1u);
  EXPECT_TRUE(f.workers.empty());
}

TEST_F(StoreTest, AppendsAcrossManyFlushes) {
  const std::string p = path("many.h5");
  {
    ResultsWriter w(p, sample_meta(), sample_schema(), {});
    for (int batch = 0; batch < 7; ++batch) {
      for (int i = 0; i < 300; ++i) w.append_result(1, 0, batch * 300 + i, i, {{"acc", i * 1.0}});
      w.flush();
    }
  }
  const ResultsFile f = ResultsFile::read(p);
  ASSERT_EQ(f.results.size(), 2100u);
  for (std::size_t i = 0; i < f.results.size(); ++i) ASSERT_EQ(f.results[i].iteration, static_cast<std::int64_t>(i));
}

TEST_F(StoreTest, TruncatesLongStringsOnUtf8Boundaries) {
  const std::string p = path("utf8.h5");
  Trial t = make_trial(1, TrialStatus::Error, NAN);
  t.error.clear();
  for (int i = 0; i < 200; ++i) t.error += "\xC3\xA9";  // "é", 2 bytes: 400 bytes in all
  t.error = "x" + t.error;                             // odd offset: a cut at 256 splits a char
  t.workers.clear();
  for (int r = 100; r < 140; ++r) t.workers.push_back(r);  // 40 * 4 - 1 bytes > kWorkersLen
  {
    ResultsWriter w(p, sample_meta(), sample_schema(), {});
    w.write_trial(t);
  }
  const ResultsFile f = ResultsFile::read(p);
  ASSERT_EQ(f.trials.size(), 1u);
  const std::string& e = f.trials[0].error;
  EXPECT_EQ(e.size(), kErrorLen - 1);  // 1 + 127 * 2: the split character is dropped
  EXPECT_EQ(e, t.error.substr(0, e.size()));
  // Whole numbers only: 16 ranks "100,...,115" take 63 bytes.
  EXPECT_EQ(f.trials[0].workers, std::vector<int>(t.workers.begin(), t.workers.begin() + 16));
}

TEST_F(StoreTest, HostsAreKeptInOrderCutBetweenNamesAndAreNoParameter) {
  // /trials.hosts: the hosts of the ranks, in order, cut between names (issue 12 item 4).
  const std::string p = path("hosts.h5");
  Trial t = make_trial(1, TrialStatus::Terminated, 0.5);
  t.ran_on = {3, 4};
  t.hosts = {"node-a", "node-b"};
  Trial gang = make_trial(2, TrialStatus::Terminated, 0.7);
  for (int i = 0; i < 40; ++i) gang.hosts.push_back("host-" + std::to_string(i));  // 289 bytes joined
  {
    ResultsWriter w(p, sample_meta(), sample_schema(), {});
    w.write_trial(t);
    w.write_trial(gang);
  }
  ResultsFile f = ResultsFile::read(p);
  ASSERT_EQ(f.trials.size(), 2u);
  EXPECT_EQ(f.trials[0].hosts, (std::vector<std::string>{"node-a", "node-b"}));
  // Whole names only: host-0..host-32 take 10 * 6 + 23 * 7 + 32 commas = 253 of 256 bytes.
  EXPECT_EQ(f.trials[1].hosts.size(), 33u);
  EXPECT_EQ(f.trials[1].hosts.back(), "host-32");
  // "hosts" is not a hyperparameter.
  for (const auto& c : f.schema.params) EXPECT_NE(c.name, "hosts");
  EXPECT_EQ(f.trials[0].config, t.config);
}

TEST_F(StoreTest, LargeConfigTextBecomesADataset) {
  const std::string p = path("big.h5");
  StoreMeta meta = sample_meta();
  meta.config_text = std::string(100 * 1024, 'c') + "end";
  { ResultsWriter w(p, meta, sample_schema(), {}); }
  EXPECT_EQ(ResultsFile::read(p).meta.config_text, meta.config_text);
  hid_t file = H5Fopen(p.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  EXPECT_GT(H5Lexists(file, "config", H5P_DEFAULT), 0);
  EXPECT_EQ(H5Aexists(file, "config"), 0);
  H5Fclose(file);
}

TEST_F(StoreTest, RefusesToOverwriteAnExistingFile) {
  const std::string p = path("exists.h5");
  spit(p, "precious");
  try {
    ResultsWriter w(p, sample_meta(), sample_schema(), {});
    FAIL() << "overwrote " << p;
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(p + ": already exists"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(p), "precious");
}

TEST_F(StoreTest, RejectsColumnNameClashesAndLeavesNoFile) {
  const std::string p = path("clash.h5");
  StoreSchema schema = sample_schema();
  schema.metrics.push_back("time");  // a fixed /results column
  EXPECT_THROW(ResultsWriter(p, sample_meta(), schema, {}), StoreError);
  EXPECT_FALSE(fs::exists(p));
  schema = sample_schema();
  schema.params.push_back({"lr", search::ValueType::Int, 0});
  EXPECT_THROW(ResultsWriter(p, sample_meta(), schema, {}), StoreError);
  EXPECT_FALSE(fs::exists(p));
}

TEST_F(StoreTest, RejectsTrialIdsOutOfRange) {
  ResultsWriter w(path("ids.h5"), sample_meta(), sample_schema(), {});
  EXPECT_THROW(w.write_trial(make_trial(0, TrialStatus::Pending, NAN)), StoreError);
  EXPECT_THROW(w.write_trial(make_trial(-3, TrialStatus::Pending, NAN)), StoreError);
  EXPECT_EQ(w.pending(), 0u);
}

TEST_F(StoreTest, MissingParamValuesReadBackAsAbsentKeys) {
  const std::string p = path("missing.h5");
  Trial t = make_trial(1, TrialStatus::Pending, NAN);
  t.config = {{"layers", std::int64_t{4}}};
  { ResultsWriter(p, sample_meta(), sample_schema(), {}).write_trial(t); }
  EXPECT_EQ(ResultsFile::read(p).trials.at(0).config, t.config);
}

TEST_F(StoreTest, SchemaFromSpace) {
  auto domain = [](search::DomainKind kind, double low, double high,
                   std::vector<search::Value> values = {}) {
    search::Domain d;
    d.kind = kind;
    d.low = low;
    d.high = high;
    d.values = std::move(values);
    return d;
  };
  search::Space space;
  space.params.push_back({"lr", domain(search::DomainKind::LogUniform, 1e-4, 1e-1)});
  space.params.push_back({"n", domain(search::DomainKind::RandInt, 1, 10)});
  space.params.push_back({"act", domain(search::DomainKind::Choice, 0, 0,
                                        {std::string("relu"), std::string("a_much_longer_name")})});
  space.params.push_back({"opt", domain(search::DomainKind::Grid, 0, 0, {std::string("a"), std::string("b")})});

  const StoreSchema s = StoreSchema::from(space, {"acc"});
  ASSERT_EQ(s.params.size(), 4u);
  EXPECT_EQ(s.params[0].type, search::ValueType::Float);
  EXPECT_EQ(s.params[1].type, search::ValueType::Int);
  EXPECT_EQ(s.params[2].type, search::ValueType::String);
  EXPECT_EQ(s.params[2].length, 18u);
  EXPECT_EQ(s.params[3].length, 8u);
  EXPECT_EQ(s.metrics, std::vector<std::string>{"acc"});
}

// ---------------------------------------------------------------- live (SWMR) reading

TEST_F(StoreTest, SecondHandleSeesFlushedRowsWhileWriterIsOpen) {
  const std::string p = path("live.h5");
  ResultsWriter w(p, sample_meta(), sample_schema(), sample_workers());
  w.write_trial(make_trial(1, TrialStatus::Running, 0.5));
  w.append_result(1, 0, 1, 1.0, {{"acc", 0.5}});
  w.flush();
  w.append_result(1, 0, 2, 2.0, {{"acc", 0.6}});  // buffered: not visible yet

  const ResultsFile f = ResultsFile::read(p);
  EXPECT_EQ(f.trials.size(), 1u);
  EXPECT_EQ(f.results.size(), 1u);
  EXPECT_EQ(f.workers.size(), 2u);
}

// The child half of the cross-process test below: reads the file named by the environment
// and prints its row counts. Skipped when run on its own.
TEST(StoreSwmrChild, PrintCounts) {
  const char* p = std::getenv("RANKTUNE_STORE_TEST_CHILD");
  if (!p) GTEST_SKIP() << "only run by SwmrReaderInAnotherProcess";
  try {
    const ResultsFile f = ResultsFile::read(p);
    std::printf("COUNTS %zu %zu %zu\n", f.trials.size(), f.results.size(), f.events.size());
  } catch (const std::exception& e) {
    std::printf("ERROR %s\n", e.what());
  }
}

std::string read_in_child(const std::string& p) {
  const std::string cmd = "RANKTUNE_STORE_TEST_CHILD='" + p + "' " +
                          fs::read_symlink("/proc/self/exe").string() +
                          " --gtest_filter=StoreSwmrChild.PrintCounts 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return "popen failed";
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe)) {
    std::string line = buf;
    if (line.rfind("COUNTS", 0) == 0 || line.rfind("ERROR", 0) == 0) out = line;
  }
  pclose(pipe);
  return out;
}

TEST_F(StoreTest, SwmrReaderInAnotherProcess) {
  const std::string p = path("swmr.h5");
  ResultsWriter w(p, sample_meta(), sample_schema(), sample_workers());
  w.write_trial(make_trial(2, TrialStatus::Running, 0.5));
  for (int i = 0; i < 5; ++i) w.append_result(2, 0, i, i, {{"acc", 0.1 * i}});
  w.append_event({0.0, 2, 1, search::EventKind::Start, ""});
  w.flush();
  EXPECT_EQ(read_in_child(p), "COUNTS 1 5 1\n");

  w.write_trial(make_trial(1, TrialStatus::Running, 0.4));
  for (int i = 0; i < 2000; ++i) w.append_result(1, 0, i, i, {{"acc", 0.1}});
  w.flush();
  w.append_event({1.0, 1, 1, search::EventKind::Start, ""});  // not flushed
  EXPECT_EQ(read_in_child(p), "COUNTS 2 2005 1\n");
}

TEST_F(StoreTest, RowsFlushedBeforeAKillSurvive) {
  const std::string p = path("killed.h5");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // the writer dies without closing the file, as under kill -9
    ResultsWriter w(p, sample_meta(), sample_schema(), {});
    w.write_trial(make_trial(1, TrialStatus::Running, 0.5));
    w.append_result(1, 0, 1, 1.0, {{"acc", 0.5}});
    w.flush();
    w.append_result(1, 0, 2, 2.0, {{"acc", 0.6}});
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  const ResultsFile f = ResultsFile::read(p);
  EXPECT_EQ(f.trials.size(), 1u);
  EXPECT_EQ(f.results.size(), 1u);
}

TEST_F(StoreTest, AKilledWritersFileIsMendedWhateverItsPathHolds) {
  // h5clear runs without a shell, so a name that a shell would need quoted is mended like
  // any other (it was refused: "the path contains a quote").
  const std::string p = path("it's a $HOME `file`.h5");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // the writer dies holding the file open for SWMR writing, as under kill -9
    ResultsWriter w(p, sample_meta(), sample_schema(), {});
    w.write_trial(make_trial(1, TrialStatus::Running, 0.5));
    w.append_result(1, 0, 1, 1.0, {{"acc", 0.5}});
    w.flush();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_TRUE(marked_open_for_writing(p));
  ResumeInfo info;
  {
    ResultsWriter w(p, info);
    EXPECT_TRUE(info.mended);
  }
  EXPECT_FALSE(marked_open_for_writing(p));
  const ResultsFile f = ResultsFile::read(p);
  EXPECT_EQ(f.trials.size(), 1u);
  EXPECT_EQ(f.results.size(), 1u);
}

// ---------------------------------------------------------------- whose file a writer writes

// README, "Threat model" (issue 27): a writer of an existing results file (a resume, eval)
// refuses a file that others may change, another user's, and any link, before HDF5 opens
// it, and leaves it as it was. tests/fault/results_file_owner.sh has a real second user.
TEST_F(StoreTest, AWriterRefusesAFileOthersMayChangeAnotherUsersOrALink) {
  const std::string p = path("open.h5");
  { ResultsWriter w(p, sample_meta(), sample_schema(), {}); }
  fs::permissions(p, fs::perms(0666));
  const std::string before = slurp(p);
  ResumeInfo info;
  try {
    ResultsWriter w(p, info);
    FAIL() << "resumed " << p;
  } catch (const UnsafeFileError& e) {
    EXPECT_NE(std::string(e.what()).find(p + " has mode 0666, which lets other users change it"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(read_for_resume(p), UnsafeFileError);
  EXPECT_EQ(slurp(p), before);
  fs::permissions(p, fs::perms(0644));
  if (::geteuid() == 0) {  // root may give it away: a file of another user
    ASSERT_EQ(::chown(p.c_str(), 65534, static_cast<gid_t>(-1)), 0);
    try {
      ResultsWriter w(p, info);
      FAIL() << "resumed another user's file";
    } catch (const UnsafeFileError& e) {
      EXPECT_NE(std::string(e.what()).find("belongs to uid 65534"), std::string::npos) << e.what();
    }
    EXPECT_EQ(slurp(p), before);
    ASSERT_EQ(::chown(p.c_str(), 0, static_cast<gid_t>(-1)), 0);
  }
  // A link to it, which is ours and 0644 now: not written through.
  fs::create_symlink(p, path("link.h5"));
  try {
    ResultsWriter w(path("link.h5"), info);
    FAIL() << "resumed through a link";
  } catch (const UnsafeFileError& e) {
    EXPECT_NE(std::string(e.what()).find("link.h5 is a symbolic link"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(p), before);
  // A dangling link: no file is made through it (HDF5's answer was a raw "File exists").
  fs::create_symlink(path("nowhere.h5"), path("dangling.h5"));
  try {
    ResultsWriter w(path("dangling.h5"), sample_meta(), sample_schema(), {});
    FAIL() << "created a file through a dangling link";
  } catch (const UnsafeFileError& e) {
    EXPECT_NE(std::string(e.what()).find("dangling.h5 is a symbolic link to " + path("nowhere.h5") +
                                         " (which does not exist)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(path("nowhere.h5")));
  EXPECT_TRUE(fs::is_symlink(path("dangling.h5")));  // left for its owner to remove
  // Ours, 0644, by its own name: resumes.
  ResultsWriter w(p, info);
}

TEST_F(StoreTest, AFileIsMadeWithoutGroupOrOtherWriteWhateverTheUmask) {
  const mode_t old = ::umask(0);
  { ResultsWriter w(path("u.h5"), sample_meta(), sample_schema(), {}); }
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(path("u.h5").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  ResumeInfo info;
  ResultsWriter w(path("u.h5"), info);  // its own file resumes
}

TEST_F(StoreTest, AReaderIsToldApartFromAWriter) {
  const std::string p = path("read.h5");
  { ResultsWriter w(p, sample_meta(), sample_schema(), {}); }
  // h5py.File(path, "r") does this: HDF5 holds a shared file lock while the file is open.
  const hid_t reader = H5Fopen(p.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(reader, 0);
  ResumeInfo info;
  try {
    ResultsWriter w(p, info);
    FAIL() << "resumed a file that a reader holds";
  } catch (const FileBusyError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("h5py or another program has it open for reading (pid " + std::to_string(getpid())),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("locking=False"), std::string::npos) << what;
    EXPECT_EQ(what.find("writing it"), std::string::npos) << what;
    EXPECT_EQ(what.find("h5clear"), std::string::npos) << what;
  }
  EXPECT_FALSE(info.mended);
  H5Fclose(reader);
  ResultsWriter w(p, info);  // once it is closed
}

// ---------------------------------------------------------------- files not to trust

TEST_F(StoreTest, MissingFile) { expect_store_error(path("nope.h5"), "no such file"); }

TEST_F(StoreTest, DirectoryIsNotAResultsFile) { expect_store_error(dir_.string(), "not a regular file"); }

TEST_F(StoreTest, EmptyFile) {
  spit(path("empty.h5"), "");
  expect_store_error(path("empty.h5"), "not an HDF5 file");
}

TEST_F(StoreTest, TextFile) {
  spit(path("text.h5"), "trial_id,status\n1,TERMINATED\n");
  expect_store_error(path("text.h5"), "not an HDF5 file");
}

// Rewrites the root attribute `name` of a closed results file as a 32-bit integer.
void set_int_attribute(const std::string& p, const char* name, int value) {
  hid_t file = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  H5Adelete(file, name);
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(file, name, H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attr, H5T_NATIVE_INT, &value);
  H5Aclose(attr);
  H5Sclose(space);
  H5Fclose(file);
}

TEST_F(StoreTest, ForeignHdf5File) {
  const std::string p = path("foreign.h5");
  // The checksummed format: the reader refuses old-format files before looking inside
  // (OldFormatFileIsRefused).
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  hid_t file = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  ASSERT_GE(file, 0);
  hsize_t dims = 4;
  hid_t space = H5Screate_simple(1, &dims, nullptr);
  hid_t ds = H5Dcreate2(file, "trials", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  double data[4] = {1, 2, 3, 4};
  H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
  H5Dclose(ds);
  H5Sclose(space);
  H5Fclose(file);
  expect_store_error(p, "not a ranktune results file (no schema_version attribute)");
  set_int_attribute(p, "schema_version", kSchemaVersion);
  expect_store_error(p, "not a ranktune results file (no /results table)");
}

// HDF5 1.10.8 over-reads and crashes on damaged old-format metadata (no checksums; see
// tests/fault/corpus), so a file in that format is refused before any attribute is read.
TEST_F(StoreTest, OldFormatFileIsRefused) {
  const std::string p = path("old.h5");
  hid_t file = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  H5Fclose(file);
  set_int_attribute(p, "schema_version", kSchemaVersion);
  expect_store_error(p, "not a ranktune results file: the file is in HDF5's old format");
}

// Replaces /results of a closed results file by a dataset of `type` with 3 rows.
void replace_results(const std::string& p, hid_t type) {
  hid_t file = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  ASSERT_GE(H5Ldelete(file, "results", H5P_DEFAULT), 0);
  hsize_t dims = 3;
  hid_t space = H5Screate_simple(1, &dims, nullptr);
  hid_t ds = H5Dcreate2(file, "results", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(ds, 0);
  H5Dclose(ds);
  H5Sclose(space);
  H5Fclose(file);
}

TEST_F(StoreTest, TablesOfTheWrongShape) {
  const std::string p = path("shape.h5");
  write_sample_file(p);
  replace_results(p, H5T_NATIVE_DOUBLE);
  expect_store_error(p, "/results: not a table of records");

  for (bool with_iteration : {false, true}) {
    hid_t type = H5Tcreate(H5T_COMPOUND, 24);
    H5Tinsert(type, "trial_id", 0, H5T_NATIVE_INT64);
    H5Tinsert(type, "attempt", 8, H5T_NATIVE_INT32);
    if (with_iteration) H5Tinsert(type, "iteration", 12, H5T_NATIVE_FLOAT);  // the wrong class
    H5Tinsert(type, "time", 16, H5T_NATIVE_DOUBLE);
    replace_results(p, type);
    H5Tclose(type);
    expect_store_error(p, with_iteration ? "/results: column 'iteration' has the wrong type"
                                         : "/results: no column 'iteration'");
  }
}

TEST_F(StoreTest, WrongSchemaVersion) {
  const std::string p = path("v99.h5");
  write_sample_file(p);
  set_int_attribute(p, "schema_version", 99);
  const std::string what = expect_store_error(p, "schema version 99");
  EXPECT_NE(what.find("version " + std::to_string(kSchemaVersion)), std::string::npos) << what;
}

TEST_F(StoreTest, WrongColumnType) {
  const std::string p = path("mode.h5");
  write_sample_file(p);
  set_int_attribute(p, "mode", 3);  // a string attribute turned into an integer
  expect_store_error(p, "attribute mode is not a fixed-length string");
}

TEST_F(StoreTest, TruncatedFiles) {
  const std::string good = path("good.h5");
  write_sample_file(good, 20000);
  const std::string bytes = slurp(good);
  ASSERT_GT(bytes.size(), 100000u);
  for (double fraction : {0.01, 0.1, 0.5, 0.9, 0.99}) {
    SCOPED_TRACE(fraction);
    const std::string p = path("trunc.h5");
    spit(p, bytes.substr(0, static_cast<std::size_t>(fraction * static_cast<double>(bytes.size()))));
    expect_store_error(p, "");
  }
}

TEST_F(StoreTest, FlippedBytesNeverCrashOrHang) {
  const std::string good = path("good.h5");
  write_sample_file(good, 500);
  const std::string bytes = slurp(good);
  // Dense over the superblock and root object header, then sparse over the rest.
  std::vector<std::size_t> offsets;
  for (std::size_t o = 0; o < 4096 && o < bytes.size(); o += 37) offsets.push_back(o);
  for (std::size_t o = 4096; o < bytes.size(); o += bytes.size() / 40) offsets.push_back(o);
  int rejected = 0;
  for (std::size_t offset : offsets) {
    SCOPED_TRACE("offset " + std::to_string(offset));
    std::string corrupt = bytes;
    for (std::size_t k = 0; k < 4 && offset + k < corrupt.size(); ++k) corrupt[offset + k] ^= 0x5A;
    const std::string p = path("flip.h5");
    spit(p, corrupt);
    const auto start = std::chrono::steady_clock::now();
    try {
      ResultsFile::read(p);  // a flip in row data may well read fine
    } catch (const StoreError& e) {
      ++rejected;
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(p + ": ", 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0) << "a handle leaked";
  }
  // Checksummed metadata: most flips near the start must be caught, not read as garbage.
  EXPECT_GT(rejected, static_cast<int>(offsets.size()) / 4);
}

// The store silences HDF5's error printing only while it works (h5::Quiet, scoped): the
// program's own handler is back after every call, so the program's own HDF5 calls report
// their errors as they did before (the store used to turn printing off for good).
int g_hdf5_errors = 0;
herr_t count_hdf5_error(hid_t, void*) {
  ++g_hdf5_errors;
  return 0;
}

TEST_F(StoreTest, StoreCallsPutTheProgramsHdf5ErrorHandlerBack) {
  H5E_auto2_t saved_func = nullptr;
  void* saved_data = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &saved_func, &saved_data);
  H5Eset_auto2(H5E_DEFAULT, count_hdf5_error, nullptr);
  g_hdf5_errors = 0;
  const std::string bad = path("bad.h5");
  spit(bad, std::string("\x89HDF\r\n\x1a\n", 8) + std::string(200, 'x'));  // a signature, then garbage
  EXPECT_THROW(ResultsFile::read(bad), StoreError);
  EXPECT_THROW(read_for_resume(bad), StoreError);
  ResumeInfo info;
  EXPECT_THROW(ResultsWriter(bad, info), StoreError);
  EXPECT_THROW(ResultsWriter(bad, sample_meta(), sample_schema(), {}), StoreError);  // exists
  EXPECT_EQ(g_hdf5_errors, 0) << "the store let HDF5 report an error through the program's handler";
  H5E_auto2_t func = nullptr;
  void* data = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &func, &data);
  EXPECT_EQ(func, &count_hdf5_error) << "the store left HDF5's error handler changed";
  EXPECT_LT(H5Fopen(bad.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), 0);
  EXPECT_GE(g_hdf5_errors, 1) << "the program's own failed call was not reported to its handler";
  H5Eset_auto2(H5E_DEFAULT, saved_func, saved_data);
}

TEST_F(StoreTest, LongEventMessagesSpanRowsAndReadBackWhole) {
  const std::string p = path("long_events.h5");
  std::string lineage = "{\"after\": {";
  for (int i = 0; i < 60; ++i) lineage += "\"p\xC3\xA9" + std::to_string(i) + "\": 0.123456789, ";  // 2-byte characters
  lineage += "\"end\": 1}}";
  ASSERT_GT(lineage.size(), 3 * kEventMessageLen);
  const std::string huge(40 * 1024, 'x');
  {
    ResultsWriter w(p, sample_meta(), sample_schema(), {});
    w.append_event({1.5, 3, 2, search::EventKind::Exploit, lineage});
    w.append_event({2.0, 3, 2, search::EventKind::Error, huge});
    w.append_event({2.0, 4, 1, search::EventKind::End, "short"});
  }
  const ResultsFile f = ResultsFile::read(p);
  ASSERT_EQ(f.events.size(), 3u);
  EXPECT_EQ(f.events[0].kind_name(), "exploit");
  EXPECT_EQ(f.events[0].message, lineage);  // whole, no character split between rows
  EXPECT_EQ(f.events[1].message.size(), kMaxEventMessage);
  EXPECT_EQ(f.events[1].message.substr(kMaxEventMessage - 3), "...");
  EXPECT_EQ(f.events[2].message, "short");
}

// The kinds are written by their names (search/event_kind.h), and read back as kinds; a name
// that is no kind of this version (a later ranktune's, or one written by hand) reads back as
// it is, and the reports show it.
TEST_F(StoreTest, EventKindsAreStoredByNameAndOtherNamesAreKept) {
  const std::string p = path("event_kinds.h5");
  {
    ResultsWriter w(p, sample_meta(), sample_schema(), {});
    w.append_event({1.0, 1, 1, search::EventKind::EarlyStop, "stopped by the scheduler"});
    w.append_event({2.0, -1, 0, search::EventKind::LivePage, "2 pages"});
    w.append_event({3.0, 2, 1, std::nullopt, "from the future", "hibernate"});
  }
  const ResultsFile f = ResultsFile::read(p);
  ASSERT_EQ(f.events.size(), 3u);
  EXPECT_EQ(f.events[0].kind, search::EventKind::EarlyStop);
  EXPECT_EQ(f.events[0].kind_name(), "early_stop");
  EXPECT_EQ(f.events[1].kind, search::EventKind::LivePage);
  EXPECT_EQ(f.events[1].kind_name(), "live_page");
  EXPECT_FALSE(f.events[2].kind.has_value());
  EXPECT_EQ(f.events[2].kind_name(), "hibernate");
  EXPECT_EQ(f.events[2].message, "from the future");
}

}  // namespace
}  // namespace ranktune::io
