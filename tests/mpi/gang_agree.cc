// A real-MPI check of mpi::Gang (run by gang_agree.sh under mpirun -np 4): ranks 1..3 form
// a gang from the duplicated world (rank 0, like the driver, only takes part in the
// duplication), then go through the phases a gang trial goes through:
//   1. every member succeeds: agree() says ok everywhere;
//   2. the leader shares a decision: every member gets the leader's three integers;
//   3. member 2 (world rank 3) fails: every member learns that the gang failed, and the
//      leader gets member 2's reason and log tail, naming its gang and world rank;
//   4. the training collective sums over exactly the three members;
//   5. member 2 raises an alarm and fails, member 1 sees the alarm and fails secondarily:
//      the gang reports member 2 (the primary failure), and no alarm is left unreceived;
//   6. members 1 and 2 both fail by themselves: the gang reports the one that failed first;
//   7. only the leader fails: the followers are told that the gang failed.
// The gang is destroyed (its communicators freed) before MPI_Finalize.
//   gang_agree   prints "ok: ..." on the leader and exits 0 everywhere, else exits 1

#include <mpi.h>

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>

#include "mpi/gang.h"

using namespace ranktune;

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  return 1;
}

int run(const boost::mpi::communicator& world) {
  if (world.size() != 4) return fail("run with mpirun -np 4");
  const boost::mpi::communicator gangs = mpi::gang_parent(world);
  if (world.rank() == 0) return 0;

  const std::vector<int> members = {1, 2, 3};
  mpi::Gang gang(static_cast<MPI_Comm>(gangs), members, /*tag=*/5, "cpu");
  if (gang.size() != 3 || gang.rank() != world.rank() - 1) return fail("gang rank/size");
  if (gang.leader() != (world.rank() == 1)) return fail("leader");
  if (gang.collective().name() != "mpi") return fail("CPU gangs train over MPI, got " + gang.collective().name());

  // 1.
  if (!gang.agree({}).ok) return fail("phase 1: a gang where all succeeded failed");

  // 2.
  std::int64_t decision[3] = {0, 0, 0};
  if (gang.leader()) {
    decision[0] = 2;
    decision[1] = 17;
    decision[2] = 1;
  }
  gang.share(decision);
  if (decision[0] != 2 || decision[1] != 17 || decision[2] != 1) return fail("phase 2: decision not shared");

  // 3.
  mpi::Outcome mine;
  if (gang.rank() == 2) mine = {false, "std::bad_alloc while loading the data", "last line of output"};
  const mpi::Outcome all = gang.agree(mine);
  if (all.ok) return fail("phase 3: member 2 failed, but rank " + std::to_string(world.rank()) + " was told ok");
  if (gang.leader()) {
    const std::string want = "gang member 2 (rank 3) failed: std::bad_alloc while loading the data";
    if (all.reason != want) return fail("phase 3: leader got reason '" + all.reason + "', want '" + want + "'");
    if (all.log_tail != "last line of output") return fail("phase 3: log tail '" + all.log_tail + "'");
  }

  // 4.
  double v[1] = {static_cast<double>(world.rank())};
  gang.collective().allreduce_sum(std::span<double>(v));
  if (v[0] != 6.0) return fail("phase 4: sum over the gang is " + std::to_string(v[0]) + ", want 1 + 2 + 3");

  // 5.
  mine = {};
  if (gang.rank() == 2) {
    mine = {false, "killed by signal SIGKILL", "tail of 2", false, 100.0};
    gang.alarm();
  }
  if (gang.rank() == 1) {
    bool seen = false;
    for (int i = 0; i < 2000 && !seen; ++i) {
      seen = gang.alarmed();
      if (!seen) usleep(1000);
    }
    if (!seen) return fail("phase 5: member 1 never saw member 2's alarm");
    mine = {false, "stopped because another member of its gang failed", "", true, 101.0};
  }
  const mpi::Outcome five = gang.agree(mine);
  if (five.ok) return fail("phase 5: the gang was told ok");
  if (gang.leader() && five.reason != "gang member 2 (rank 3) failed: killed by signal SIGKILL")
    return fail("phase 5: leader got '" + five.reason + "'");
  if (gang.alarmed()) return fail("phase 5: an alarm was left for the next phase");

  // 6.
  mine = {};
  if (gang.rank() == 1) mine = {false, "exited with code 1: connection closed by peer", "", false, 205.0};
  if (gang.rank() == 2) mine = {false, "exited with code 3: out of memory", "", false, 200.0};
  const mpi::Outcome six = gang.agree(mine);
  if (gang.leader() && six.reason != "gang member 2 (rank 3) failed: exited with code 3: out of memory")
    return fail("phase 6: leader got '" + six.reason + "'");

  // 7.
  mine = {};
  if (gang.leader()) mine = {false, "cannot open its log", "", false, 300.0};
  if (gang.agree(mine).ok) return fail("phase 7: rank " + std::to_string(world.rank()) + " was told ok");

  if (gang.leader())
    std::printf("ok: gang of 3 agreed, shared a decision, reported member 2's failure, summed, named the primary "
                "and the first failure, told the followers of the leader's\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  boost::mpi::environment env(argc, argv);
  boost::mpi::communicator world;
  try {
    return run(world);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}
