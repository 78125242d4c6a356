// The results writer's disk reservation (io/results_writer.cc, reserve()): fallocate(2) runs
// when the reservation runs out or loses blocks, not before every flush. This binary
// interposes fallocate to count the calls and forwards each to the kernel.

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "io/store.h"

namespace {
int g_fallocates = 0;  // calls with FALLOC_FL_KEEP_SIZE alone: the writer's reservations
}

// The io library is linked statically into this binary, so its calls resolve to these.
extern "C" int fallocate(int fd, int mode, off_t offset, off_t len) {
  if (mode == FALLOC_FL_KEEP_SIZE) ++g_fallocates;
  return static_cast<int>(::syscall(SYS_fallocate, fd, mode, offset, len));
}
extern "C" int fallocate64(int fd, int mode, off_t offset, off_t len) { return fallocate(fd, mode, offset, len); }

namespace ranktune::io {
namespace {

namespace fs = std::filesystem;

class SpaceReserveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ranktune_space_reserve_test_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "r.h5").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  static StoreSchema schema() {
    StoreSchema s;
    s.params = {{"x", search::ValueType::Float, 0}};
    s.metrics = {"loss"};
    return s;
  }
  /// A trial's row, a result, an event and a state, then a commit: what the driver's commit
  /// after a trial's end writes.
  static void commit(ResultsWriter& w, int i) {
    search::Trial t;
    t.id = 1 + i % 8;
    t.status = search::TrialStatus::Running;
    t.config = {{"x", 0.5 * i}};
    t.attempt = 0;
    w.write_trial(t);
    w.append_result(t.id, 0, i + 1, 0.1 * i, {{"loss", 1.0 / (1 + i)}});
    w.append_event({0.1 * i, t.id, 1, search::EventKind::Start, ""});
    w.append_state(0.1 * i, std::string(4096, static_cast<char>('a' + i % 26)));
    w.flush();
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(SpaceReserveTest, FlushesWithinTheReservationDoNotFallocate) {
  StoreMeta meta;
  meta.experiment = "e";
  meta.metric = "loss";
  ResultsWriter w(path_, meta, schema(), {});
  g_fallocates = 0;
  for (int i = 0; i < 200; ++i) commit(w, i);
  // One reservation covers megabytes of commits; before, each of the 200 flushes reserved.
  EXPECT_LE(g_fallocates, 2) << "fallocate calls for 200 flushes";
}

TEST_F(SpaceReserveTest, BlocksGivenBackAreReservedAgain) {
  StoreMeta meta;
  meta.experiment = "e";
  meta.metric = "loss";
  ResultsWriter w(path_, meta, schema(), {});
  commit(w, 0);
  // What HDF5's truncation to its end of allocation at a flush does: the reserved blocks
  // past the file's end go back to the file system (ext4 frees them at any truncate that
  // does not grow the file).
  const int fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  const auto before = st.st_blocks;
  ASSERT_EQ(::ftruncate(fd, st.st_size), 0);
  ASSERT_EQ(::fstat(fd, &st), 0);
  if (st.st_blocks >= before) GTEST_SKIP() << "this file system keeps blocks past a file's end at a truncate";
  g_fallocates = 0;
  commit(w, 1);
  EXPECT_GE(g_fallocates, 1) << "the next commit must reserve again";
  struct stat after {};
  ASSERT_EQ(::fstat(fd, &after), 0);
  EXPECT_GE(after.st_blocks, before) << "the reservation is back";
  ::close(fd);
}

TEST_F(SpaceReserveTest, AClosedFileKeepsNoReservedBlocks) {
  {
    StoreMeta meta;
    meta.experiment = "e";
    meta.metric = "loss";
    ResultsWriter w(path_, meta, schema(), {});
    for (int i = 0; i < 5; ++i) commit(w, i);
  }
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  // Allocated blocks (512 bytes each) within a file system block of the file's size.
  EXPECT_LE(st.st_blocks * 512, st.st_size + st.st_blksize) << "bytes reserved past the end of a closed file";
}

}  // namespace
}  // namespace ranktune::io
