#pragma once
/// Held-out evaluations in the results file (`ranktune eval`), beside the experiment they
/// evaluate. Written offline (never during a run: the run's writer holds the file), so they
/// are not part of the SWMR layout that io/store.h creates up front.
///
/// Layout (created by the first evaluation recorded; every string fixed-length):
///   /evaluations           group
///   /evaluations/runs      one row per evaluation: eval_id, created (ISO-8601 UTC), split,
///                          device, threads, trials, manifest_offset, manifest_size
///   /evaluations/manifests uint8: the manifests (JSON texts) back to back
///   /evaluations/metrics   one row per (evaluation, trial, metric): eval_id, trial_id,
///                          iteration (of the checkpoint evaluated), metric, value
///   /evaluations/latency   one row per (evaluation, trial, batch size): eval_id, trial_id,
///                          iteration, batch_size, batches (timed), mean_ms, p50_ms, p90_ms,
///                          p99_ms, max_ms, samples_per_s
///   /evaluations/latency_split  the split of that latency, one row per latency row whose
///                          split was measured: eval_id, trial_id, iteration, batch_size,
///                          pre_p50_ms, pre_p90_ms, pre_p99_ms, inference_p50_ms, ...,
///                          post_p99_ms (NaN: that part was not measured)
///   /evaluations/trace     the timed batches, one row each, at most eval::kTraceRows (1000)
///                          per (evaluation, trial, batch size) (eval::trace_keep: every k-th
///                          batch and the slowest): eval_id, trial_id, iteration, batch_size,
///                          batch (index among the timed batches, from 0), start_ms (since the
///                          timing of the batch size began), total_ms, pre_ms, inference_ms,
///                          post_ms (NaN: not measured)
///   /evaluations/confusion one row per (evaluation, trial, true label, predicted label):
///                          eval_id, trial_id, iteration, true_label, predicted, count; every
///                          cell of the matrix, zeros included (`[metrics] confusion = true`).
/// latency_split, trace and confusion are created by the first evaluation recorded after
/// they were added: a file without them (older ranktune) reads as "not measured", never as
/// an error.
/// pandas: pd.DataFrame(h5py.File(p)["evaluations/metrics"][:]).

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "search/types.h"

namespace ranktune::io {

inline constexpr std::size_t kEvalSplitLen = 16;
inline constexpr std::size_t kEvalDeviceLen = 16;
inline constexpr std::size_t kEvalMetricLen = 48;

struct EvalMetricRow {
  search::TrialId trial = 0;
  std::int64_t iteration = 0;
  std::string metric;
  double value = 0;
};

struct EvalLatencyRow {
  search::TrialId trial = 0;
  std::int64_t iteration = 0;
  std::int64_t batch_size = 0;
  std::int64_t batches = 0;  ///< timed batches (after warm-up)
  double mean_ms = 0, p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
  double samples_per_s = 0;  ///< batch_size / mean latency
  /// p50, p90, p99 of preprocessing, inference and postprocessing (pre_p50_ms, pre_p90_ms,
  /// pre_p99_ms, inference_p50_ms, ..., post_p99_ms); NaN: not measured.
  double parts_ms[9] = {kNotMeasured, kNotMeasured, kNotMeasured, kNotMeasured, kNotMeasured,
                        kNotMeasured, kNotMeasured, kNotMeasured, kNotMeasured};
  static constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();
  /// Whether any part was measured.
  bool has_split() const {
    for (const double v : parts_ms)
      if (v == v) return true;
    return false;
  }
};

/// One timed batch of the trace.
struct EvalTraceRow {
  search::TrialId trial = 0;
  std::int64_t iteration = 0;
  std::int64_t batch_size = 0;
  std::int64_t batch = 0;  ///< index among the timed batches of its batch size, from 0
  double start_ms = 0;     ///< since the timing of its batch size began
  double total_ms = 0;
  double pre_ms = EvalLatencyRow::kNotMeasured, inference_ms = EvalLatencyRow::kNotMeasured,
         post_ms = EvalLatencyRow::kNotMeasured;
};

/// The names of EvalLatencyRow::parts_ms, in order: "pre_p50_ms", ..., "post_p99_ms".
inline constexpr const char* kLatencyPartNames[9] = {
    "pre_p50_ms",       "pre_p90_ms",  "pre_p99_ms",  "inference_p50_ms", "inference_p90_ms",
    "inference_p99_ms", "post_p50_ms", "post_p90_ms", "post_p99_ms"};

struct EvalConfusionRow {
  search::TrialId trial = 0;
  std::int64_t iteration = 0;
  std::int64_t true_label = 0;
  std::int64_t predicted = 0;
  std::int64_t count = 0;
};

/// One `ranktune eval` invocation: every trial it evaluated.
struct Evaluation {
  std::int64_t id = 0;       ///< 1, 2, ... in the file; assigned by append_evaluation
  std::string created;       ///< ISO-8601 UTC; filled by append_evaluation when empty
  std::string split;         ///< "test"
  std::string device;        ///< where it ran: "cpu" or "cuda:N"
  int threads = 1;
  std::int64_t trials = 0;   ///< trials evaluated
  std::string manifest;      ///< JSON text: what was evaluated, on what, with what
  std::vector<EvalMetricRow> metrics;
  std::vector<EvalLatencyRow> latency;
  std::vector<EvalTraceRow> trace;
  std::vector<EvalConfusionRow> confusion;  ///< empty when no confusion matrix was asked for
};

/// Appends `evaluation` to the results file at `path` and returns its id. Takes the
/// writer's lock, so it refuses a file that a run is writing (and a run cannot start on it
/// meanwhile), and refuses a file whose writer was killed (resuming the run mends it).
/// Throws StoreError naming the file.
std::int64_t append_evaluation(const std::string& path, Evaluation evaluation);

/// Throws StoreError, as append_evaluation would, when a run is writing `path` now: lets
/// `ranktune eval` refuse before it spends minutes evaluating. (The run may still start in
/// between; append_evaluation checks again.)
void check_recordable(const std::string& path);

/// Every evaluation recorded in the file, oldest first; empty when there is none. Throws
/// StoreError for a damaged /evaluations.
std::vector<Evaluation> read_evaluations(const std::string& path);

}  // namespace ranktune::io
