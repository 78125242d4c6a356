#pragma once
/// Sleeping backoff for polling loops. Open MPI has no blocking wait that yields the CPU,
/// and 17 spinning ranks on 2 cores starve the trials, so idle ranks poll with a nap that
/// doubles from `min` up to `max` and drops back to `min` as soon as work arrives.

#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace ranktune::mpi {

/// Linux rounds every sleep up by the thread's timer slack (50 us by default), which would
/// turn the 10 us first naps into 60 us ones and stretch every round trip; 1 us keeps the
/// naps what they say. Call once per rank before its polling loop.
inline void tighten_timer_slack() { prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0); }

class Backoff {
 public:
  Backoff(std::chrono::microseconds min, std::chrono::microseconds max)
      : min_(min), max_(max), next_(min) {}
  /// Sleeps for the current nap and lengthens the next one.
  void wait() {
    std::this_thread::sleep_for(next_);
    next_ = std::min(next_ * 2, max_);
  }
  /// Work arrived: the next nap is the shortest again.
  void reset() { next_ = min_; }

 private:
  std::chrono::microseconds min_, max_, next_;
};

}  // namespace ranktune::mpi
