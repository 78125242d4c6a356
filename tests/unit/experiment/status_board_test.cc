// Rank 0's status line (experiment/status_board.h) as a batch log shows it: the counts by
// state, and the total of trials planned.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/unit/common/expect_text.h"
#include "experiment/status_board.h"
#include "tests/unit/controller/control_fixtures.h"
#include "tests/unit/controller/controller_fixtures.h"

namespace ranktune::experiment {
using namespace ranktune::controller;
namespace {

using controller::Instruction;
using controller::ControlRequest;
using controller::Controller;
using search::fixtures::opts;
using search::fixtures::request;

// The line a StatusBoard in batch mode prints for `c`.
std::string status_line(const Controller& c) {
  setenv("RANKTUNE_STATUS", "lines", 1);
  std::FILE* f = std::tmpfile();
  StatusBoard board(f, "exp", 60, 0);
  board.final(c, 1);
  std::rewind(f);
  char buf[1024] = {};
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  return std::string(buf, n);
}

Controller make(std::int64_t trials, bool checkpoint_on_stop) {
  controller::ControllerOptions o = opts(10);
  o.checkpoint_on_stop = checkpoint_on_stop;
  return Controller(o, search::make_searcher("random", search::fixtures::one_param(), {1, trials}),
                    search::make_scheduler("fifo", {}), nullptr);
}

// Issue 27 item 18: paused trials (HyperBand's, or one a `ctl set` pauses) had no count of
// their own: the line counted them as pending.
TEST(StatusBoard, CountsPausedTrialsApartFromPendingOnes) {
  Controller c = make(3, true);
  c.on_workers_free({1, 2}, 0);  // trials 1 and 2 run
  std::vector<Instruction> out;
  // Trial 1 pauses to take the new value (its worker waits for it: trial 3 is not made yet).
  ASSERT_TRUE(c.on_control(request(ControlRequest::Kind::Set, 1, {{"x", 0.5}}), 1, out).pending);
  EXPECT_CONTAINS(status_line(c), "| trials 2 of 3: running 1, pending 0, paused 1, terminated 0, error 0 |");
  c.on_checkpoint(1, 0, 1, 2);  // stored: it runs again
  EXPECT_CONTAINS(status_line(c), "| trials 2 of 3: running 2, pending 0, paused 0, terminated 0, error 0 |");
}

// Issue 27 item 12: after `ctl add` and a resume the line ended at "9 of 8".
TEST(StatusBoard, TheTotalCountsTrialsAddedByControlAcrossAResume) {
  Controller c = make(2, false);
  c.on_worker_free(1, 0);
  std::vector<Instruction> out;
  ASSERT_TRUE(c.on_control(request(ControlRequest::Kind::Add, 0, {{"x", 0.5}}), 1, out).applied);
  EXPECT_CONTAINS(status_line(c), "| trials 2 of 3: running 1, pending 1,");
  Controller resumed = make(2, false);
  resumed.resume(c.trials(), {}, c.save_state(), "test", 2);
  EXPECT_CONTAINS(status_line(resumed), "| trials 2 of 3: running 0, pending 2,");
}

}  // namespace
}  // namespace ranktune::experiment
