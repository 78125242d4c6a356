// sys/process, sys/run and sys/temp_dir: starting programs, their exit and signals, time
// limits, captured output, process groups, a missing program, temporary folders.
#include "sys/process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include "sys/run.h"
#include "sys/temp_dir.h"
#include "tests/unit/common/process_gone.h"

namespace fs = std::filesystem;
using namespace ranktune::sys;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

SpawnRequest shell(const std::string& script) {
  SpawnRequest r;
  r.program = "/bin/sh";
  r.argv = {"sh", "-c", script};
  r.env = current_environment();
  return r;
}

// Sets an environment variable for one test, restoring it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class SysTemp : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string t = (fs::temp_directory_path() / "sys_process_XXXXXX").string();
    ASSERT_NE(::mkdtemp(t.data()), nullptr);
    dir_ = t;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

}  // namespace

// ---- ChildProcess ----

TEST(ChildProcess, SpawnsAndReapsTheExitCode) {
  ChildProcess child;
  ASSERT_EQ(ChildProcess::spawn(shell("exit 3"), child), 0);
  EXPECT_TRUE(child.alive());
  EXPECT_GT(child.pid(), 0);
  EXPECT_TRUE(child.wait_exit(Clock::now() + std::chrono::seconds(10)));
  const auto status = child.reap();
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 3);
  EXPECT_FALSE(child.alive());
}

TEST(ChildProcess, ReportsTheSignalThatEndedIt) {
  ChildProcess child;
  ASSERT_EQ(ChildProcess::spawn(shell("kill -SEGV $$"), child), 0);
  ASSERT_TRUE(child.wait_exit(Clock::now() + std::chrono::seconds(10)));
  const auto status = child.reap();
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFSIGNALED(*status));
  EXPECT_EQ(WTERMSIG(*status), SIGSEGV);
  EXPECT_EQ(signal_description(WTERMSIG(*status)), "SIGSEGV (11)");
}

TEST(ChildProcess, AMissingProgramIsItsErrno) {
  ChildProcess child;
  SpawnRequest r = shell("");
  r.program = "/nonexistent/program";
  EXPECT_EQ(ChildProcess::spawn(r, child), ENOENT);
  EXPECT_FALSE(child.alive());
  r.program = "/";
  EXPECT_EQ(ChildProcess::spawn(r, child), EACCES);
  EXPECT_EQ(resolve_program("no-such-program-for-ranktune", "", "/nonexistent:/bin").error, ENOENT);
  EXPECT_EQ(resolve_program("sh", "", "/nonexistent:/bin").path, "/bin/sh");
}

TEST(ChildProcess, LeadsItsOwnGroupAndTerminateReachesIt) {
  // The shell starts a grandchild in the same group and waits: SIGTERM to the group ends
  // both (the shell would not pass it on to its child).
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  SpawnRequest r = shell("sleep 100 & echo $!; wait");
  r.output_fd = write_end.get();
  ChildProcess child;
  ASSERT_EQ(ChildProcess::spawn(r, child), 0);
  write_end.reset();
  EXPECT_EQ(::getpgid(child.pid()), child.pid());
  std::string line;
  char c = 0;
  while (::read(read_end.get(), &c, 1) == 1 && c != '\n') line += c;
  const pid_t grandchild = static_cast<pid_t>(std::stol(line));
  EXPECT_EQ(::getpgid(grandchild), child.pid());
  const auto t0 = Clock::now();
  const Termination t = child.terminate(std::chrono::milliseconds(5000));
  EXPECT_LT(seconds_since(t0), 4.0);
  EXPECT_FALSE(t.killed);  // SIGTERM was enough
  ASSERT_TRUE(t.status.has_value());
  EXPECT_TRUE(WIFSIGNALED(*t.status) && WTERMSIG(*t.status) == SIGTERM);
  EXPECT_TRUE(process_gone(grandchild));
}

TEST(ChildProcess, TerminateKillsOneThatIgnoresSIGTERM) {
  ChildProcess child;
  ASSERT_EQ(ChildProcess::spawn(shell("trap '' TERM; while :; do sleep 0.05; done"), child), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the trap be set
  const Termination t = child.terminate(std::chrono::milliseconds(300));
  EXPECT_TRUE(t.killed);
  ASSERT_TRUE(t.status.has_value());
  EXPECT_TRUE(WIFSIGNALED(*t.status) && WTERMSIG(*t.status) == SIGKILL);
}

TEST(ChildProcess, CanStayInTheCallersGroup) {
  // As mpirun does, so that a terminal's Ctrl-C reaches it.
  SpawnRequest r = shell("exit 0");
  r.own_group = false;
  r.die_with_parent = false;
  ChildProcess child;
  ASSERT_EQ(ChildProcess::spawn(r, child), 0);
  EXPECT_EQ(::getpgid(child.pid()), ::getpgrp());
  ASSERT_TRUE(child.wait_exit(std::nullopt));
  const auto status = child.reap();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 0);
}

// ---- run_program ----

TEST(RunProgram, CapturesStdoutAndStderrApart) {
  const RunResult r = run_program({"sh", "-c", "echo out; echo err >&2; exit 2"});
  EXPECT_EQ(r.status, 2);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(RunProgram, MergesStderrWhenAsked) {
  RunOptions o;
  o.merge_stderr = true;
  const RunResult r = run_program({"sh", "-c", "echo out; echo err >&2"}, o);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "out\nerr\n");
  EXPECT_EQ(r.err, "");
}

TEST(RunProgram, PassesArgumentsWithoutAShell) {
  // What a shell would expand or split arrives as it is.
  const RunResult r = run_program({"printf", "%s|", "it's", "$HOME", "a b", "*"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "it's|$HOME|a b|*|");
}

TEST(RunProgram, ReportsASignalAs128PlusIt) {
  const RunResult r = run_program({"sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(r.status, 128 + SIGTERM);
  EXPECT_FALSE(r.timed_out);
}

// Runs `script` under a limit of 0.3 s; false when it took 5 s or more.
bool limited(const std::string& script, RunResult& r) {
  RunOptions o;
  o.timeout_s = 0.3;
  const auto t0 = Clock::now();
  r = run_program({"sh", "-c", script}, o);
  return seconds_since(t0) < 5.0;
}

TEST(RunProgram, ATimeLimitKillsTheProgramAndItsGroup) {
  // The program's child holds the output pipe open: the limit ends both.
  RunResult r;
  EXPECT_TRUE(limited("sleep 100 & echo $!; wait", r));
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.status, 128 + SIGKILL);
  ASSERT_FALSE(r.out.empty());
  EXPECT_TRUE(process_gone(static_cast<pid_t>(std::stol(r.out))));
}

TEST(RunProgram, ATimeLimitHoldsForAProgramThatClosedItsOutput) {
  RunResult r;
  EXPECT_TRUE(limited("exec >&- 2>&-; sleep 100", r));
  EXPECT_TRUE(r.timed_out);
}

TEST(RunProgram, AMissingProgramSaysSo) {
  const RunResult r = run_program({"no-such-program-for-ranktune", "x"});
  EXPECT_EQ(r.status, -1);
  EXPECT_EQ(r.err, "cannot run no-such-program-for-ranktune: No such file or directory");
  EXPECT_EQ(run_program({}).err, "no command");
}

// ---- TempDir ----

TEST_F(SysTemp, TempDirHonoursTMPDIRAndIsRemoved) {
  const ScopedEnv tmpdir("TMPDIR", dir_.string());
  EXPECT_EQ(temp_base(), dir_.string());
  std::string path;
  {
    TempDir d("unit-");
    path = d.path();
    EXPECT_EQ(fs::path(path).parent_path(), dir_);
    EXPECT_EQ(fs::path(path).filename().string().rfind("unit-", 0), 0u);
    std::ofstream(path + "/inside") << "x";
    ASSERT_TRUE(fs::is_directory(path));
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(SysTemp, UnsetOrEmptyTMPDIRMeansTmp) {
  {
    const ScopedEnv tmpdir("TMPDIR", "");
    EXPECT_EQ(temp_base(), "/tmp");
  }
  const ScopedEnv tmpdir("TMPDIR", "x");
  ::unsetenv("TMPDIR");
  EXPECT_EQ(temp_base(), "/tmp");
}

TEST_F(SysTemp, TheRunFolderHoldsLaterTempDirsAndRemovesADeadRunsFolder) {
  const ScopedEnv tmpdir("TMPDIR", dir_.string());
  const std::string key = run_folder_key("results.h5");
  EXPECT_EQ(key.size(), 16u);
  EXPECT_EQ(key, run_folder_key("results.h5"));
  EXPECT_NE(key, run_folder_key("other.h5"));
  std::string path;
  {
    TempDir run = TempDir::run_folder(key);
    path = run.path();
    const std::string name = fs::path(path).filename().string();
    EXPECT_EQ(fs::path(path).parent_path(), dir_);
    EXPECT_EQ(name.rfind("ranktune-" + key + "-", 0), 0u);
    EXPECT_EQ(name.substr(name.rfind('-') + 1), std::to_string(::getpid()));
    EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms::owner_all);
    EXPECT_EQ(temp_root(), path);
    TempDir inner("trial-");
    EXPECT_EQ(fs::path(inner.path()).parent_path().string(), path);
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(temp_root(), dir_.string());

  // A folder of the same key and host whose process is gone (killed with kill -9) is
  // removed by the next run; a live process's is not.
  const std::string prefix = path.substr(0, path.rfind('-') + 1);
  fs::create_directories(prefix + "999999998/leftover");
  fs::create_directories(prefix + "1");  // init: alive
  const TempDir run = TempDir::run_folder(key);
  EXPECT_FALSE(fs::exists(prefix + "999999998"));
  EXPECT_TRUE(fs::is_directory(prefix + "1"));
}

TEST_F(SysTemp, ARunFolderThatCannotBeMadeNamesTMPDIR) {
  const std::string file = (dir_ / "a-file").string();
  std::ofstream(file) << "x";
  const ScopedEnv tmpdir("TMPDIR", file);
  try {
    TempDir::run_folder("0123456789abcdef");
    FAIL() << "expected std::system_error";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("set TMPDIR"), std::string::npos) << e.what();
  }
}
