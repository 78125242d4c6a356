// The command trainable with real subprocesses: reports, failures, timeouts, stopping the
// process group, the environment, and the trial logs.

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "config/config.h"
#include "train/command.h"
#include "train/trainable.h"
#include "tests/unit/train/command_fixtures.h"
#include "tests/unit/common/expect_text.h"
#include "tests/unit/common/process_gone.h"

namespace ranktune::train {
namespace {

TEST_F(CommandTrainableTest, ReportsAreParsedThenExitZeroIsDone) {
  // A blank line is skipped; a line written in two pieces is reassembled; the last line
  // has no newline. A string that is not a recorded metric ("note") is left out.
  CommandTrainable t(spec({script("ok.sh",
                                  "echo '{\"loss\": 1.5, \"acc\": 0.25, \"note\": \"x\"}' >&3\n"
                                  "echo '' >&3\n"
                                  "printf '{\"loss\": 2' >&3; sleep 0.05; printf '.5}\\n' >&3\n"
                                  "printf '{\"loss\": 3}' >&3")}));
  t.setup({{"lr", 0.1}}, context());
  StepResult r = t.step();
  EXPECT_FALSE(r.done);
  EXPECT_EQ(r.metrics, (search::Metrics{{"loss", 1.5}, {"acc", 0.25}}));
  EXPECT_EQ(t.step().metrics.at("loss"), 2.5);
  EXPECT_EQ(t.step().metrics.at("loss"), 3.0);
  EXPECT_TRUE(t.step().done);
  EXPECT_TRUE(t.step().done);
  EXPECT_EQ(t.pid(), -1);
}

TEST_F(CommandTrainableTest, ManyLinesInOneBurst) {
  CommandTrainable t(spec({script("burst.sh", "i=1; while [ $i -le 2000 ]; do echo \"{\\\"loss\\\": $i}\"; i=$((i+1)); done >&3")}));
  t.setup({}, context());
  for (int i = 1; i <= 2000; ++i) ASSERT_EQ(t.step().metrics.at("loss"), i);
  EXPECT_TRUE(t.step().done);
}

TEST_F(CommandTrainableTest, EnvironmentWorkdirAndRelativeProgram) {
  script("env.sh",
         "printf '%s' \"$RANKTUNE_CONFIG\" > config.json\n"
         "[ \"$RANKTUNE_DEVICE\" = cuda:0 ] && [ \"$CUDA_VISIBLE_DEVICES\" = 1 ] && dev=1 || dev=0\n"
         "echo \"{\\\"trial\\\": $RANKTUNE_TRIAL_ID, \\\"attempt\\\": $RANKTUNE_ATTEMPT, \\\"seed\\\": $RANKTUNE_SEED,"
         " \\\"fd\\\": $RANKTUNE_REPORT_FD, \\\"extra\\\": $MY_EXTRA, \\\"dev\\\": $dev, \\\"argc\\\": $#}\" >&3\n"
         "echo \"arg=$1\"");
  auto s = spec({"./env.sh", "first arg"});
  edit_options<CommandOptions>(s).env = {{"MY_EXTRA", "17"}};
  CommandTrainable t(s);
  Context ctx = context(7, 2);
  ctx.device = "cuda:1";  // the program sees only that GPU, as its cuda:0 (protocol 2)
  ctx.log_dir = (dir_ / "nested" / "logs").string();  // created by setup
  t.setup({{"lr", 0.5}, {"layers", std::int64_t{3}}, {"opt", std::string("adam")}}, ctx);
  const StepResult r = t.step();
  EXPECT_EQ(r.metrics, (search::Metrics{{"trial", 7}, {"attempt", 2}, {"seed", 99}, {"fd", 3},
                                        {"extra", 17}, {"dev", 1}, {"argc", 1}}));
  EXPECT_TRUE(t.step().done);
  const auto config = nlohmann::json::parse(read("config.json"));  // written in the config dir
  EXPECT_EQ(config, nlohmann::json({{"lr", 0.5}, {"layers", 3}, {"opt", "adam"}}));
  EXPECT_EQ(t.log_path(), (dir_ / "nested" / "logs" / "trial_7_attempt_2.log").string());
  EXPECT_EQ(t.log_tail(), "arg=first arg\n");
}

TEST_F(CommandTrainableTest, OnlyTheStandardFdsAndTheProtocolFdsAreInherited) {
#if !defined(__GLIBC__) || __GLIBC__ < 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ < 34)
  GTEST_SKIP() << "posix_spawn closefrom needs glibc 2.34";
#endif
  CommandTrainable t(spec({"python3", "-c",
                           "import os\n"
                           "fds = sorted(int(f) for f in os.listdir('/proc/self/fd'))\n"
                           "os.write(3, ('{\"maxfd\": %d, \"n\": %d}\\n' % (fds[-1], len(fds))).encode())\n"}));
  t.setup({}, context());
  const StepResult r = t.step();
  // 0, 1, 2, 3, the control socket 4 (protocol 2), plus the fd listdir() itself had open.
  EXPECT_EQ(r.metrics.at("n"), 6);
  EXPECT_EQ(r.metrics.at("maxfd"), 5);
  EXPECT_TRUE(t.step().done);
}

TEST_F(CommandTrainableTest, ExitCodeOneFailsWithTheStderrTail) {
  CommandTrainable t(spec({script("fail.sh", "echo '{\"loss\": 1}' >&3\necho 'Traceback: the model blew up' >&2\nexit 1")}));
  t.setup({}, context());
  EXPECT_EQ(t.step().metrics.at("loss"), 1);  // reports before the failure still count
  try {
    t.step();
    FAIL() << "expected TrialFailure";
  } catch (const TrialFailure& e) {
    EXPECT_CONTAINS(e.what(), "exited with code 1");
    EXPECT_CONTAINS(e.log_tail(), "Traceback: the model blew up");
  }
  EXPECT_CONTAINS(t.log_tail(), "the model blew up");
}

TEST_F(CommandTrainableTest, SignalIsNamed) {
  CommandTrainable t(spec({script("segv.sh", "echo 'about to crash'\nkill -SEGV $$")}));
  t.setup({}, context());
  try {
    t.step();
    FAIL() << "expected TrialFailure";
  } catch (const TrialFailure& e) {
    EXPECT_CONTAINS(e.what(), "killed by signal SIGSEGV (11)");
    EXPECT_CONTAINS(e.log_tail(), "about to crash");
  }
}

TEST_F(CommandTrainableTest, GarbageLineIsMalformedAndKillsTheProgram) {
  CommandTrainable t(spec({script("garbage.sh", "echo '{\"loss\": 1}' >&3\necho 'epoch 3 loss=0.1' >&3\nsleep 100")}));
  t.setup({}, context());
  const pid_t pid = t.pid();
  t.step();
  const auto t0 = Clock::now();
  try {
    t.step();
    FAIL() << "expected TrialFailure";
  } catch (const TrialFailure& e) {
    EXPECT_CONTAINS(e.what(), "malformed report line 2");
    EXPECT_CONTAINS(e.what(), "'epoch 3 loss=0.1'");
  }
  EXPECT_LT(seconds_since(t0), 3.0);
  EXPECT_TRUE(process_gone(pid, 0.0));
}

TEST_F(CommandTrainableTest, ObjectWithoutNumbersIsMalformed) {
  CommandTrainable t(spec({script("empty.sh", "echo '{}' >&3")}));
  t.setup({}, context());
  EXPECT_THROW(t.step(), TrialFailure);
}

TEST_F(CommandTrainableTest, PythonNanIsParsedAsNan) {
  CommandTrainable t(spec({"python3", "-c",
                           "import json, os\n"
                           "f = os.fdopen(int(os.environ['RANKTUNE_REPORT_FD']), 'w')\n"
                           "f.write(json.dumps({'loss': float('nan'), 'ok': 1}) + '\\n')\n"}));
  t.setup({}, context());
  const StepResult r = t.step();
  EXPECT_TRUE(std::isnan(r.metrics.at("loss")));
  EXPECT_EQ(r.metrics.at("ok"), 1);
  EXPECT_TRUE(t.step().done);
}

TEST_F(CommandTrainableTest, SilentProgramTimesOut) {
  CommandTrainable t(spec({script("hang.sh", "echo '{\"loss\": 1}' >&3\nsleep 100")}, /*step_timeout_s=*/1));
  t.setup({}, context());
  const pid_t pid = t.pid();
  EXPECT_EQ(t.step().metrics.at("loss"), 1);
  const auto t0 = Clock::now();
  try {
    t.step();
    FAIL() << "expected TrialFailure";
  } catch (const TrialFailure& e) {
    EXPECT_CONTAINS(e.what(), "no report for 1 s (step_timeout_s)");
  }
  const double waited = seconds_since(t0);
  EXPECT_GE(waited, 0.9);
  EXPECT_LT(waited, 4.0);
  EXPECT_TRUE(process_gone(pid, 0.0));
  EXPECT_TRUE(t.step().done);
}

TEST_F(CommandTrainableTest, StopKillsTheProcessGroup) {
  // The grandchild ignores SIGTERM, so only the SIGKILL sweep of the group ends it.
  CommandTrainable t(spec({script("tree.sh",
                                  "sh -c 'trap \"\" TERM; exec sleep 1000' &\n"
                                  "echo $! > grandchild.pid\n"
                                  "echo '{\"loss\": 1}' >&3\n"
                                  "wait")}));
  t.setup({}, context());
  const pid_t child = t.pid();
  EXPECT_EQ(t.step().metrics.at("loss"), 1);
  const pid_t grandchild = std::stoi(read("grandchild.pid"));
  ASSERT_FALSE(process_gone(grandchild, 0.0));
  const auto t0 = Clock::now();
  t.stop();
  EXPECT_LT(seconds_since(t0), 3.0);
  EXPECT_TRUE(process_gone(child, 0.0));
  EXPECT_TRUE(process_gone(grandchild));
  EXPECT_TRUE(t.step().done);
}

TEST_F(CommandTrainableTest, KillGraceBoundsTheWaitAndSIGKILLLeavesAWarning) {
  config::TrainableSpec stubborn = spec({script("stubborn.sh", "trap '' TERM\necho '{\"loss\": 1}' >&3\nexec sleep 1000")});
  edit_options<CommandOptions>(stubborn).kill_grace_s = 0.3;
  CommandTrainable t(stubborn);
  t.setup({}, context(7, 2));
  EXPECT_EQ(t.step().metrics.at("loss"), 1);
  const auto t0 = Clock::now();
  t.stop();
  const double waited = seconds_since(t0);
  EXPECT_GE(waited, 0.25);
  EXPECT_LT(waited, 1.5);
  const auto warnings = t.take_warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("trial 7 attempt 2"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("0.3 s of SIGTERM ([trainable] kill_grace_s)"), std::string::npos) << warnings[0];
  EXPECT_TRUE(t.take_warnings().empty());  // taken once

  // A program that exits on SIGTERM needs no SIGKILL and leaves no warning.
  CommandTrainable polite(spec({script("polite.sh", "echo '{\"loss\": 1}' >&3\nexec sleep 1000")}));
  polite.setup({}, context());
  EXPECT_EQ(polite.step().metrics.at("loss"), 1);
  polite.stop();
  EXPECT_TRUE(polite.take_warnings().empty());
}

TEST_F(CommandTrainableTest, ATrialsChildDiesWithTheWorkerEvenUnderSIGKILL) {
  // A "worker" (a forked copy of this test) starts a trial and is killed with SIGKILL: the
  // trial's program gets its death signal (PR_SET_PDEATHSIG), nobody has to stop it.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string program = script("forever.sh", "exec sleep 1000");
  const pid_t worker = ::fork();
  ASSERT_GE(worker, 0);
  if (worker == 0) {
    ::close(fds[0]);
    sys::ChildProcess child;
    sys::SpawnRequest r{program, {program}, {}, ""};
    pid_t pid = sys::ChildProcess::spawn(r, child) == 0 ? child.pid() : -1;
    (void)!::write(fds[1], &pid, sizeof pid);
    ::pause();  // until SIGKILL: no destructor runs
    ::_exit(0);
  }
  ::close(fds[1]);
  pid_t trial = -1;
  ASSERT_EQ(::read(fds[0], &trial, sizeof trial), static_cast<ssize_t>(sizeof trial));
  ::close(fds[0]);
  ASSERT_GT(trial, 0);
  ASSERT_FALSE(process_gone(trial, 0.0));
  ::kill(worker, SIGKILL);
  ::waitpid(worker, nullptr, 0);
  EXPECT_TRUE(process_gone(trial, 2.0));
}

TEST_F(CommandTrainableTest, ASubreaperKillsWhatTheProgramLeftInAnotherSession) {
  // In a forked copy of this test, so that becoming a subreaper does not outlast the test.
  const std::string program = script("daemon.sh",
                                     "setsid sleep 1000 < /dev/null > /dev/null 2>&1 &\n"
                                     "echo $! > daemon.pid\n"
                                     "( setsid sleep 1000 < /dev/null > /dev/null 2>&1 & echo $! > deeper.pid ) &\n"
                                     "wait $!\n"
                                     "echo '{\"loss\": 1}' >&3");
  const pid_t worker = ::fork();
  ASSERT_GE(worker, 0);
  if (worker == 0) {
    int ok = sys::become_subreaper() ? 0 : 10;
    {
      CommandTrainable t(spec({program}));
      t.setup({}, context());
      if (t.step().metrics.at("loss") != 1) ok = 11;
      if (!t.step().done) ok = 12;  // the program exited: its trial is over
    }
    for (const char* name : {"daemon.pid", "deeper.pid"}) {
      std::ifstream in(dir_ / name);
      pid_t pid = 0;
      if (!(in >> pid) || pid <= 0) ok = 13;
      else if (::kill(pid, 0) == 0) ok = 14;  // still there (not even a zombie: reaped)
    }
    ::_exit(ok);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(worker, &status, 0), worker);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: no subreaper, 11/12: the trial, 13: no pid, 14: an orphan lived on";
  for (const char* name : {"daemon.pid", "deeper.pid"}) {
    std::ifstream in(dir_ / name);
    pid_t pid = 0;
    if (in >> pid && pid > 0 && ::kill(pid, 0) == 0) ::kill(pid, SIGKILL);  // the old code's orphan
  }
}

TEST_F(CommandTrainableTest, LeaderExitEndsTheTrialEvenIfAGrandchildHoldsThePipe) {
  CommandTrainable t(spec({script("orphan.sh", "sleep 1000 &\necho $! > grandchild.pid\necho '{\"loss\": 1}' >&3\nexit 0")}));
  t.setup({}, context());
  EXPECT_EQ(t.step().metrics.at("loss"), 1);
  const auto t0 = Clock::now();
  EXPECT_TRUE(t.step().done);
  EXPECT_LT(seconds_since(t0), 3.0);
  EXPECT_TRUE(process_gone(std::stoi(read("grandchild.pid"))));
}

TEST_F(CommandTrainableTest, DestructorKillsAndReaps) {
  pid_t pid;
  {
    CommandTrainable t(spec({script("sleep.sh", "exec sleep 1000")}));
    t.setup({}, context());
    pid = t.pid();
    ASSERT_GT(pid, 0);
  }
  EXPECT_TRUE(process_gone(pid, 0.0));
}

TEST_F(CommandTrainableTest, MissingOrUnrunnableProgram) {
  for (const std::string& program : {std::string("/nonexistent/prog"), std::string("ranktune-no-such-program"),
                                     std::string("./missing.sh")}) {
    CommandTrainable t(spec({program}));
    try {
      t.setup({}, context());
      FAIL() << program;
    } catch (const TrialFailure& e) {
      EXPECT_EQ(std::string(e.what()), "cannot run '" + program + "': No such file or directory");
    }
  }
  CommandTrainable t(spec({script("plain.sh", "exit 0", /*executable=*/false)}));
  try {
    t.setup({}, context());
    FAIL();
  } catch (const TrialFailure& e) {
    EXPECT_CONTAINS(e.what(), "Permission denied");
  }
  auto bad_workdir = spec({"true"});
  edit_options<CommandOptions>(bad_workdir).workdir = (dir_ / "nope").string();
  CommandTrainable w(bad_workdir);
  EXPECT_THROW(w.setup({}, context()), TrialFailure);
  EXPECT_THROW(CommandTrainable(spec({"true"})).step(), TrialFailure);  // before setup
}

TEST_F(CommandTrainableTest, PythonExampleReportsLoss) {
  CommandTrainable t(spec({"python3", std::string(RANKTUNE_SOURCE_DIR) + "/examples/quadratic.py"}));
  t.setup({{"lr", 0.1}, {"width", std::int64_t{32}}, {"epochs", std::int64_t{4}}}, context());
  std::vector<double> loss;
  for (StepResult r = t.step(); !r.done; r = t.step()) {
    ASSERT_TRUE(r.metrics.contains("loss"));
    loss.push_back(r.metrics.at("loss"));
  }
  ASSERT_EQ(loss.size(), 4u);
  EXPECT_LT(loss.back(), loss.front());
  EXPECT_CONTAINS(t.log_tail(), "epoch 4");
}

TEST_F(CommandTrainableTest, PythonHelperWritesNonFiniteValues) {
  auto s = spec({"python3", "-c", "import ranktune\nranktune.report(loss=float('inf'), acc=float('nan'), n=3)\n"});
  edit_options<CommandOptions>(s).env = {{"PYTHONPATH", std::string(RANKTUNE_SOURCE_DIR) + "/python"}};
  CommandTrainable t(s);
  t.setup({}, context());
  const StepResult r = t.step();
  EXPECT_EQ(r.metrics.at("loss"), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(r.metrics.at("acc")));
  EXPECT_EQ(r.metrics.at("n"), 3);
  EXPECT_TRUE(t.step().done);
}

// ---------------------------------------------------------------- trial logs

TEST_F(CommandTrainableTest, ALaterRunOfTheSameAttemptAppendsAfterASeparator) {
  // A paused trial resumes in the same attempt: its first run's output must stay, and the
  // program learns the iteration its next report will be.
  const std::string prog = script("seg.sh", "echo \"run at $RANKTUNE_ITERATION\"\n"
                                            "echo \"{\\\"loss\\\": 1, \\\"it\\\": $RANKTUNE_ITERATION}\" >&3");
  CommandTrainable t(spec({prog}));
  Context first = context(3, 0);
  first.start_cause = "start";
  t.setup({}, first);
  EXPECT_EQ(t.step().metrics.at("it"), 1);
  EXPECT_TRUE(t.step().done);
  Context again = context(3, 0);
  again.first_iteration = 4;
  again.start_cause = "resume";
  t.setup({}, again);
  EXPECT_EQ(t.step().metrics.at("it"), 4);
  EXPECT_TRUE(t.step().done);
  EXPECT_EQ(read("logs/trial_3_attempt_0.log"),
            "run at 1\n[ranktune] ---- trial 3 attempt 0 goes on at iteration 4 (resume) ----\nrun at 4\n");
  // The tail is this run's: the separator, then what the program wrote since.
  EXPECT_EQ(t.log_tail(), "[ranktune] ---- trial 3 attempt 0 goes on at iteration 4 (resume) ----\nrun at 4\n");
  // A fresh start of the attempt empties it.
  t.setup({}, first);
  EXPECT_TRUE(t.step().metrics.contains("it"));
  EXPECT_TRUE(t.step().done);
  EXPECT_EQ(read("logs/trial_3_attempt_0.log"), "run at 1\n");
  // A run that starts in a log still empty (an exploit before the trial wrote anything)
  // says why at its top too.
  Context exploit = context(4, 0);
  exploit.first_iteration = 9;
  exploit.start_cause = "exploit of trial 2 at its iteration 8";
  t.setup({}, exploit);
  EXPECT_TRUE(t.step().metrics.contains("it"));
  EXPECT_TRUE(t.step().done);
  EXPECT_EQ(read("logs/trial_4_attempt_0.log"),
            "[ranktune] ---- trial 4 attempt 0 goes on at iteration 9 (exploit of trial 2 at its iteration 8) ----\n"
            "run at 9\n");
}

TEST_F(CommandTrainableTest, PythonHelperCountsFromRanktuneIteration) {
  auto s = spec({"python3", "-c",
                 "import ranktune\n"
                 "first = ranktune.iteration()\n"
                 "ranktune.report(loss=1, first=first)\n"
                 "ranktune.report(loss=1, second=ranktune.iteration())\n"});
  edit_options<CommandOptions>(s).env = {{"PYTHONPATH", std::string(RANKTUNE_SOURCE_DIR) + "/python"}};
  CommandTrainable t(s);
  Context c = context();
  c.first_iteration = 13;  // after an exploit at the trial's iteration 12
  c.start_cause = "exploit of trial 7 at its iteration 8";
  t.setup({}, c);
  EXPECT_EQ(t.step().metrics.at("first"), 13);
  EXPECT_EQ(t.step().metrics.at("second"), 14);
  EXPECT_TRUE(t.step().done);
}

TEST_F(CommandTrainableTest, ThePythonExceptionIsInTheError) {
  CommandTrainable t(spec({"python3", "-c",
                           "import sys\n"
                           "print('[ranktune] a line of ours is skipped')\n"
                           "raise RuntimeError('size mismatch for c1.weight: ' + 'x' * 500)\n"}));
  t.setup({}, context());
  try {
    t.step();
    FAIL() << "expected TrialFailure";
  } catch (const TrialFailure& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("exited with code 1: RuntimeError: size mismatch for c1.weight: xxx", 0), 0u) << what;
    EXPECT_LE(what.size(), 230u) << what;
    EXPECT_EQ(what.substr(what.size() - 3), "...");
    EXPECT_CONTAINS(e.log_tail(), "Traceback (most recent call last)");
  }
}

TEST(LastMeaningfulLine, SkipsBlankAndOurOwnLines) {
  EXPECT_EQ(last_meaningful_line("Traceback:\n  File x\nValueError: bad\n\n  \n"), "ValueError: bad");
  EXPECT_EQ(last_meaningful_line("real\n[ranktune] ---- log cut here ----\n"), "real");
  EXPECT_EQ(last_meaningful_line("progress 10%\rprogress 20%\r\n"), "progress 10% progress 20%");
  EXPECT_EQ(last_meaningful_line("\n\n"), "");
  EXPECT_EQ(last_meaningful_line(std::string(300, 'a'), 10), "aaaaaaa...");
}

TEST_F(CommandTrainableTest, AMetricThatIsNotANumberIsMalformed) {
  for (const auto& [value, type] : std::vector<std::pair<std::string, std::string>>{
           {"\"0.5\"", "a string (\"0.5\")"}, {"true", "a boolean (true)"}, {"{\"a\": 1}", "an object"},
           {"[1]", "an array"}}) {
    config::TrainableSpec recorded = spec({script("typed.sh", "echo '{\"loss\": 1, \"phase\": \"train\"}' >&3\n"
                                                          "echo '{\"step\": 2, \"loss\": " + value + "}' >&3\nsleep 100")});
    recorded.metrics = {"loss"};  // only a recorded metric must be a number: "phase" is left out
    CommandTrainable t(recorded);
    t.setup({}, context());
    EXPECT_EQ(t.step().metrics.at("loss"), 1);
    try {
      t.step();
      FAIL() << value;
    } catch (const TrialFailure& e) {
      EXPECT_CONTAINS(e.what(), "malformed report line 2: 'loss' is " + type + ", not a number");
    }
  }
  // The spellings of non-finite numbers are still numbers.
  CommandTrainable t(spec({script("nan.sh", "echo '{\"a\": null, \"b\": \"nan\", \"c\": \"-inf\"}' >&3")}));
  t.setup({}, context());
  const StepResult r = t.step();
  EXPECT_TRUE(std::isnan(r.metrics.at("a")) && std::isnan(r.metrics.at("b")));
  EXPECT_EQ(r.metrics.at("c"), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(t.step().done);
}

// Issue 27 item 13a: 1e309 is valid JSON that overflows a double. It failed the trial as
// "not valid JSON"; it is recorded as inf, with a warning that names the metric and trial.
TEST_F(CommandTrainableTest, ANumberBeyondADoubleIsInfWithAWarning) {
  CommandTrainable t(spec({script("huge.sh", "echo '{\"loss\": 1e309, \"grad\": -2E+400, \"lr\": 1e-400, \"note\": \"1e309\"}' >&3\n"
                                             "echo '{\"loss\": 0.5, \"grad\": -1e999}' >&3")}));
  t.setup({}, context(7, 2));
  const StepResult r = t.step();
  EXPECT_EQ(r.metrics.at("loss"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(r.metrics.at("grad"), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(r.metrics.at("lr"), 0);           // an underflow is a number as it is
  EXPECT_EQ(r.metrics.count("note"), 0u);      // a string stays a string
  const StepResult next = t.step();
  EXPECT_EQ(next.metrics.at("loss"), 0.5);  // the trial goes on
  EXPECT_EQ(next.metrics.at("grad"), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(t.step().done);
  const auto warnings = t.take_warnings();  // by name; grad's second overflow is not repeated
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_CONTAINS(warnings[0], "metric 'grad' = -2E+400 on report line 1");
  EXPECT_CONTAINS(warnings[0], "recorded as -inf");
  EXPECT_EQ(warnings[1], "trial 7 attempt 2: metric 'loss' = 1e309 on report line 1 is beyond the range of a double "
                         "(about 1.8e308): recorded as inf (said once per metric and attempt)");
  // A line that is not JSON is still refused.
  CommandTrainable bad(spec({script("bad.sh", "echo '{\"loss\": 1e309,}' >&3\nsleep 100")}));
  bad.setup({}, context());
  try {
    bad.step();
    FAIL() << "expected TrialFailure";
  } catch (const TrialFailure& e) {
    EXPECT_CONTAINS(e.what(), "malformed report line 1: not valid JSON");
  }
}

TEST_F(CommandTrainableTest, TheLogIsCappedKeepingItsHeadAndTail) {
  // 2 MB of numbered lines under a 64 KiB cap.
  // Its second run (iteration 2) prints one line.
  auto s = spec({script("flood.sh", "if [ \"$RANKTUNE_ITERATION\" = 2 ]; then echo SECOND; echo '{\"loss\": 1}' >&3; exit; fi\n"
                                    "echo FIRST\nseq 1 300000\necho LAST\necho '{\"loss\": 1}' >&3")});
  edit_options<CommandOptions>(s).max_log_mb = 1.0 / 16;
  CommandTrainable t(s);
  Context c = context();
  c.start_cause = "start";
  t.setup({}, c);
  EXPECT_EQ(t.step().metrics.at("loss"), 1);
  EXPECT_TRUE(t.step().done);
  const std::string log = read("logs/trial_1_attempt_0.log");
  EXPECT_LE(log.size(), 65536u + 1024u);
  EXPECT_GE(log.size(), 32768u + 16384u);
  EXPECT_EQ(log.rfind("FIRST\n1\n2\n3\n", 0), 0u);
  EXPECT_EQ(log.substr(log.size() - 12), "300000\nLAST\n");
  const auto cut = log.find("\n[ranktune] ---- log cut here: ");
  ASSERT_NE(cut, std::string::npos);
  EXPECT_EQ(cut, 32768u);
  long long dropped = 0;
  ASSERT_EQ(std::sscanf(log.c_str() + cut, "\n[ranktune] ---- log cut here: %lld bytes", &dropped), 1);
  // Every byte the program wrote is either in the log or counted as dropped.
  const std::size_t marker_length = log.find('\n', cut + 1) + 1 - cut;
  long long total = 6 + 5;  // FIRST, LAST
  for (int i = 1; i <= 300000; ++i) total += static_cast<long long>(std::to_string(i).size()) + 1;
  EXPECT_EQ(static_cast<long long>(log.size() - marker_length) + dropped, total);
  EXPECT_CONTAINS(t.log_tail(), "LAST");

  // A later run of the attempt appends to the cut log: the marker is found again and the
  // log stays under the cap.
  Context again = context();
  again.start_cause = "resume";
  again.first_iteration = 2;
  t.setup({}, again);
  EXPECT_EQ(t.step().metrics.at("loss"), 1);
  EXPECT_TRUE(t.step().done);
  const std::string log2 = read("logs/trial_1_attempt_0.log");
  EXPECT_LE(log2.size(), 65536u + 1024u);
  EXPECT_EQ(log2.rfind("FIRST\n1\n2\n3\n", 0), 0u);
  EXPECT_EQ(log2.find("\n[ranktune] ---- log cut here: "), 32768u);
  EXPECT_EQ(log2.find("log cut here", 32800), std::string::npos) << "a second marker";
  const std::string end = "300000\nLAST\n[ranktune] ---- trial 1 attempt 0 goes on at iteration 2 (resume) ----\nSECOND\n";
  ASSERT_GE(log2.size(), end.size());
  EXPECT_EQ(log2.substr(log2.size() - end.size()), end);
}

TEST_F(CommandTrainableTest, AStderrFloodAfterTheLastReportDoesNotBlockTheExit) {
  // The program closes its report fd, then writes more than a pipe holds: the worker must
  // go on reading its output while it waits for the exit.
  CommandTrainable t(spec({script("late.sh", "echo '{\"loss\": 1}' >&3\nexec 3>&-\n"
                                             "head -c 3000000 /dev/zero | tr '\\0' 'y' >&2\necho done >&2")},
                          /*step_timeout_s=*/20));
  t.setup({}, context());
  EXPECT_EQ(t.step().metrics.at("loss"), 1);
  const auto t0 = Clock::now();
  EXPECT_TRUE(t.step().done);
  EXPECT_LT(seconds_since(t0), 10.0);
  EXPECT_CONTAINS(t.log_tail(), "done");
}

TEST_F(CommandTrainableTest, APlantedSymlinkIsNotWrittenThrough) {
  const fs::path victim = dir_ / "victim";
  std::ofstream(victim) << "precious\n";
  fs::create_directory(dir_ / "logs");
  fs::create_symlink(victim, dir_ / "logs" / "trial_1_attempt_0.log");
  CommandTrainable t(spec({script("hello.sh", "echo hello; echo '{\"loss\": 1}' >&3")}));
  try {
    t.setup({}, context());
    FAIL() << "expected TrialFailure";
  } catch (const TrialFailure& e) {
    EXPECT_CONTAINS(e.what(), "cannot open its log: ");
    EXPECT_CONTAINS(e.what(), "trial_1_attempt_0.log is a symbolic link");
  }
  EXPECT_EQ(read("victim"), "precious\n");
  // The same for a resumed run, which appends.
  Context again = context();
  again.start_cause = "resume";
  EXPECT_THROW(t.setup({}, again), TrialFailure);
  EXPECT_EQ(read("victim"), "precious\n");
}

TEST_F(CommandTrainableTest, ALogsFolderThatIsALinkOrOpenToOthersIsRefused) {
  fs::create_directory(dir_ / "elsewhere");
  fs::create_directory_symlink(dir_ / "elsewhere", dir_ / "logs");
  CommandTrainable t(spec({script("hello.sh", "echo hello; echo '{\"loss\": 1}' >&3")}));
  try {
    t.setup({}, context());
    FAIL() << "expected TrialFailure";
  } catch (const TrialFailure& e) {
    EXPECT_CONTAINS(e.what(), "logs is a symbolic link");
  }
  EXPECT_TRUE(fs::is_empty(dir_ / "elsewhere"));
  fs::remove(dir_ / "logs");
  fs::create_directory(dir_ / "logs");
  ::chmod((dir_ / "logs").c_str(), 0777);
  try {
    t.setup({}, context());
    FAIL() << "expected TrialFailure";
  } catch (const TrialFailure& e) {
    EXPECT_CONTAINS(e.what(), "is writable by other users");
  }
}

TEST_F(CommandTrainableTest, AFullDiskIsNamedInTheError) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  const fs::path mnt = dir_ / "small";
  fs::create_directory(mnt);
  const std::string mount = "mount -t tmpfs -o size=128k tmpfs '" + mnt.string() + "' 2>/dev/null";
  if (std::system(mount.c_str()) != 0) GTEST_SKIP() << "cannot mount a tmpfs here";
  struct Unmount {
    std::string path;
    ~Unmount() { (void)std::system(("umount '" + path + "'").c_str()); }
  } unmount{mnt.string()};
  // 1 MB of output into 128 KiB, then the program goes on reporting.
  CommandTrainable t(spec({script("big.sh", "head -c 1000000 /dev/zero | tr '\\0' 'z'; echo\n"
                                            "echo 'the last words'\n"
                                            "i=0; while [ $i -lt 5 ]; do echo '{\"loss\": 1}' >&3; sleep 0.2; i=$((i+1)); done")}));
  Context c = context();
  c.log_dir = (mnt / "logs").string();
  t.setup({}, c);
  try {
    for (int i = 0; i < 10; ++i) ASSERT_FALSE(t.step().done);
    FAIL() << "expected TrialFailure";
  } catch (const TrialFailure& e) {
    EXPECT_CONTAINS(e.what(), "cannot keep its log: the file system of " + (mnt / "logs" / "trial_1_attempt_0.log").string() +
                                  " is full (");
    EXPECT_CONTAINS(e.what(), " bytes free)");
    EXPECT_CONTAINS(e.log_tail(), "the last words");  // from memory: the file could not take it
  }
}

TEST(ReadTail, KeepsTheLastLinesWithinTheByteLimit) {
  const fs::path p = fs::temp_directory_path() / ("ranktune_tail_" + std::to_string(::getpid()));
  {
    std::ofstream out(p);
    for (int i = 1; i <= 100; ++i) out << "line " << i << "\n";
  }
  EXPECT_EQ(read_tail(p.string(), 2), "line 99\nline 100\n");
  const std::string tail = read_tail(p.string(), 1000, 30);
  EXPECT_EQ(tail.rfind("line", 0), 0u);  // starts at a whole line
  EXPECT_LE(tail.size(), 30u);
  EXPECT_EQ(read_tail("/nonexistent/log"), "");
  fs::remove(p);
}

TEST(SignalDescription, NamesCommonSignals) {
  EXPECT_EQ(sys::signal_description(SIGSEGV), "SIGSEGV (11)");
  EXPECT_EQ(sys::signal_description(SIGKILL), "SIGKILL (9)");
}

}  // namespace
}  // namespace ranktune::train
