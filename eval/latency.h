#pragma once
/// Latency statistics of timed inference batches (`ranktune eval`), and the trace of the
/// batches kept for the results file. Pure.

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace ranktune::eval {

/// Percentiles of one part of the batches' latency (preprocessing, inference or
/// postprocessing). NaN: the part was not measured.
struct LatencyPart {
  double p50_s = std::numeric_limits<double>::quiet_NaN();
  double p90_s = std::numeric_limits<double>::quiet_NaN();
  double p99_s = std::numeric_limits<double>::quiet_NaN();
  bool measured() const { return std::isfinite(p50_s); }
};

/// One timed batch: its index among the timed batches of its batch size (0-based, after
/// the warm-up), when it started (seconds since the timing of its batch size began), its
/// time and the time of each part. A part that was not measured is NaN.
struct BatchTime {
  std::int64_t batch = 0;
  double start_s = 0;
  double total_s = 0;
  double pre_s = std::numeric_limits<double>::quiet_NaN();
  double inference_s = std::numeric_limits<double>::quiet_NaN();
  double post_s = std::numeric_limits<double>::quiet_NaN();
};

struct LatencyStats {
  std::int64_t batch_size = 0;
  std::int64_t batches = 0;  ///< timed batches
  double mean_s = 0, p50_s = 0, p90_s = 0, p99_s = 0, max_s = 0;
  double samples_per_s = 0;  ///< batch_size / mean_s: the throughput at this batch size
  /// The split of the batches' latency; NaN percentiles where a part was not measured.
  LatencyPart pre, inference, post;
  /// The timed batches, at most kTraceRows of them (trace_keep()); empty when the batches
  /// were not traced.
  std::vector<BatchTime> trace;
};

/// Batches of one batch size kept in the trace: more are thinned by trace_keep().
inline constexpr std::size_t kTraceRows = 1000;

/// The p-th percentile (0 < p <= 100) of `sorted` (ascending, not empty) by the nearest-rank
/// method: the smallest value with at least p% of the values at or below it. Always one of
/// the values measured, never an interpolation between two.
double nearest_rank(const std::vector<double>& sorted, double p);

/// Statistics of `seconds`, one entry per timed batch of `batch_size` samples. Throws
/// std::invalid_argument when `seconds` is empty or holds a negative or non-finite time.
LatencyStats summarize_latency(std::int64_t batch_size, std::vector<double> seconds);

/// Percentiles of one part; NaN ones when any of `seconds` is NaN (the part was not
/// measured in every batch) or `seconds` is empty. Throws std::invalid_argument for a
/// negative or infinite time.
LatencyPart summarize_part(std::vector<double> seconds);

/// Statistics of `batches` (their total_s as summarize_latency's), the percentiles of each
/// part, and the trace: the batches that trace_keep(totals, max_trace) keeps. Throws
/// std::invalid_argument as summarize_latency does.
LatencyStats summarize_batches(std::int64_t batch_size, const std::vector<BatchTime>& batches,
                               std::size_t max_trace = kTraceRows);

/// Which of `n` batches with times `totals` a trace of at most `max_rows` keeps (2 when less), in
/// ascending order: all of them when n <= max_rows; else every k-th from the first, k =
/// ceil(n / (max_rows - 1)), and the slowest batch (the first of equal slowest), so that
/// the trace keeps its shape and its maximum. Deterministic: the same times, the same rows.
std::vector<std::size_t> trace_keep(const std::vector<double>& totals, std::size_t max_rows = kTraceRows);

}  // namespace ranktune::eval
