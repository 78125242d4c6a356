// Gang trials on the controller's side: which workers a gang gets (gang_placement.h), and
// the commands a gang trial produces (a Start per member, Continues to the leader, a Stop
// to every member, all members freed together).

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <vector>

#include "controller/controller.h"
#include "controller/gang_placement.h"
#include "tests/unit/controller/controller_fixtures.h"

using namespace ranktune::search;
using namespace ranktune::controller;
using namespace ranktune::search::fixtures;

namespace {

// Workers 1..3 on node 0, 4..5 on node 1 (index 0 is the driver's slot).
const std::vector<int> kTwoNodes = {0, 0, 0, 0, 1, 1};

TEST(GangPlacement, TooFewIdleWorkersGiveNothing) {
  EXPECT_FALSE(choose_gang({1}, 2, kTwoNodes));
  EXPECT_FALSE(choose_gang({}, 1, kTwoNodes));
}

TEST(GangPlacement, SingleRankTrialsTakeTheLongestWaitingWorker) {
  EXPECT_EQ(*choose_gang({4, 1, 2}, 1, kTwoNodes), (std::vector<int>{4}));
}

TEST(GangPlacement, PrefersOneNodeEvenIfItsWorkersWaitedLess) {
  // Worker 4 waited longest, but node 0 is the only one with two idle workers.
  EXPECT_EQ(*choose_gang({4, 1, 2}, 2, kTwoNodes), (std::vector<int>{1, 2}));
}

TEST(GangPlacement, BestFitKeepsTheFullerNodeWhole) {
  // Both nodes can host a pair; node 1 (exactly two idle) fits best, so node 0 keeps three
  // idle workers for a later gang.
  EXPECT_EQ(*choose_gang({1, 2, 3, 4, 5}, 2, kTwoNodes), (std::vector<int>{4, 5}));
  // Ties go to the node whose worker waited longest.
  EXPECT_EQ(*choose_gang({4, 5, 1, 2}, 2, kTwoNodes), (std::vector<int>{4, 5}));
  EXPECT_EQ(*choose_gang({1, 2, 4, 5}, 2, kTwoNodes), (std::vector<int>{1, 2}));
}

TEST(GangPlacement, SpansTheFewestNodesWhenNoNodeIsBigEnough) {
  // Three idle on node 0 + two on node 1; a gang of four takes node 0's three first.
  EXPECT_EQ(*choose_gang({4, 1, 5, 2, 3}, 4, kTwoNodes), (std::vector<int>{1, 2, 3, 4}));
  // Unknown workers count as node 0, and an empty map puts everyone on one node.
  EXPECT_EQ(*choose_gang({7, 8}, 2, kTwoNodes), (std::vector<int>{7, 8}));
  EXPECT_EQ(*choose_gang({5, 3, 1}, 3, {}), (std::vector<int>{5, 3, 1}));
}

Controller gang_controller(std::int64_t trials, std::int64_t max_t) {
  ControllerOptions o = opts(max_t);
  o.ranks_per_trial = 2;
  o.worker_nodes = kTwoNodes;
  return Controller(std::move(o), make_searcher("random", one_param(), {1, trials}), make_scheduler("fifo", {}));
}

std::vector<int> workers_of(const std::vector<Instruction>& cmds, Instruction::Kind kind) {
  std::vector<int> w;
  for (const auto& c : cmds)
    if (c.kind == kind) w.push_back(c.worker);
  return w;
}

TEST(GangController, StartsAGangPerTrialAndTalksToTheLeader) {
  Controller c = gang_controller(3, 2);
  std::vector<Instruction> starts;
  for (int w = 1; w <= 5; ++w) {
    auto cmds = c.on_worker_free(w, 0);
    starts.insert(starts.end(), cmds.begin(), cmds.end());
  }
  // Five workers make two gangs of two; the fifth waits. Worker 1 and 2 free first, so the
  // first gang is {1, 2}; the second forms when 4 arrives (3 and 4 span the nodes, since no
  // node has two idle workers then).
  ASSERT_EQ(starts.size(), 4u);
  EXPECT_EQ(starts[0].gang, (std::vector<int>{1, 2}));
  EXPECT_EQ(starts[1].gang, (std::vector<int>{1, 2}));
  EXPECT_EQ(workers_of({starts[0], starts[1]}, Instruction::Kind::Start), (std::vector<int>{1, 2}));
  EXPECT_EQ(starts[0].trial, starts[1].trial);
  EXPECT_EQ(starts[2].gang, (std::vector<int>{3, 4}));
  EXPECT_EQ(c.find(starts[0].trial)->workers, (std::vector<int>{1, 2}));

  // A result (from the leader) is answered with one Continue, to the leader.
  auto cmds = c.on_result(starts[0].trial, 0, {{"loss", 1.0}}, 1);
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0].kind, Instruction::Kind::Continue);
  EXPECT_EQ(cmds[0].worker, 1);

  // At max_t the trial stops on both members. Idle are then 5 (node 1) and 1, 2 (node 0):
  // the third trial's gang is the pair on node 0, although 5 waited longer.
  cmds = c.on_result(starts[0].trial, 0, {{"loss", 0.5}}, 2);
  EXPECT_EQ(workers_of(cmds, Instruction::Kind::Stop), (std::vector<int>{1, 2}));
  const auto restarted = workers_of(cmds, Instruction::Kind::Start);
  EXPECT_EQ(restarted, (std::vector<int>{1, 2}));
  EXPECT_EQ(c.find(starts[0].trial)->status, TrialStatus::Terminated);
}

TEST(GangController, WorkersFreedTogetherAtTheStartMakeOneNodeGangs) {
  // Ranks spread round-robin (mpirun --map-by node): workers 1, 3 on node 0, 2, 4 on node 1.
  ControllerOptions o = opts(2);
  o.ranks_per_trial = 2;
  o.worker_nodes = {0, 0, 1, 0, 1};
  Controller c(std::move(o), make_searcher("random", one_param(), {1, 2}), make_scheduler("fifo", {}));
  const auto cmds = c.on_workers_free({1, 2, 3, 4}, 0);
  ASSERT_EQ(cmds.size(), 4u);
  EXPECT_EQ(cmds[0].gang, (std::vector<int>{1, 3}));
  EXPECT_EQ(cmds[2].gang, (std::vector<int>{2, 4}));
  // Freed one at a time, the first gang would be {1, 2}, across the nodes.
  ControllerOptions one = opts(2);
  one.ranks_per_trial = 2;
  one.worker_nodes = {0, 0, 1, 0, 1};
  Controller d(std::move(one), make_searcher("random", one_param(), {1, 2}), make_scheduler("fifo", {}));
  EXPECT_TRUE(d.on_worker_free(1, 0).empty());
  EXPECT_EQ(d.on_worker_free(2, 0).at(0).gang, (std::vector<int>{1, 2}));
}

TEST(GangController, AFailedGangIsRetriedAsAUnit) {
  ControllerOptions o = opts(3);
  o.ranks_per_trial = 2;
  o.max_failures = 1;
  Controller c(std::move(o), make_searcher("random", one_param(), {1, 1}), make_scheduler("fifo", {}));
  EXPECT_TRUE(c.on_worker_free(1, 0).empty());  // one worker is not a gang yet
  auto cmds = c.on_worker_free(2, 0);
  ASSERT_EQ(workers_of(cmds, Instruction::Kind::Start), (std::vector<int>{1, 2}));
  cmds = c.on_trial_failed(1, 0, "gang member 1 (rank 2) failed: out of memory", "", 1);
  // The retry takes both workers again, as attempt 1.
  ASSERT_EQ(workers_of(cmds, Instruction::Kind::Start).size(), 2u);
  for (const auto& s : cmds) EXPECT_EQ(s.attempt, 1);
  cmds = c.on_trial_failed(1, 1, "gang member 1 (rank 2) failed: out of memory", "", 2);
  EXPECT_TRUE(cmds.empty());
  EXPECT_EQ(c.find(1)->status, TrialStatus::Error);
  EXPECT_TRUE(c.finished());
}

}  // namespace
