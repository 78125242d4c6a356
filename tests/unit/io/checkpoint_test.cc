// Checkpoint durability: the retention policy and the free list (pure), the store's
// retention, byte reuse, compaction and export reads, and the command trainable's
// RANKTUNE_CHECKPOINT_DIR protocol with a real Python program.

#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/archive.h"
#include "io/crc32c.h"
#include "config/config.h"
#include "io/retention.h"
#include "io/store.h"
#include "train/command.h"
#include "tests/unit/common/expect_text.h"

namespace ranktune {
namespace {

namespace fs = std::filesystem;
using io::CheckpointScore;
using io::FreeSpace;
using io::RetentionPolicy;

// ------------------------------------------------------------------ the pure policy

std::vector<CheckpointScore> series(std::initializer_list<std::pair<std::int64_t, double>> points) {
  std::vector<CheckpointScore> out;
  for (auto [i, s] : points) out.push_back({i, s});
  return out;
}

TEST(Retention, DisabledKeepsEverything) {
  const auto live = series({{1, 1.0}, {2, 2.0}, {3, 3.0}});
  EXPECT_TRUE(io::checkpoints_to_drop(live, RetentionPolicy{}, {}).empty());
}

TEST(Retention, KeepLastKeepsTheNewestWhateverTheOrder) {
  const auto live = series({{8, 0.0}, {2, 0.0}, {6, 0.0}, {4, 0.0}});
  EXPECT_EQ(io::checkpoints_to_drop(live, {2, 0}, {}), (std::vector<std::int64_t>{2, 4}));
  EXPECT_EQ(io::checkpoints_to_drop(live, {1, 0}, {}), (std::vector<std::int64_t>{2, 4, 6}));
  EXPECT_TRUE(io::checkpoints_to_drop(live, {4, 0}, {}).empty());
}

TEST(Retention, KeepBestFollowsTheModeAndAlwaysKeepsTheNewest) {
  const auto live = series({{1, 0.5}, {2, 0.9}, {3, 0.1}, {4, 0.7}});
  // max: the best is iteration 2; the newest (4) stays anyway.
  EXPECT_EQ(io::checkpoints_to_drop(live, {0, 1, search::Mode::Max}, {}), (std::vector<std::int64_t>{1, 3}));
  // min: the best is iteration 3.
  EXPECT_EQ(io::checkpoints_to_drop(live, {0, 1, search::Mode::Min}, {}), (std::vector<std::int64_t>{1, 2}));
  // Union of both limits.
  EXPECT_EQ(io::checkpoints_to_drop(live, {2, 1, search::Mode::Max}, {}), (std::vector<std::int64_t>{1}));
}

TEST(Retention, UnknownScoresAreNeverBestAndTiesGoToTheNewer) {
  const auto live = series({{1, NAN}, {2, 0.3}, {3, 0.3}, {4, INFINITY}, {5, NAN}});
  EXPECT_EQ(io::checkpoints_to_drop(live, {0, 1, search::Mode::Max}, {}), (std::vector<std::int64_t>{1, 2, 4}));
}

TEST(Retention, PinnedCheckpointsStay) {
  const auto live = series({{1, 0.0}, {2, 0.0}, {3, 0.0}});
  EXPECT_EQ(io::checkpoints_to_drop(live, {1, 0}, {1}), (std::vector<std::int64_t>{2}));
}

TEST(Retention, PinnedAreTheRestorePointsOfUnfinishedTrials) {
  std::vector<search::Trial> trials(3);
  trials[0].id = 1, trials[0].restore_trial = 2, trials[0].restore_checkpoint = 8;  // a PBT donor
  trials[1].id = 2, trials[1].restore_trial = 2, trials[1].restore_checkpoint = 12;
  trials[2].id = 3, trials[2].restore_trial = 3, trials[2].restore_checkpoint = 4;
  trials[2].status = search::TrialStatus::Terminated;
  EXPECT_EQ(io::pinned_checkpoints(trials), (std::set<io::CheckpointKey>{{2, 8}, {2, 12}}));
  // Where a trial goes back to if its new hyperparameters do not load (Trial::revert).
  trials[0].revert = search::Trial::Revert{"exploit", {}, 1, 6, 6, 6};
  EXPECT_EQ(io::pinned_checkpoints(trials), (std::set<io::CheckpointKey>{{1, 6}, {2, 8}, {2, 12}}));
}

TEST(FreeSpace, CoalescesAndAllocatesFirstFit) {
  FreeSpace f;
  f.release(10, 5);
  f.release(30, 10);
  f.release(15, 5);  // merges with [10, 15)
  EXPECT_EQ(f.ranges(), (std::map<std::uint64_t, std::uint64_t>{{10, 10}, {30, 10}}));
  EXPECT_EQ(f.total(), 20u);
  EXPECT_EQ(f.allocate(8, 100), 10u);  // lowest that fits
  EXPECT_EQ(f.allocate(8, 100), 30u);  // [18, 20) is too small
  EXPECT_EQ(f.allocate(8, 100), 100u);  // nothing fits: the end
  EXPECT_EQ(f.total(), 4u);
  EXPECT_THROW(f.release(19, 2), std::logic_error);  // overlaps the free [18, 20)
}

TEST(FreeSpace, TheTailRangeGrowsInsteadOfLeavingAGap) {
  FreeSpace f;
  f.release(90, 10);
  EXPECT_EQ(f.allocate(25, 100), 90u);  // the store grows to 115, reusing [90, 100)
  EXPECT_EQ(f.total(), 0u);
}

TEST(FreeSpace, GapsAreTheComplementOfTheUsedRanges) {
  const FreeSpace f = FreeSpace::gaps({{50, 10}, {0, 10}, {5, 10}, {70, 40}}, 100);
  EXPECT_EQ(f.ranges(), (std::map<std::uint64_t, std::uint64_t>{{15, 35}, {60, 10}}));
}

// ------------------------------------------------------------------ the config

const char* kConfig = R"([experiment]
name = "c"
metric = "loss"
mode = "min"
[search.space]
x = { uniform = [0.0, 1.0] }
[trainable]
kind = "command"
command = ["python3", "t.py"]
)";

TEST(CheckpointConfig, RetentionKeysAndTheCommandFlagAreReadAndChecked) {
  config::ExperimentConfig cfg = config::parse_config(
      std::string(kConfig) + "checkpoint = true\n[checkpoint]\nkeep_last = 3\nkeep_best = 1\n", "/tmp/c.toml");
  train::read_trainable(cfg);  // the kind's own keys
  EXPECT_TRUE(train::options_of<train::CommandOptions>(cfg.trainable).checkpoint);
  EXPECT_EQ(cfg.checkpoint_keep_last, 3);
  EXPECT_EQ(cfg.checkpoint_keep_best, 1);
  EXPECT_NE(config::render_config(cfg).find("keep_last = 3"), std::string::npos);
  try {
    config::parse_config(std::string(kConfig) + "[checkpoint]\nkeep_last = -1\n", "/tmp/c.toml");
    ADD_FAILURE() << "a negative keep_last was accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_EQ(e.key(), "checkpoint.keep_last") << e.what();
  }
  // `checkpoint` belongs to command trainables only.
  config::ExperimentConfig synthetic = config::parse_config("[experiment]\nname = \"c\"\nmetric = \"loss\"\nmode = \"min\"\n[search.space]\nx = { uniform = [0.0, 1.0] }\n"
                                "[trainable]\nkind = \"synthetic\"\ncheckpoint = true\n", "/tmp/c.toml");
  EXPECT_THROW(train::read_trainable(synthetic),
               config::ConfigError);
}

TEST(CheckpointConfig, FsyncIsOffByDefaultReadAsABooleanAndABadValueNamesTheKey) {
  EXPECT_FALSE(config::parse_config(kConfig, "/tmp/c.toml").checkpoint_fsync);
  const config::ExperimentConfig cfg = config::parse_config(std::string(kConfig) + "[checkpoint]\nfsync = true\n", "/tmp/c.toml");
  EXPECT_TRUE(cfg.checkpoint_fsync);
  EXPECT_NE(config::render_config(cfg).find("fsync = true"), std::string::npos);
  for (const char* bad : {"fsync = \"yes\"\n", "fsync = 1\n"}) {
    try {
      config::parse_config(std::string(kConfig) + "[checkpoint]\n" + bad, "/tmp/c.toml");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const config::ConfigError& e) {
      EXPECT_EQ(e.key(), "checkpoint.fsync") << e.what();
      EXPECT_NE(std::string(e.what()).find("true or false"), std::string::npos) << e.what();
    }
  }
}

// ------------------------------------------------------------------ the store

// Overwrites byte `offset` of /checkpoint_data behind the store's back, the way a disk error
// would.
void overwrite_byte(const std::string& file, hsize_t offset, unsigned char byte,
                    const char* dataset = "checkpoint_data") {
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, dataset, H5P_DEFAULT);
  hsize_t one = 1;
  hid_t space = H5Dget_space(d);
  H5Sselect_hyperslab(space, H5S_SELECT_SET, &offset, nullptr, &one, nullptr);
  hid_t mem = H5Screate_simple(1, &one, nullptr);
  EXPECT_GE(H5Dwrite(d, H5T_NATIVE_UINT8, mem, space, H5P_DEFAULT, &byte), 0);
  H5Sclose(mem), H5Sclose(space), H5Dclose(d), H5Fclose(f);
}

class CheckpointStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("ranktune_ckpt_test_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::unique_ptr<io::ResultsWriter> create(const std::string& name) {
    io::StoreMeta meta;
    meta.experiment = "ckpt";
    meta.metric = "loss";
    meta.mode = search::Mode::Min;
    io::StoreSchema schema;
    schema.metrics = {"loss"};
    return std::make_unique<io::ResultsWriter>(path(name), meta, schema, std::vector<io::WorkerInfo>{});
  }
  // One result and then one checkpoint of `size` bytes filled with `fill`.
  static void store(io::ResultsWriter& w, search::TrialId trial, std::int64_t iteration, double loss, std::size_t size,
                    char fill) {
    w.append_result(trial, 0, iteration, 0.0, {{"loss", loss}});
    w.append_checkpoint(trial, 0, iteration, 1.0, std::string(size, fill));
  }

  fs::path dir_;
};

TEST_F(CheckpointStoreTest, RetentionFlagsRowsAndReusesTheirBytes) {
  auto w = create("r.h5");
  w->set_retention({2, 0, search::Mode::Min});
  for (int i = 1; i <= 20; ++i) {
    store(*w, 1, i, 1.0 / i, 1000, static_cast<char>('a' + i % 26));
    w->apply_retention({});
    w->flush();
  }
  // Two live checkpoints, and the data never grew past three of them: a freed range is
  // reusable one flush after it was dropped.
  const io::CheckpointSpace space = w->checkpoint_space();
  EXPECT_EQ(space.live, 2000u);
  EXPECT_LE(space.extent, 3000u);
  EXPECT_EQ(w->read_checkpoint(1, 20), std::string(1000, static_cast<char>('a' + 20 % 26)));
  EXPECT_EQ(w->read_checkpoint(1, 19), std::string(1000, static_cast<char>('a' + 19 % 26)));
  EXPECT_THROW(w->read_checkpoint(1, 18), io::StoreError);
  EXPECT_EQ(w->previous_checkpoint(1, 20), 19);
  EXPECT_EQ(w->latest_checkpoints(), (std::map<search::TrialId, std::int64_t>{{1, 20}}));
  w.reset();

  const io::ResultsFile f = io::ResultsFile::read(path("r.h5"));
  EXPECT_EQ(f.meta.schema_version, io::kSchemaVersion);
  ASSERT_EQ(f.checkpoints.size(), 20u);  // every row stays
  int dropped = 0;
  for (const auto& r : f.checkpoints) {
    dropped += r.dropped;
    EXPECT_DOUBLE_EQ(r.score, 1.0 / static_cast<double>(r.iteration));
    if (!r.dropped) {
      EXPECT_EQ(io::read_checkpoint_bytes(f, r).size(), 1000u);
    } else {
      EXPECT_THROW(io::read_checkpoint_bytes(f, r), io::StoreError);
    }
  }
  EXPECT_EQ(dropped, 18);
}

TEST_F(CheckpointStoreTest, KeepBestAndPinsSurviveAndResumeRebuildsTheFreeList) {
  {
    auto w = create("b.h5");
    w->set_retention({1, 1, search::Mode::Min});
    const double losses[] = {5, 1, 4, 3, 2};  // the best (min) is iteration 2
    for (int i = 1; i <= 5; ++i) {
      store(*w, 1, i, losses[i - 1], 100, 'x');
      w->apply_retention({{1, 3}});  // a PBT donor's checkpoint
    }
    EXPECT_EQ(w->checkpoint_space().live, 300u);  // 2 (best), 3 (pinned), 5 (newest)
    EXPECT_EQ(w->previous_checkpoint(1, 5), 3);
  }
  io::ResumeInfo info;
  io::ResultsWriter w(path("b.h5"), info);
  const io::CheckpointSpace space = w.checkpoint_space();
  EXPECT_EQ(space.live, 300u);
  EXPECT_EQ(space.free, space.extent - 300u);  // dropped bytes are free at once after a resume
  w.append_checkpoint(1, 0, 6, 2.0, std::string(100, 'y'));
  EXPECT_EQ(w.checkpoint_space().extent, space.extent);  // reused, not appended
  EXPECT_EQ(w.read_checkpoint(1, 6), std::string(100, 'y'));
  EXPECT_EQ(w.read_checkpoint(1, 2), std::string(100, 'x'));
}

TEST_F(CheckpointStoreTest, OnlyTheNewestStateStaysUnderRetention) {
  auto w = create("s.h5");
  w->set_retention({1, 0, search::Mode::Min});
  for (int i = 0; i < 10; ++i) {
    w->append_state(i, "state " + std::to_string(i));
    w->flush();
  }
  EXPECT_EQ(w->latest_state().value_or(""), "state 9");
  EXPECT_LE(w->checkpoint_space().live, 8u);
}

// The size of the 1-D dataset `name` of `file` (-1: there is none).
long long dataset_size(const std::string& file, const char* name) {
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  long long n = -1;
  if (H5Lexists(f, name, H5P_DEFAULT) > 0) {
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    hid_t space = H5Dget_space(d);
    hsize_t dims = 0;
    H5Sget_simple_extent_dims(space, &dims, nullptr);
    n = static_cast<long long>(dims);
    H5Sclose(space), H5Dclose(d);
  }
  H5Fclose(f);
  return n;
}

TEST_F(CheckpointStoreTest, TheStateHasADatasetOfItsOwnAndOnlyTheNewestKeepsItsBytes) {
  {
    auto w = create("s.h5");
    for (int i = 1; i <= 20; ++i) {
      w->append_state(i, std::string(100, static_cast<char>('a' + i)));
      w->flush();
    }
    EXPECT_EQ(w->latest_state().value_or(""), std::string(100, 'a' + 20));
    EXPECT_EQ(w->checkpoint_space().extent, 0u);  // none in /checkpoint_data
  }
  EXPECT_EQ(dataset_size(path("s.h5"), "state"), 20);
  // A superseded state's bytes are reused once a newer one is committed, without retention.
  EXPECT_LE(dataset_size(path("s.h5"), "state_data"), 200);
  const io::ResultsFile f = io::ResultsFile::read(path("s.h5"));
  EXPECT_TRUE(f.checkpoints.empty()) << "a state was stored as a /checkpoints row (trial 0)";
  io::ResumeInfo info;
  io::ResultsWriter w(path("s.h5"), info);
  EXPECT_EQ(info.state_sequence, 20);
  EXPECT_EQ(w.latest_state().value_or(""), std::string(100, 'a' + 20));
  w.append_state(21, "after the resume");
  EXPECT_EQ(w.latest_state().value_or(""), "after the resume");
}

TEST_F(CheckpointStoreTest, ADamagedStateIsRefusedWithItsSequence) {
  {
    auto w = create("d.h5");
    w->append_state(1, "one");
    w->flush();
    w->append_state(2, "two");
  }
  // "one" lies at 0, "two" after it (the first state's bytes were not free yet).
  overwrite_byte(path("d.h5"), 3, 'X', "state_data");
  io::ResumeInfo info;
  io::ResultsWriter w(path("d.h5"), info);
  try {
    (void)w.latest_state();
    ADD_FAILURE() << "a damaged state was read";
  } catch (const io::StoreError& e) {
    EXPECT_CONTAINS(e.what(), path("d.h5") + ": experiment state 2 fails its checksum");
  }
}

// tests/data/old_state.h5.gz: a run by ranktune before /state (its states are /checkpoints
// rows of trial 0), stopped by SIGTERM with 2 of 6 trials begun (tests/cli/old_state_resume.sh).
TEST_F(CheckpointStoreTest, AFileFromBeforeTheStateDatasetResumesFromItsTrialZeroRows) {
  const std::string old = path("old_state.h5");
  ASSERT_EQ(std::system(("gzip -dc " RANKTUNE_SOURCE_DIR "/tests/data/old_state.h5.gz > " + old).c_str()), 0);
  ASSERT_EQ(dataset_size(old, "state"), -1);
  std::size_t legacy = 0;
  for (const io::CheckpointRow& r : io::ResultsFile::read(old).checkpoints) legacy += r.trial == 0 && !r.dropped;
  ASSERT_GT(legacy, 0u);
  {
    io::ResumeInfo info;
    io::ResultsWriter w(old, info);
    EXPECT_EQ(info.state_sequence, static_cast<std::int64_t>(legacy));
    const std::string state = w.latest_state().value_or("");
    EXPECT_EQ(state.rfind("controller ", 0), 0u) << state;
    EXPECT_TRUE(w.latest_checkpoints().count(0) == 0) << "the states are not a trial's checkpoints";
    w.append_state(100, "new");
    w.flush();
    w.append_state(101, "newer");  // the first is committed: the trial 0 rows go
    w.flush();
    EXPECT_EQ(w.latest_state().value_or(""), "newer");
  }
  EXPECT_EQ(dataset_size(old, "state"), 2);
  const io::ResultsFile f = io::ResultsFile::read(old);
  std::size_t live = 0;
  for (const io::CheckpointRow& r : f.checkpoints) live += r.trial == 0 && !r.dropped;
  EXPECT_EQ(live, 0u);
  io::ResumeInfo info;
  io::ResultsWriter w(old, info);
  EXPECT_EQ(info.state_sequence, static_cast<std::int64_t>(legacy) + 2);
  EXPECT_EQ(w.latest_state().value_or(""), "newer");
}

TEST_F(CheckpointStoreTest, CompactRoundTripsEverythingButDroppedBytes) {
  {
    auto w = create("c.h5");
    w->set_retention({1, 0, search::Mode::Min});
    search::Trial t;
    t.id = 1;
    t.status = search::TrialStatus::Terminated;
    w->write_trial(t);
    w->append_event({1.0, 1, 1, search::EventKind::Start, "hello"});
    for (int i = 1; i <= 8; ++i) store(*w, 1, i, 1.0 / i, 300000, static_cast<char>('0' + i));
    w->apply_retention({});
  }
  const io::ResultsFile before = io::ResultsFile::read(path("c.h5"));
  const io::CompactSummary s = io::compact_results(path("c.h5"), path("d.h5"));
  EXPECT_EQ(s.live, 1u);
  EXPECT_EQ(s.dropped, 7u);
  EXPECT_EQ(s.damaged, 0u);
  EXPECT_LT(s.bytes_after + 1'500'000, s.bytes_before);
  const io::ResultsFile after = io::ResultsFile::read(path("d.h5"));
  EXPECT_EQ(after.meta.experiment, before.meta.experiment);
  EXPECT_EQ(after.meta.created, before.meta.created);
  EXPECT_EQ(after.results.size(), before.results.size());
  ASSERT_EQ(after.events.size(), before.events.size());
  EXPECT_EQ(after.events[0].message, "hello");
  ASSERT_EQ(after.trials.size(), 1u);
  ASSERT_EQ(after.checkpoints.size(), before.checkpoints.size());
  for (std::size_t i = 0; i < after.checkpoints.size(); ++i) {
    EXPECT_EQ(after.checkpoints[i].dropped, before.checkpoints[i].dropped);
    EXPECT_EQ(after.checkpoints[i].crc32c, before.checkpoints[i].crc32c);
    if (!after.checkpoints[i].dropped) {
      EXPECT_EQ(io::read_checkpoint_bytes(after, after.checkpoints[i]),
                io::read_checkpoint_bytes(before, before.checkpoints[i]));
    }
  }
  // The compacted file resumes, and stores new checkpoints after the live one.
  io::ResumeInfo info;
  io::ResultsWriter w(path("d.h5"), info);
  EXPECT_EQ(w.latest_checkpoints(), (std::map<search::TrialId, std::int64_t>{{1, 8}}));
  EXPECT_EQ(w.checkpoint_space().free, 0u);
  // In place: same contents, the original path.
  EXPECT_THROW(io::compact_results(path("c.h5"), path("d.h5")), io::StoreError);  // -o exists
  io::compact_results(path("c.h5"));
  EXPECT_EQ(io::ResultsFile::read(path("c.h5")).checkpoints.size(), before.checkpoints.size());
  EXPECT_FALSE(fs::exists(path(".c.h5.compact-" + std::to_string(getpid()) + ".tmp")));
}

TEST_F(CheckpointStoreTest, CompactRefusesForeignAndOpenFiles) {
  std::ofstream(path("t.h5")) << "not hdf5";
  EXPECT_THROW(io::compact_results(path("t.h5"), path("u.h5")), io::StoreError);
  EXPECT_FALSE(fs::exists(path("u.h5")));
  auto w = create("open.h5");
  w->flush();
  try {
    io::compact_results(path("open.h5"), path("v.h5"));
    ADD_FAILURE() << "a file held by a writer was compacted";
  } catch (const io::StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("a writer holds it"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path("v.h5")));
}

TEST_F(CheckpointStoreTest, DamagedBytesFailTheChecksumAndCompactDropsThem) {
  {
    auto w = create("x.h5");
    store(*w, 1, 1, 1.0, 5000, 'q');
  }
  overwrite_byte(path("x.h5"), 100, 'Q');
  const io::ResultsFile f = io::ResultsFile::read(path("x.h5"));
  ASSERT_EQ(f.checkpoints.size(), 1u);
  try {
    io::read_checkpoint_bytes(f, f.checkpoints[0]);
    ADD_FAILURE() << "damaged bytes were returned";
  } catch (const io::StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("fails its checksum"), std::string::npos) << e.what();
  }
  const io::CompactSummary s = io::compact_results(path("x.h5"), path("y.h5"));
  EXPECT_EQ(s.damaged, 1u);
  EXPECT_TRUE(io::ResultsFile::read(path("y.h5")).checkpoints[0].dropped);
}

// A checkpoint's bytes: every byte differs from its neighbours', so a piece written at the
// wrong place or twice shows.
std::string pattern(std::size_t size, unsigned seed) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + seed * 7 + i / 251) & 0xFF);
  return bytes;
}

TEST_F(CheckpointStoreTest, StreamedPiecesLandInOrderWithTheCrcOfTheWhole) {
  const std::string bytes = pattern(10'000, 1);
  {
    auto w = create("p.h5");
    w->append_result(1, 0, 4, 0.0, {{"loss", 0.5}});
    io::ResultsWriter::CheckpointSink sink = w->begin_checkpoint(1, 0, 4, bytes.size());
    for (std::size_t at = 0; at < bytes.size(); at += 3000) sink.write(at, std::string_view(bytes).substr(at, 3000));
    EXPECT_EQ(sink.written(), bytes.size());
    EXPECT_TRUE(w->latest_checkpoints().empty());  // no row before finish()
    sink.finish(2.0);
    EXPECT_EQ(w->read_checkpoint(1, 4), bytes);
    // Read back in pieces, as the driver streams a restore.
    io::ResultsWriter::CheckpointSource source = w->open_checkpoint(1, 4);
    EXPECT_EQ(source.size(), bytes.size());
    std::string back;
    while (!source.done()) back += source.read(4096);
    source.verify();
    EXPECT_EQ(back, bytes);
  }
  const io::ResultsFile f = io::ResultsFile::read(path("p.h5"));
  ASSERT_EQ(f.checkpoints.size(), 1u);
  EXPECT_EQ(f.checkpoints[0].crc32c, io::crc32c(std::as_bytes(std::span(bytes.data(), bytes.size()))));
  EXPECT_DOUBLE_EQ(f.checkpoints[0].score, 0.5);
  EXPECT_DOUBLE_EQ(f.checkpoints[0].time, 2.0);
  EXPECT_EQ(io::read_checkpoint_bytes(f, f.checkpoints[0]), bytes);
}

TEST_F(CheckpointStoreTest, PiecesOutOfOrderOrShortAreRefused) {
  auto w = create("o.h5");
  io::ResultsWriter::CheckpointSink sink = w->begin_checkpoint(1, 0, 1, 100);
  EXPECT_THROW(sink.write(50, std::string(10, 'x')), io::StoreError);  // a gap
  sink.write(0, std::string(60, 'x'));
  EXPECT_THROW(sink.write(60, std::string(41, 'x')), io::StoreError);  // past the announced size
  try {
    sink.finish(1.0);
    ADD_FAILURE() << "a checkpoint with 60 of 100 bytes was registered";
  } catch (const io::StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("60 of its 100 bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(w->read_checkpoint(1, 1), io::StoreError);
}

TEST_F(CheckpointStoreTest, AnAbandonedStreamLeavesNoRowAndItsBytesAreReused) {
  {
    auto w = create("a.h5");
    store(*w, 1, 1, 1.0, 1000, 'k');  // [0, 1000)
    {
      io::ResultsWriter::CheckpointSink half = w->begin_checkpoint(2, 0, 3, 5000);  // [1000, 6000)
      // Another stream begins while the first is half way: its range comes after it.
      io::ResultsWriter::CheckpointSink other = w->begin_checkpoint(3, 0, 3, 100);
      half.write(0, pattern(2500, 2));
      other.write(0, std::string(100, 'o'));
      other.finish(1.0);
      w->flush();  // a flush mid-stream must not register the half-written one either
      EXPECT_EQ(w->checkpoint_space().extent, 6100u);
    }  // `half` is abandoned: its sender stopped
    EXPECT_THROW(w->read_checkpoint(2, 3), io::StoreError);
    io::CheckpointSpace space = w->checkpoint_space();
    EXPECT_EQ(space.live, 1100u);
    EXPECT_EQ(space.free, 5000u);
    // The next checkpoint takes the abandoned range (first fit), the file does not grow.
    w->append_checkpoint(2, 0, 4, 2.0, pattern(4000, 3));
    EXPECT_EQ(w->checkpoint_space().extent, 6100u);
    EXPECT_EQ(w->read_checkpoint(2, 4), pattern(4000, 3));
    EXPECT_EQ(w->read_checkpoint(1, 1), std::string(1000, 'k'));
    EXPECT_EQ(w->read_checkpoint(3, 3), std::string(100, 'o'));
  }
  const io::ResultsFile f = io::ResultsFile::read(path("a.h5"));
  std::vector<std::pair<search::TrialId, std::int64_t>> rows;
  for (const auto& r : f.checkpoints) rows.emplace_back(r.trial, r.iteration);
  EXPECT_EQ(rows, (std::vector<std::pair<search::TrialId, std::int64_t>>{{1, 1}, {3, 3}, {2, 4}}));
  // A writer that died mid-stream is the same case: a resume sees the bytes as a gap.
  io::ResumeInfo info;
  io::ResultsWriter w(path("a.h5"), info);
  EXPECT_EQ(w.checkpoint_space().free, 1000u);  // [5000, 6000) of the abandoned range
}

TEST_F(CheckpointStoreTest, BytesBeingReadAreNotReusedUntilTheReadEnds) {
  auto w = create("b.h5");
  w->set_retention({1, 0, search::Mode::Min});
  store(*w, 1, 1, 1.0, 1000, 'a');
  w->flush();
  std::optional<io::ResultsWriter::CheckpointSource> source = w->open_checkpoint(1, 1);
  std::string first = source->read(400);
  store(*w, 1, 2, 0.5, 1000, 'b');
  EXPECT_EQ(w->apply_retention({}), (std::vector<io::CheckpointKey>{{1, 1}}));  // dropped while being read
  w->flush();
  store(*w, 1, 3, 0.4, 1000, 'c');  // must not land on [0, 1000)
  first += source->read(1000);
  source->verify();
  EXPECT_EQ(first, std::string(1000, 'a'));
  source.reset();
  w->apply_retention({});
  w->flush();  // now [0, 1000) and the range of iteration 2 are free
  EXPECT_EQ(w->checkpoint_space().free, 2000u);
}

TEST_F(CheckpointStoreTest, ASourceFindsDamagedBytesOnlyAtTheEnd) {
  store(*create("d.h5"), 1, 1, 1.0, 3000, 'z');
  overwrite_byte(path("d.h5"), 2500, 'Z');
  io::ResumeInfo info;
  io::ResultsWriter w(path("d.h5"), info);
  io::ResultsWriter::CheckpointSource source = w.open_checkpoint(1, 1);
  EXPECT_EQ(source.read(2000), std::string(2000, 'z'));
  EXPECT_THROW(source.verify(), io::StoreError);  // not all read yet
  source.read(2000);
  try {
    source.verify();
    ADD_FAILURE() << "damaged bytes passed the checksum";
  } catch (const io::StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("fails its checksum"), std::string::npos) << e.what();
  }
  EXPECT_THROW(w.read_checkpoint(1, 1), io::StoreError);
}

// ------------------------------------------------------------------ command trainables

class CommandCheckpointTest : public CheckpointStoreTest {
 protected:
  // A Python program that counts steps, saves the count on request, and starts from a
  // restored count; `extra` runs in the save function (to misbehave).
  config::TrainableSpec spec(const std::string& extra = "") const {
    const std::string program = (dir_ / "counter.py").string();
    std::ofstream(program) << "import os, ranktune\n"
                              "d = ranktune.checkpoint_dir()\n"
                              "n = int(open(os.path.join(d, 'n')).read()) if ranktune.restored() else 0\n"
                              "def save(folder):\n"
                              "    open(os.path.join(folder, 'n'), 'w').write(str(n))\n"
                           << (extra.empty() ? "" : "    " + extra + "\n")
                           << "ranktune.on_save(save)\n"
                              "while n < 10:\n"
                              "    n += 1\n"
                              "    ranktune.report(loss=float(n))\n";
    train::CommandOptions s;
    s.command = {"python3", program};
    s.checkpoint = true;
    s.step_timeout_s = 30;
    return train::make_spec(s);
  }
  train::Context context() const {
    train::Context c;
    c.trial_id = 1;
    c.log_dir = dir_.string();
    c.config_dir = dir_.string();
    return c;
  }
  // Sets `t` up, runs a step and asks it to save: the save must fail; returns why.
  std::string save_failure(train::CommandTrainable& t) const {
    t.setup({}, context());
    t.step();
    train::CheckpointBytes bytes;
    train::MemoryCheckpointWriter out(bytes);
    try {
      t.save(out);
    } catch (const train::TrialFailure& e) {
      return e.what();
    }
    ADD_FAILURE() << "the save succeeded";
    return "";
  }
};

TEST_F(CommandCheckpointTest, SavesExactlyAtTheReportedIterationAndRestores) {
  train::CheckpointBytes bytes;
  std::string dir;
  {
    train::CommandTrainable t(spec());
    t.setup({}, context());
    dir = t.checkpoint_dir();
    ASSERT_FALSE(dir.empty());
    EXPECT_EQ(t.step().metrics.at("loss"), 1.0);
    EXPECT_EQ(t.step().metrics.at("loss"), 2.0);
    usleep(100000);  // a program that ran ahead would now be past step 2
    train::MemoryCheckpointWriter out(bytes);
    t.save(out);
    EXPECT_EQ(t.step().metrics.at("loss"), 3.0);  // the save did not disturb the series
    EXPECT_TRUE(io::is_directory_archive(bytes));
  }
  EXPECT_FALSE(fs::exists(dir)) << "the checkpoint directory outlived its trainable";
  train::CommandTrainable t(spec());
  t.setup({}, context());
  train::MemoryCheckpointReader in(bytes);
  t.restore(in);
  EXPECT_EQ(t.step().metrics.at("loss"), 3.0);  // went on from the saved n = 2
}

TEST_F(CommandCheckpointTest, AnUnpackableDirectoryFailsTheSave) {
  train::CommandTrainable t(spec("os.mkfifo(os.path.join(folder, 'pipe'))"));
  EXPECT_CONTAINS(save_failure(t), "cannot pack its checkpoint directory");
}

TEST_F(CommandCheckpointTest, ADamagedCheckpointIsRefusedBeforeTheProgramStarts) {
  train::CheckpointBytes bytes;
  {
    train::CommandTrainable t(spec());
    t.setup({}, context());
    t.step();
    train::MemoryCheckpointWriter out(bytes);
    t.save(out);
  }
  bytes[bytes.size() / 2] ^= std::byte{0xff};
  train::CommandTrainable t(spec());
  t.setup({}, context());
  train::MemoryCheckpointReader in(bytes);
  EXPECT_THROW(t.restore(in), train::CheckpointError);
  EXPECT_EQ(t.pid(), -1);
}

TEST_F(CommandCheckpointTest, AProgramThatDoesNotWaitIsACleanFailure) {
  config::TrainableSpec s = spec();
  // Reports without the helper, never reading RANKTUNE_CONTROL_FD.
  std::ofstream(dir_ / "rude.py") << "import os\nf = os.fdopen(3, 'w', buffering=1)\n"
                                     "for i in range(1, 6): f.write('{\"loss\": %d}\\n' % i)\n"
                                     "import time; time.sleep(5)\n";
  train::edit_options<train::CommandOptions>(s).command = {"python3", (dir_ / "rude.py").string()};
  train::CommandTrainable t(s);
  EXPECT_CONTAINS(save_failure(t), "instead of {\"ranktune\": \"saved\"}");
}

}  // namespace
}  // namespace ranktune
