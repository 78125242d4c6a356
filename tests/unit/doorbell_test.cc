// The ranks' doorbells (mpi/doorbell.h): a ring from another process ends a nap early, a
// bell is private to its job and rank, and without a bell a nap is a plain sleep. The bell
// is one per process, so each case runs in forked processes.
#include "mpi/doorbell.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>

#include <gtest/gtest.h>

using namespace std::chrono_literals;
namespace rm = ranktune::mpi;

namespace {

// A job name of this test run alone: two runs of the test at once must not ring each other.
std::string job(const char* which) { return std::string("doorbell_test/") + std::to_string(::getpid()) + "/" + which; }

// Runs `body` in a child process; its return value is the child's exit code.
pid_t fork_child(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  return pid;
}

int exit_code(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A nap long enough that only a ring ends it within a test's life.
constexpr auto kLong = std::chrono::microseconds(10s);

}  // namespace

TEST(Doorbell, ARingFromAnotherProcessEndsTheNapBothWays) {
  const std::string j = job("both");
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  // Rank 0 and rank 1 of one job, each in a process of its own (the bell is per process,
  // and forked children would inherit one opened here).
  const pid_t zero = fork_child([&] {
    rm::open_doorbell(j, 0);
    if (!rm::bell_counts().open) return 10;
    if (::write(go[1], "g", 1) != 1) return 11;
    if (!rm::bell_wait(kLong)) return 12;  // rank 1's ring
    rm::ring(1);
    return rm::bell_counts().rung == 1 ? 0 : 13;
  });
  const pid_t one = fork_child([&] {
    rm::open_doorbell(j, 1);
    if (!rm::bell_counts().open) return 10;
    char g = 0;
    if (::read(go[0], &g, 1) != 1) return 11;  // rank 0's bell is open
    rm::ring(0);
    if (!rm::bell_wait(kLong)) return 12;  // rank 0's answer
    const rm::BellCounts c = rm::bell_counts();
    return c.rung == 1 && c.ran_out == 0 ? 0 : 13;
  });
  const char* codes = "10: no bell, 11: pipe, 12: the ring did not end the nap, 13: counts";
  EXPECT_EQ(exit_code(one), 0) << codes;
  EXPECT_EQ(exit_code(zero), 0) << codes;
  ::close(go[0]);
  ::close(go[1]);
}

TEST(Doorbell, RingsReachOnlyTheirJobAndRank) {
  const std::string a = job("a"), b = job("b");
  const pid_t listener = fork_child([&] {
    rm::open_doorbell(b, 0);
    if (!rm::bell_counts().open) return 10;
    // Rank 0 of job b: rings for rank 0 of job a and for rank 1 of job b go elsewhere.
    return rm::bell_wait(std::chrono::microseconds(1s)) ? 20 : 0;
  });
  const pid_t ringer = fork_child([&] {
    rm::open_doorbell(a, 1);
    ::usleep(100000);  // the listener's bell is open by now, or its case fails anyway
    rm::ring(0);       // job a has no rank 0: remembered as unreachable, never an error
    rm::ring(0);
    return 0;
  });
  const pid_t other_rank = fork_child([&] {
    rm::open_doorbell(b, 2);
    ::usleep(100000);
    rm::ring(1);  // job b's rank 1 does not exist
    return 0;
  });
  EXPECT_EQ(exit_code(ringer), 0);
  EXPECT_EQ(exit_code(other_rank), 0);
  EXPECT_EQ(exit_code(listener), 0) << "20: a ring for another job or rank woke it";
}

TEST(Doorbell, ANameTakenAlreadyLeavesTheBellClosedAndNapsSleep) {
  const std::string j = job("taken");
  int ready[2], done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  const pid_t owner = fork_child([&] {
    rm::open_doorbell(j, 0);
    const char ok = rm::bell_counts().open ? 'y' : 'n';
    if (::write(ready[1], &ok, 1) != 1) return 11;
    char x = 0;
    return ::read(done[0], &x, 1) == 1 ? 0 : 12;
  });
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');
  const pid_t second = fork_child([&] {
    rm::open_doorbell(j, 0);  // the same job and rank: the owner keeps the name
    const rm::BellCounts c = rm::bell_counts();
    if (c.open) return 20;
    rm::ring(0);  // reaches the owner, never this process
    if (rm::bell_wait(std::chrono::microseconds(20ms))) return 21;  // a plain sleep
    return rm::bell_counts().ran_out == 1 ? 0 : 22;
  });
  EXPECT_EQ(exit_code(second), 0) << "20: opened a name that was taken, 21: woke, 22: counts";
  ASSERT_EQ(::write(done[1], "d", 1), 1);
  EXPECT_EQ(exit_code(owner), 0);
  for (int fd : {ready[0], ready[1], done[0], done[1]}) ::close(fd);
}

TEST(Doorbell, AnEmptyJobOpensNoBell) {
  EXPECT_EQ(rm::doorbell_job("", 42), "");
  EXPECT_EQ(rm::doorbell_job("boot/pid:[1]", 42), "boot/pid:[1]/42");
  const pid_t child = fork_child([] {
    rm::open_doorbell("", 0);
    return rm::bell_counts().open ? 1 : 0;
  });
  EXPECT_EQ(exit_code(child), 0);
}
