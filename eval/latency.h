#pragma once
/// Latency statistics of timed inference batches (`ranktune eval`). Pure.

#include <cstdint>
#include <vector>

namespace ranktune::eval {

struct LatencyStats {
  std::int64_t batch_size = 0;
  std::int64_t batches = 0;  ///< timed batches
  double mean_s = 0, p50_s = 0, p90_s = 0, p99_s = 0, max_s = 0;
  double samples_per_s = 0;  ///< batch_size / mean_s: the throughput at this batch size
};

/// The p-th percentile (0 < p <= 100) of `sorted` (ascending, not empty) by the nearest-rank
/// method: the smallest value with at least p% of the values at or below it. Always one of
/// the values measured, never an interpolation between two.
double nearest_rank(const std::vector<double>& sorted, double p);

/// Statistics of `seconds`, one entry per timed batch of `batch_size` samples. Throws
/// std::invalid_argument when `seconds` is empty or holds a negative or non-finite time.
LatencyStats summarize_latency(std::int64_t batch_size, std::vector<double> seconds);

}  // namespace ranktune::eval
