// io::writer_lock_state and io::writer_died (io/store.h): whether the writer of a results file
// still holds it, told from its lock, with a real writer in a forked process that lives, ends
// cleanly or is killed with SIGKILL.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "io/store.h"

namespace ranktune::io {
namespace {

namespace fs = std::filesystem;

class WriterProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ranktune_writer_probe_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "r.h5").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A writer in a child process that has created the results file and waits, holding it,
  // until it reads a byte from its pipe; then it closes the file and exits (or gets killed).
  pid_t start_writer(int& go) {
    int ready[2], wait[2];
    if (::pipe(ready) != 0 || ::pipe(wait) != 0) return -1;
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(ready[0]);
      ::close(wait[1]);
      {
        StoreMeta meta;
        meta.experiment = "probe";
        meta.metric = "loss";
        StoreSchema schema;
        schema.metrics = {"loss"};
        ResultsWriter w(path_, meta, schema, {});
        w.flush();
        char c = 1;
        (void)!::write(ready[1], &c, 1);
        (void)!::read(wait[0], &c, 1);
      }
      _exit(0);
    }
    ::close(ready[1]);
    ::close(wait[0]);
    char c = 0;
    (void)!::read(ready[0], &c, 1);
    ::close(ready[0]);
    go = wait[1];
    return pid;
  }

  fs::path dir_;
  std::string path_;
};

// Issue 27 item 15: `report --watch` (and the live page) went on as if a writer killed with
// kill -9 still ran: its mark stays in the file, and only its lock, which the kernel frees
// with the process, tells.
TEST_F(WriterProbeTest, AKilledWriterIsToldFromALiveOneAndFromOneThatClosedTheFile) {
  int go = -1;
  pid_t pid = start_writer(go);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(writer_lock_state(path_), WriterCheck::Holding);
  EXPECT_FALSE(writer_died(path_));
  ASSERT_TRUE(marked_open_for_writing(path_));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(go);
  EXPECT_TRUE(marked_open_for_writing(path_));  // what the watcher went by
  EXPECT_EQ(writer_lock_state(path_), WriterCheck::Free);
  EXPECT_TRUE(writer_died(path_));

  // A writer that closes the file clears the mark: not a death.
  fs::remove(path_);
  pid = start_writer(go);
  ASSERT_GT(pid, 0);
  (void)!::write(go, "x", 1);
  ::close(go);
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(marked_open_for_writing(path_));
  EXPECT_EQ(writer_lock_state(path_), WriterCheck::Free);
  EXPECT_FALSE(writer_died(path_));
  // No file: cannot tell.
  EXPECT_EQ(writer_lock_state((dir_ / "none.h5").string()), WriterCheck::Unknown);
  EXPECT_FALSE(writer_died((dir_ / "none.h5").string()));
}

}  // namespace
}  // namespace ranktune::io
