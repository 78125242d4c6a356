#pragma once
// The fixture of the command trainable's unit tests (command_trainable_test.cc,
// command_protocol_test.cc): a private folder, /bin/sh scripts in it, specs and contexts.

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "train/command.h"
#include "train/trainable.h"

namespace ranktune::train {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// No child of this process is left, running or zombie.
inline bool no_children() {
  errno = 0;
  return ::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD;
}

class CommandTrainableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ranktune_trainable_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    EXPECT_TRUE(no_children()) << "a child process was left behind";
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  /// Writes an executable /bin/sh script into the temp dir; returns its absolute path.
  std::string script(const std::string& name, const std::string& body, bool executable = true) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    ::chmod(p.c_str(), executable ? 0755 : 0644);
    return p.string();
  }

  config::TrainableSpec spec(std::vector<std::string> command, double step_timeout_s = 0) const {
    CommandOptions s;
    s.command = std::move(command);
    s.step_timeout_s = step_timeout_s;
    return make_spec(s);
  }

  Context context(search::TrialId id = 1, int attempt = 0) const {
    Context c;
    c.trial_id = id;
    c.attempt = attempt;
    c.seed = 99;
    c.log_dir = (dir_ / "logs").string();
    c.config_dir = dir_.string();
    return c;
  }

  std::string read(const std::string& name) const {
    std::ifstream in(dir_ / name);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }

  fs::path dir_;
};

}  // namespace ranktune::train
