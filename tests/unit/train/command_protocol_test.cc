// Protocol version 2 of the command trainable (docs/command_protocol.md): torchrun's
// variables and the narrowed GPU, the rendezvous placement of a gang's members, the hello
// that makes ranktune answer every report, the stop that a program carries out by itself
// (or not, within stop_grace_s), per-member logs, and a gang member that stops waiting when
// a peer failed.
#include <signal.h>

#include <thread>

#include <gtest/gtest.h>

#include "mpi/rendezvous.h"
#include "tests/unit/train/command_fixtures.h"
#include "tests/unit/common/process_gone.h"

namespace ranktune::train {
namespace {

TEST(DistributedVariables, TorchrunsVariablesAndTheCpuLeftAsItIs) {
  DistributedEnv d;
  d.rank = 1;
  d.world_size = 4;
  d.local_rank = 1;
  d.local_world_size = 2;
  d.node_rank = 0;
  d.master_addr = "10.0.0.7";
  d.master_port = 29411;
  const auto v = distributed_variables(d, "cpu", "3");
  EXPECT_EQ(v.at("RANK"), "1");
  EXPECT_EQ(v.at("WORLD_SIZE"), "4");
  EXPECT_EQ(v.at("LOCAL_RANK"), "1");
  EXPECT_EQ(v.at("LOCAL_WORLD_SIZE"), "2");
  EXPECT_EQ(v.at("GROUP_RANK"), "0");
  EXPECT_EQ(v.at("NODE_RANK"), "0");
  EXPECT_EQ(v.at("MASTER_ADDR"), "10.0.0.7");
  EXPECT_EQ(v.at("MASTER_PORT"), "29411");
  EXPECT_EQ(v.at("RANKTUNE_DEVICE"), "cpu");
  EXPECT_EQ(v.count("CUDA_VISIBLE_DEVICES"), 0u);  // CPU mode narrows nothing

  d.master_port = 0;  // no free port was found: the program is told none
  EXPECT_EQ(distributed_variables(d, "cpu", nullptr).count("MASTER_PORT"), 0u);
}

// An attempt's environment (train/command_env.h): the worker's, then `[trainable] env` over
// it, then ranktune's own variables over both.
TEST(TrialEnvironment, InheritedThenTrainableEnvThenRanktunes) {
  ::setenv("RANKTUNE_TEST_INHERITED", "kept", 1);
  ::setenv("RANKTUNE_TEST_REPLACED", "inherited", 1);
  ::setenv("PYTHONUNBUFFERED", "0", 1);  // the user's choice stays
  ::setenv("PYTHONPATH", "/mine", 1);
  Context c;
  c.trial_id = 7;
  c.attempt = 2;
  c.seed = 13;
  c.first_iteration = 5;
  c.device = "cpu";
  const auto env = trial_environment(
      {{"MY_EXTRA", "x"}, {"RANKTUNE_TEST_REPLACED", "trainable"}, {"RANKTUNE_TRIAL_ID", "not this"}}, {{"lr", 0.5}}, c);
  ::unsetenv("RANKTUNE_TEST_INHERITED");
  ::unsetenv("RANKTUNE_TEST_REPLACED");
  EXPECT_EQ(env.at("RANKTUNE_TEST_INHERITED"), "kept");
  EXPECT_EQ(env.at("RANKTUNE_TEST_REPLACED"), "trainable");
  EXPECT_EQ(env.at("MY_EXTRA"), "x");
  EXPECT_EQ(env.at("PYTHONUNBUFFERED"), "0");
  const std::string helper = python_helper_dir();
  EXPECT_EQ(env.at("PYTHONPATH"), helper.empty() ? "/mine" : "/mine:" + helper);  // the user's entries first
  EXPECT_EQ(env.at("RANKTUNE_CONFIG"), "{\"lr\":0.5}");
  EXPECT_EQ(env.at("RANKTUNE_TRIAL_ID"), "7");
  EXPECT_EQ(env.at("RANKTUNE_ATTEMPT"), "2");
  EXPECT_EQ(env.at("RANKTUNE_SEED"), "13");
  EXPECT_EQ(env.at("RANKTUNE_ITERATION"), "5");
  EXPECT_EQ(env.at("RANKTUNE_PROTOCOL"), std::to_string(kCommandProtocol));
  EXPECT_EQ(env.at("RANKTUNE_REPORT_FD"), "3");
  EXPECT_EQ(env.at("RANKTUNE_CONTROL_FD"), "4");
  EXPECT_EQ(env.at("WORLD_SIZE"), "1");
  EXPECT_EQ(env.at("RANKTUNE_DEVICE"), "cpu");
  EXPECT_EQ(environment_list({{"A", "1"}, {"B", "x=y"}}), (std::vector<std::string>{"A=1", "B=x=y"}));
}

TEST(DistributedVariables, TheWorkersGpuBecomesDeviceZero) {
  const DistributedEnv d;
  // The worker's "cuda:1" counts in its own CUDA_VISIBLE_DEVICES.
  auto v = distributed_variables(d, "cuda:1", "4,5,6");
  EXPECT_EQ(v.at("CUDA_VISIBLE_DEVICES"), "5");
  EXPECT_EQ(v.at("RANKTUNE_DEVICE"), "cuda:0");
  v = distributed_variables(d, "cuda:2", nullptr);
  EXPECT_EQ(v.at("CUDA_VISIBLE_DEVICES"), "2");
  EXPECT_EQ(v.at("RANKTUNE_DEVICE"), "cuda:0");
  v = distributed_variables(d, "cuda:0", "GPU-8f2c,GPU-11aa");  // UUIDs are kept as they are
  EXPECT_EQ(v.at("CUDA_VISIBLE_DEVICES"), "GPU-8f2c");
  // A device outside the list is left alone rather than guessed.
  v = distributed_variables(d, "cuda:3", "0,1");
  EXPECT_EQ(v.count("CUDA_VISIBLE_DEVICES"), 0u);
  EXPECT_EQ(v.at("RANKTUNE_DEVICE"), "cuda:3");
}

TEST(Rendezvous, MembersArePlacedByHost) {
  const std::vector<std::string> hosts = {"nodeA", "nodeA", "nodeB", "nodeA", "nodeB"};
  const DistributedEnv lead = mpi::place_member(hosts, 0, "10.1.0.1", 29500);
  EXPECT_EQ(lead.rank, 0);
  EXPECT_EQ(lead.world_size, 5);
  EXPECT_EQ(lead.local_rank, 0);
  EXPECT_EQ(lead.local_world_size, 3);
  EXPECT_EQ(lead.node_rank, 0);
  EXPECT_EQ(lead.num_nodes, 2);
  EXPECT_EQ(lead.master_addr, "10.1.0.1");  // several hosts: the leader's address
  EXPECT_EQ(lead.master_port, 29500);
  const DistributedEnv fourth = mpi::place_member(hosts, 3, "10.1.0.1", 29500);
  EXPECT_EQ(fourth.local_rank, 2);
  EXPECT_EQ(fourth.node_rank, 0);
  const DistributedEnv last = mpi::place_member(hosts, 4, "10.1.0.1", 29500);
  EXPECT_EQ(last.local_rank, 1);
  EXPECT_EQ(last.local_world_size, 2);
  EXPECT_EQ(last.node_rank, 1);
  // One host: the loopback, whatever the leader's interface.
  const std::vector<std::string> one = {"n", "n"};
  EXPECT_EQ(mpi::place_member(one, 1, "10.1.0.1", 1).master_addr, "127.0.0.1");
  // A trial alone gets a world of one with a port of its own.
  const DistributedEnv alone = mpi::rendezvous(nullptr, "n");
  EXPECT_EQ(alone.world_size, 1);
  EXPECT_GT(alone.master_port, 0);
}

// A program that says hello, then reports and reads one answer per report, and prints
// what it got into answers.txt; it exits 0 by itself at "stop".
constexpr const char* kPolite =
    "echo '{\"ranktune\": \"hello\", \"protocol\": 2}' >&3\n"
    "i=0\n"
    "while true; do\n"
    "  i=$((i+1)); echo \"{\\\"loss\\\": $i}\" >&3\n"
    "  read answer <&4; echo \"$answer\" >> answers.txt\n"
    "  [ \"$answer\" = stop ] && exit 0\n"
    "done";

TEST_F(CommandTrainableTest, AProgramThatSaidHelloIsAnsweredAndStopsByItself) {
  config::TrainableSpec s = spec({script("polite.sh", kPolite)});
  CommandTrainable t(s);
  Context c = context();
  t.setup({}, c);
  EXPECT_EQ(t.step().metrics.at("loss"), 1);  // the hello is no report
  EXPECT_EQ(t.step().metrics.at("loss"), 2);
  const pid_t pid = t.pid();
  const auto t0 = Clock::now();
  t.stop();
  EXPECT_LT(seconds_since(t0), 2.0);  // it exited at once, not after stop_grace_s (30 s)
  EXPECT_TRUE(process_gone(pid, 0.0));
  EXPECT_TRUE(t.take_warnings().empty());  // no SIGTERM was needed
  EXPECT_EQ(read("answers.txt"), "continue\nstop\n");
}

TEST_F(CommandTrainableTest, AProgramThatIgnoresTheStopGetsSigtermAfterTheGrace) {
  config::TrainableSpec s = spec({script("deaf.sh",
                                     "echo '{\"ranktune\": \"hello\", \"protocol\": 2}' >&3\n"
                                     "echo '{\"loss\": 1}' >&3\n"
                                     "read answer <&4\n"
                                     "while true; do echo '{\"loss\": 2}' >&3; sleep 0.01; done")});
  edit_options<CommandOptions>(s).stop_grace_s = 0.5;
  CommandTrainable t(s);
  t.setup({}, context(4, 1));
  EXPECT_EQ(t.step().metrics.at("loss"), 1);
  const auto t0 = Clock::now();
  t.stop();  // it reports on and on meanwhile: those lines are read and dropped
  const double waited = seconds_since(t0);
  EXPECT_GE(waited, 0.45);
  EXPECT_LT(waited, 3.0);
  const auto w = t.take_warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("trial 4 attempt 1: the program did not exit within 0.5 s of the stop request "
                      "([trainable] stop_grace_s), so it got SIGTERM"),
            std::string::npos)
      << w[0];
}

TEST_F(CommandTrainableTest, AVersionOneProgramIsNeverWrittenToAndIsSignalled) {
  // No hello and no checkpoints: ranktune must not answer (the program never reads fd 4),
  // and a stop is SIGTERM at once, as before protocol 2.
  CommandTrainable t(spec({script("old.sh",
                                  "echo \"$RANKTUNE_PROTOCOL $RANKTUNE_CONTROL_FD $WORLD_SIZE $RANK\" > env.txt\n"
                                  "for i in 1 2 3; do echo \"{\\\"loss\\\": $i}\" >&3; done\n"
                                  "sleep 1000")}));
  t.setup({}, context());
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(t.step().metrics.at("loss"), i);
  const auto t0 = Clock::now();
  t.stop();
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_EQ(read("env.txt"), "2 4 1 0\n");
}

TEST_F(CommandTrainableTest, EachGangMemberHasItsOwnLog) {
  CommandTrainable t(spec({script("member.sh", "echo \"member $RANK of $WORLD_SIZE\"\necho '{\"loss\": 1}' >&3")}));
  Context c = context(3, 0);
  c.distributed.rank = 1;
  c.distributed.world_size = 2;
  t.setup({}, c);
  EXPECT_EQ(t.step().metrics.at("loss"), 1);
  EXPECT_TRUE(t.step().done);
  EXPECT_EQ(fs::path(t.log_path()).filename(), "trial_3_attempt_0_rank_1.log");
  EXPECT_EQ(read("logs/trial_3_attempt_0_rank_1.log"), "member 1 of 2\n");
}

TEST_F(CommandTrainableTest, AMemberWaitingOnAFailedPeerStopsWaiting) {
  // The program blocks as a DDP rank does in an all-reduce whose peer died.
  CommandTrainable t(spec({script("blocked.sh", "exec sleep 1000")}));
  Context c = context();
  const auto t0 = Clock::now();
  c.peer_failed = [&] { return seconds_since(t0) > 0.3; };
  t.setup({}, c);
  const pid_t pid = t.pid();
  try {
    t.step();
    FAIL() << "step() returned";
  } catch (const PeerFailure& e) {
    EXPECT_STREQ(e.what(), "stopped because another member of its gang failed");
  }
  EXPECT_LT(seconds_since(t0), 3.0);
  EXPECT_TRUE(process_gone(pid, 0.0));
}

}  // namespace
}  // namespace ranktune::train
