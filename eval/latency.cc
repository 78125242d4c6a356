// Nearest-rank percentiles, the statistics of timed inference batches and the thinning of
// their trace (eval/latency.h).
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

LatencyPart summarize_part(std::vector<double> seconds) {
  LatencyPart part;
  for (const double s : seconds)
    if (std::isinf(s) || s < 0) throw std::invalid_argument("a part's time is negative or infinite");
  if (seconds.empty() || std::any_of(seconds.begin(), seconds.end(), [](double s) { return std::isnan(s); }))
    return part;
  std::sort(seconds.begin(), seconds.end());
  part.p50_s = nearest_rank(seconds, 50);
  part.p90_s = nearest_rank(seconds, 90);
  part.p99_s = nearest_rank(seconds, 99);
  return part;
}

std::vector<std::size_t> trace_keep(const std::vector<double>& totals, std::size_t max_rows) {
  const std::size_t n = totals.size();
  max_rows = std::max<std::size_t>(max_rows, 2);
  std::vector<std::size_t> keep;
  if (n <= max_rows) {
    keep.resize(n);
    std::iota(keep.begin(), keep.end(), std::size_t{0});
    return keep;
  }
  // Every stride-th batch makes at most max_rows - 1 rows, which leaves room for the slowest.
  const std::size_t stride = (n + max_rows - 2) / (max_rows - 1);
  for (std::size_t i = 0; i < n; i += stride) keep.push_back(i);
  const auto slowest = static_cast<std::size_t>(std::max_element(totals.begin(), totals.end()) - totals.begin());
  if (slowest % stride != 0) keep.insert(std::upper_bound(keep.begin(), keep.end(), slowest), slowest);
  return keep;
}

LatencyStats summarize_batches(std::int64_t batch_size, const std::vector<BatchTime>& batches, std::size_t max_trace) {
  std::vector<double> totals, pre, inference, post;
  for (const BatchTime& b : batches) {
    totals.push_back(b.total_s);
    pre.push_back(b.pre_s);
    inference.push_back(b.inference_s);
    post.push_back(b.post_s);
  }
  LatencyStats st = summarize_latency(batch_size, totals);
  st.pre = summarize_part(std::move(pre));
  st.inference = summarize_part(std::move(inference));
  st.post = summarize_part(std::move(post));
  for (const std::size_t i : trace_keep(totals, max_trace)) st.trace.push_back(batches[i]);
  return st;
}

}  // namespace ranktune::eval
