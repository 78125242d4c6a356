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
///   /evaluations/confusion one row per (evaluation, trial, true label, predicted label):
///                          eval_id, trial_id, iteration, true_label, predicted, count; every
///                          cell of the matrix, zeros included. Created by the first
///                          evaluation that records one (`[metrics] confusion = true`).
/// pandas: pd.DataFrame(h5py.File(p)["evaluations/metrics"][:]).

#include <cstdint>
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
};

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
