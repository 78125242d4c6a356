#pragma once
/// The Trainable interface (Tune's narrow waist): what a worker runs for one trial.

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.h"
#include "train/checkpoint.h"
#include "train/predict_timing.h"
#include "search/types.h"

namespace ranktune::train {

class Collective;

/// torchrun's view of where a process of a trial runs: RANK, WORLD_SIZE, LOCAL_RANK,
/// LOCAL_WORLD_SIZE, GROUP_RANK/NODE_RANK, MASTER_ADDR and MASTER_PORT for a command
/// trainable, so that `torch.distributed.init_process_group()` works with `env://`. The
/// worker fills it (mpi/rendezvous.h): a trial alone is a world of one.
struct DistributedEnv {
  int rank = 0;              ///< the member's rank in the gang, 0 being the leader
  int world_size = 1;        ///< members in the gang
  int local_rank = 0;        ///< the member's index among the gang's members on its host
  int local_world_size = 1;  ///< the gang's members on this host
  int node_rank = 0;         ///< the index of this host among the gang's hosts, the leader's first
  int num_nodes = 1;         ///< hosts the gang spans
  std::string master_addr = "127.0.0.1";  ///< where the leader's rendezvous listens
  int master_port = 0;       ///< a free port on the leader's host; 0: none was picked
};

/// What `ranktune eval` asks of a held-out evaluation (the part of eval::EvalOptions that a
/// trainable sees): the compute, the latency settings a trainable that times itself uses (a
/// command in evaluation mode, RANKTUNE_EVAL_*), and what to evaluate on and how.
struct EvalSettings {
  std::string device = "auto";               ///< "auto", "cpu" or "cuda:N" (--device)
  int threads = 0;                           ///< 0: as the trainable is configured
  std::vector<std::int64_t> batch_sizes;     ///< latency batch sizes; empty: no latency
  int warmup = 10;                           ///< untimed batches before each batch size
  double latency_s = 1.0;                    ///< timing budget per batch size, seconds
  std::int64_t min_batches = 20;             ///< timed batches per batch size, at least
  std::int64_t max_batches = 100000;         ///< and at most
  // What and how (config::EvalManifest); a trainable that cannot honour a setting refuses it.
  std::string split = "test";                ///< "test" or "validation"
  std::string data_dir;                      ///< "": the trainable's own data folder
  bool normalize = true;                     ///< inputs scaled as in training; false: raw
  std::string input_dtype = "float32";       ///< float32, float16 or bfloat16 inputs
  std::vector<int> top_k;                    ///< <split>_top<k>_accuracy for each k
  bool confusion = false;                    ///< fill HeldOutResult::confusion
};

/// Where and as what a trial runs.
struct Context {
  search::TrialId trial_id = 0;
  int attempt = 0;
  int rank = 0;              ///< MPI world rank of the worker
  int local_index = 0;       ///< worker index on its node (GPU binding)
  std::string device = "cpu";  ///< "cpu" or "cuda:N"
  std::uint64_t seed = 0;    ///< experiment seed; trainables derive their own streams from it
  std::string log_dir;       ///< where trial output files go (made private by the driver)
  /// The iteration the trainable's next report will be: 1 for a fresh start, the
  /// checkpoint's iteration + 1 after a resume, the trial's own count + 1 after a PBT exploit
  /// (which takes a donor's state but keeps the trial's count). RANKTUNE_ITERATION.
  std::int64_t first_iteration = 1;
  /// Why this run of the attempt starts, from rank 0: "start" (a fresh attempt) or "" keep
  /// nothing of an earlier log; any other cause ("resume", "exploit of trial 3 at iteration
  /// 8", "ctl set", "ranktune run --resume") goes on in the same attempt, so the command's
  /// log is appended to, after a separator line that names the iteration and the cause.
  std::string start_cause;
  std::string config_dir;    ///< folder of the experiment config, for relative paths
  /// The gang's collective when the trial spans several ranks (not owned; outlives the
  /// trainable); nullptr when the trial runs alone.
  Collective* collective = nullptr;
  /// The trial's place in its gang, for programs that do their own distributed training.
  DistributedEnv distributed;
  /// In a gang: true once another member failed. A trainable that waits for something
  /// other than the collective (a program's next report) asks it while it waits, and
  /// throws PeerFailure when it says yes, so that a member blocked on a dead peer is not
  /// left waiting (not owned; may be empty).
  std::function<bool()> peer_failed;
  /// "train" (a trial of a search) or "eval" (`ranktune eval` restored a checkpoint to
  /// evaluate it on held-out data; `eval` says how). RANKTUNE_MODE.
  std::string mode = "train";
  EvalSettings eval;
};

/// One iteration's outcome.
struct StepResult {
  search::Metrics metrics;  ///< empty only when `done`
  bool done = false;        ///< the trainable finished by itself; no further step
};

/// A failed attempt: what went wrong and the last lines the trainable printed.
class TrialFailure : public std::runtime_error {
 public:
  TrialFailure(const std::string& reason, std::string log_tail = {})
      : std::runtime_error(reason), log_tail_(std::move(log_tail)) {}
  const std::string& log_tail() const { return log_tail_; }

 private:
  std::string log_tail_;
};

/// A failed attempt of a gang member that was stopped because another member failed first:
/// the gang reports the other's failure, not this one.
class PeerFailure : public TrialFailure {
 public:
  using TrialFailure::TrialFailure;
};

/// A data file a held-out evaluation read, fingerprinted for the evaluation's manifest.
struct DataFile {
  std::string path;
  std::uint64_t bytes = 0;
  std::uint32_t crc32c = 0;  ///< CRC-32C of the file as stored (compressed or not)
};

/// The latency of one batch size as a trainable that times itself measured it, the way
/// eval::summarize_latency summarises timed batches (nearest-rank percentiles).
struct MeasuredLatency {
  std::int64_t batch_size = 0;
  std::int64_t batches = 0;  ///< timed batches
  double mean_s = 0, p50_s = 0, p90_s = 0, p99_s = 0, max_s = 0;
  double samples_per_s = 0;
  /// p50, p90, p99 of preprocessing, inference and postprocessing, in that order (pre_p50,
  /// pre_p90, ..., post_p99); NaN where a part was not measured (a script without a
  /// preprocess or postprocess function, or an older helper that sends no split).
  double parts_s[9] = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
  /// Timed batches as the script sent them (already thinned as eval::trace_keep does):
  /// batch index, start (seconds since its batch size's timing began), total, pre,
  /// inference, post; NaN where not measured. Empty when it sent none.
  std::vector<std::array<double, 6>> trace;
};

/// What a held-out evaluation measured (`ranktune eval`).
struct HeldOutResult {
  search::Metrics metrics;      ///< named test_*: test_loss, test_accuracy, ...
  std::int64_t samples = 0;     ///< held-out samples evaluated
  std::vector<DataFile> data;   ///< the files they came from
  /// With times_itself(): the latency at each of Context::eval.batch_sizes, in that order.
  std::vector<MeasuredLatency> latency;
  /// With times_itself(): what one timed batch is, for the manifest ("" for predict()'s).
  std::string timed;
  /// With EvalSettings::confusion: classes x classes counts, row = true label, column =
  /// predicted; empty otherwise.
  std::vector<std::int64_t> confusion;
  int classes = 0;
};

/// How a trial computes, recorded in the results file ("placement" events).
struct ComputeInfo {
  std::string path = "cpu";  ///< "cpu" or "cuda:N"
  int threads = 1;           ///< compute threads per rank
};

class Trainable {
 public:
  virtual ~Trainable() = default;
  /// Prepares the trial. Throws TrialFailure. In a gang it must not call the collective
  /// (nor may restore()): a member's failure is only safe to report between collectives,
  /// and the gang agrees on setup's outcome before the first step.
  virtual void setup(const search::Config& config, const Context& context) = 0;
  /// Runs one iteration. Throws TrialFailure. In a gang, every member makes the same
  /// collective calls in the same order.
  virtual StepResult step() = 0;
  /// Ends the trial early (the scheduler stopped it). Never throws.
  virtual void stop() {}
  /// Last lines of the trial's output, if it has any.
  virtual std::string log_tail() const { return {}; }
  /// Warnings since the last call, for the results file's events (e.g. a command that had
  /// to be killed with SIGKILL). Never throws.
  virtual std::vector<std::string> take_warnings() { return {}; }
  /// The path and threads the trial runs with, known after setup().
  virtual ComputeInfo compute_info() const { return {}; }

  /// Whether save() and restore() work; schedulers that pause or exploit need them.
  virtual bool can_checkpoint() const { return false; }
  /// Writes the state after the last step: enough for restore() to continue exactly as if
  /// the trial had never stopped. Throws TrialFailure.
  virtual void save(CheckpointWriter& out) { throw TrialFailure("this trainable cannot checkpoint"); }
  /// Continues from a checkpoint that save() wrote, called after setup(). The config given
  /// to setup() may differ from the one the checkpoint was saved under (PBT's exploit).
  /// Throws CheckpointError when the bytes are not such a checkpoint, TrialFailure otherwise.
  virtual void restore(CheckpointReader& in) { throw TrialFailure("this trainable cannot checkpoint"); }

  // Held-out evaluation (`ranktune eval`), after setup() and restore(). Never called during
  // a search: the held-out data is not the validation split the scheduler saw.
  /// Whether evaluate_held_out() and predict() work.
  virtual bool can_evaluate() const { return false; }
  /// Loads the held-out split and evaluates the current state on all of it. Throws
  /// TrialFailure.
  virtual HeldOutResult evaluate_held_out() { throw TrialFailure("this trainable has no held-out evaluation"); }
  /// Predicts `count` held-out samples from sample `first` as one batch, and returns once
  /// the predictions are in host memory: the unit of a latency measurement. Returns how long
  /// its preprocessing, inference and postprocessing took (PredictTiming). Call after
  /// evaluate_held_out(); `first + count` must not exceed its `samples`. Throws TrialFailure.
  virtual PredictTiming predict(std::int64_t first, std::int64_t count) {
    throw TrialFailure("this trainable has no held-out evaluation");
  }
  /// True when evaluate_held_out() times inference itself, at the batch sizes of
  /// Context::eval (a command: its script's ranktune.time_inference()), and returns the
  /// figures in HeldOutResult::latency; predict() is then never called.
  virtual bool times_itself() const { return false; }
};

/// The size and CRC-32C of a file. Throws TrialFailure when it cannot be read.
DataFile fingerprint_file(const std::string& path);

/// The options of `spec` as its kind's struct (SyntheticOptions, CommandOptions, ...).
/// Throws std::invalid_argument when the spec holds other options or none.
template <class Options>
const Options& options_of(const config::TrainableSpec& spec) {
  const auto* o = dynamic_cast<const Options*>(spec.options.get());
  if (o == nullptr)
    throw std::invalid_argument("the '" + spec.kind + "' trainable has no " + Options::kKind +
                                " options; read [trainable] first (train::read_trainable)");
  return *o;
}

/// The options of `spec` if they are `Options`, else nullptr.
template <class Options>
const Options* find_options(const config::TrainableSpec& spec) {
  return dynamic_cast<const Options*>(spec.options.get());
}

/// The options of `spec` to change: a copy of its own (copies of a spec share their options).
template <class Options>
Options& edit_options(config::TrainableSpec& spec) {
  auto copy = std::make_shared<Options>(options_of<Options>(spec));
  Options& out = *copy;
  spec.options = std::move(copy);
  return out;
}

/// A spec of `options`' kind, built in code.
template <class Options>
config::TrainableSpec make_spec(Options options, std::vector<std::string> metrics = {}) {
  config::TrainableSpec spec;
  spec.kind = Options::kKind;
  spec.metrics = std::move(metrics);
  spec.options = std::make_shared<const Options>(std::move(options));
  return spec;
}

/// Builds the trainable that `spec` describes (train/registry.h). Throws
/// std::invalid_argument for an unknown kind.
std::unique_ptr<Trainable> make_trainable(const config::TrainableSpec& spec);

/// Metrics the trainable is known to report (synthetic: its function's metrics;
/// command: the declared `metrics`, which may be just the experiment metric).
std::vector<std::string> reported_metrics(const config::TrainableSpec& spec);

/// Reads [trainable] (train::read_trainable) and checks what only the trainable layer
/// knows: a synthetic function exists, its parameters are in the space, the experiment
/// metric is one it reports, the command's program exists. Fills cfg.trainable.metrics.
/// Throws config::ConfigError.
void validate(config::ExperimentConfig& cfg);

}  // namespace ranktune::train
