#pragma once
/// Rank 0's status display: trial counts by state, the best trial so far, and the elapsed
/// time against the budget. On a terminal it redraws in place; in a batch log (not a TTY)
/// it prints one line per interval, so a Slurm output file stays readable.
/// RANKTUNE_STATUS=tty|lines forces either.

#include <cstdio>
#include <string>

#include "controller/controller.h"

namespace ranktune::experiment {

class StatusBoard {
 public:
  /// `interval_s`: seconds between batch-log lines (a TTY redraws at most 4 times a second).
  StatusBoard(std::FILE* out, std::string experiment, double interval_s, double budget_s);

  /// Redraws or prints a line if it is time to.
  void update(const controller::Controller& c, double now);
  /// Draws the final state unconditionally.
  void final(const controller::Controller& c, double now);

 private:
  void draw(const controller::Controller& c, double now);

  std::FILE* out_;
  std::string experiment_;
  bool tty_;
  double interval_s_;
  double budget_s_;
  double last_draw_ = -1e300;
  int lines_drawn_ = 0;
};

/// "HH:MM:SS" for a duration in seconds.
std::string format_duration(double seconds);

}  // namespace ranktune::experiment
