// Nearest-rank percentiles and the statistics of timed inference batches (eval/latency.h).
#include "eval/latency.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace ranktune::eval {

double nearest_rank(const std::vector<double>& sorted, double p) {
  const auto n = static_cast<double>(sorted.size());
  // ceil(p/100 * n) in 1-based ranks; the small slack keeps p = 90 of 10 values at rank 9
  // although 0.9 * 10 is 9.000000000000002 in binary.
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * n - 1e-9));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

LatencyStats summarize_latency(std::int64_t batch_size, std::vector<double> seconds) {
  if (seconds.empty()) throw std::invalid_argument("no timed batches");
  for (const double s : seconds)
    if (!std::isfinite(s) || s < 0) throw std::invalid_argument("a batch time is negative or not finite");
  std::sort(seconds.begin(), seconds.end());
  LatencyStats st;
  st.batch_size = batch_size;
  st.batches = static_cast<std::int64_t>(seconds.size());
  st.mean_s = std::accumulate(seconds.begin(), seconds.end(), 0.0) / static_cast<double>(seconds.size());
  st.p50_s = nearest_rank(seconds, 50);
  st.p90_s = nearest_rank(seconds, 90);
  st.p99_s = nearest_rank(seconds, 99);
  st.max_s = seconds.back();
  st.samples_per_s = st.mean_s > 0 ? static_cast<double>(batch_size) / st.mean_s : 0;
  return st;
}

}  // namespace ranktune::eval
