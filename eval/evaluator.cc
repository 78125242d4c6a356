// One leader's held-out evaluation (eval/evaluator.h): its trainable rebuilt and restored
// from the stored checkpoint, the held-out metrics, the timed batches and the manifest.
#include "eval/evaluator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <span>
#include <stdexcept>

#include "io/crc32c.h"
#include "io/json.h"
#include "ranktune/config.h"
#include "train/checkpoint.h"
#include "train/registry.h"
#include "train/trainable.h"

namespace ranktune::eval {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

std::string trial_name(const Leader& l) {
  return "trial " + std::to_string(l.trial->id) + " (checkpoint at iteration " + std::to_string(l.checkpoint->iteration) +
         ")";
}

// The trial's batches of held-out samples, timed one by one: warm-up batches first (caches,
// BLAS thread pools, GPU clocks), then at least min_batches and as many more as fit the
// budget. Batches walk through the held-out set so that no batch is served from a cache
// a previous one warmed with the same samples. Each batch's time is measured here, around
// predict(); its parts are what predict() measured inside.
LatencyStats time_batches(train::Trainable& t, std::int64_t held_out, std::int64_t batch, const EvalOptions& o) {
  std::int64_t first = 0;
  const auto next = [&] {
    if (first + batch > held_out) first = 0;
    const std::int64_t at = first;
    first += batch;
    return at;
  };
  for (int i = 0; i < o.warmup; ++i) t.predict(next(), batch);
  std::vector<BatchTime> times;
  const auto start = Clock::now();
  while (static_cast<std::int64_t>(times.size()) < o.max_batches &&
         (static_cast<std::int64_t>(times.size()) < o.min_batches || since(start) < o.latency_s)) {
    const std::int64_t at = next();
    const auto t0 = Clock::now();
    const train::PredictTiming parts = t.predict(at, batch);
    const double total = since(t0);
    times.push_back({static_cast<std::int64_t>(times.size()), std::chrono::duration<double>(t0 - start).count(), total,
                     parts.pre_s, parts.inference_s, parts.post_s});
  }
  return summarize_batches(batch, times);
}

// The trainable of a config that config::parse_config read: its kind's keys read too.
config::TrainableSpec read_spec(const config::ExperimentConfig& cfg) {
  if (cfg.trainable.options) return cfg.trainable;
  config::ExperimentConfig read = cfg;
  train::read_trainable(read);
  return read.trainable;
}

void require_evaluable(const io::ResultsFile& file, const config::TrainableSpec& spec) {
  const train::TrainableTraits traits = train::traits(spec);
  if (traits.can_evaluate && traits.can_checkpoint) return;
  if (!traits.no_evaluation.empty())
    throw std::invalid_argument(file.path + ": the '" + spec.kind + "' trainable has no held-out evaluation: " +
                                traits.no_evaluation);
  throw std::invalid_argument(
      file.path + ": the '" + spec.kind + "' trainable has no held-out evaluation (ranktune eval evaluates the mlp " +
      "trainable, command trainables with checkpoint = true, and any C++ trainable that implements " +
      "evaluate_held_out()); export a checkpoint with `ranktune export-checkpoint` and evaluate it with your own " +
      "program");
}

// What one timed batch is, for the manifest, when the evaluator times predict().
constexpr const char* kPredictTimed =
    "predict(): one batch from samples resident in memory to predictions in host memory, in three parts: "
    "preprocessing (the batch's pixels gathered and scaled to floats in the input buffer), inference (the forward "
    "pass) and postprocessing (softmax and argmax, the classes in host memory); on a GPU each part ends with a "
    "synchronization";

LatencyStats stats_of(const train::MeasuredLatency& m) {
  LatencyStats st{m.batch_size, m.batches, m.mean_s, m.p50_s, m.p90_s, m.p99_s, m.max_s, m.samples_per_s};
  LatencyPart* parts[] = {&st.pre, &st.inference, &st.post};
  for (int i = 0; i < 3; ++i) *parts[i] = {m.parts_s[3 * i], m.parts_s[3 * i + 1], m.parts_s[3 * i + 2]};
  std::vector<double> totals;
  for (const auto& b : m.trace) totals.push_back(b[2]);
  // Thinned again by the same rule, so that a script's trace is bounded whatever it sent.
  for (const std::size_t i : trace_keep(totals)) {
    const auto& b = m.trace[i];
    st.trace.push_back({static_cast<std::int64_t>(b[0]), b[1], b[2], b[3], b[4], b[5]});
  }
  return st;
}

// The turns of EvalOptions::turns (eval/turns.h), given back on every way out of the
// evaluation, an exception's included. Does nothing without turns.
class Turns {
 public:
  explicit Turns(ComputeTurns* turns) : turns_(turns) {}
  Turns(const Turns&) = delete;
  Turns& operator=(const Turns&) = delete;
  ~Turns() { release(); }
  void compute() {
    if (turns_ != nullptr) turns_->compute();
  }
  void timing() {
    if (turns_ != nullptr) turns_->timing();
  }
  void release() noexcept {
    if (turns_ != nullptr) turns_->release();
  }

 private:
  ComputeTurns* turns_;
};

}  // namespace

EvalOptions options_of(const config::EvalManifest& m, const config::EvalPipeline& pipeline) {
  EvalOptions o;
  o.device = m.device;
  o.threads = m.threads;
  o.batch_sizes = m.batch_sizes;
  o.warmup = m.warmup;
  o.latency_s = m.latency_s;
  o.min_batches = m.min_batches;
  o.max_batches = m.max_batches;
  o.split = m.split;
  o.data_dir = m.data_dir;
  o.pipeline = pipeline.name;
  o.normalize = pipeline.normalize;
  o.input_dtype = pipeline.input_dtype;
  o.top_k = m.top_k;
  o.confusion = m.confusion;
  o.accuracy = m.accuracy;
  o.loss = m.loss;
  return o;
}

void require_evaluable(const io::ResultsFile& file, const config::ExperimentConfig& cfg) {
  require_evaluable(file, read_spec(cfg));
}

LeaderEvaluation evaluate_leader(const io::ResultsFile& file, const config::ExperimentConfig& cfg, const Leader& leader,
                                 const EvalOptions& o) {
  const auto t0 = Clock::now();
  train::Context ctx;
  ctx.trial_id = leader.trial->id;
  ctx.attempt = leader.checkpoint->attempt;
  ctx.seed = cfg.seed;
  ctx.config_dir = fs::path(cfg.path).parent_path().string();
  ctx.first_iteration = leader.checkpoint->iteration + 1;
  ctx.start_cause = "start";
  // A trainable that runs and times its evaluation itself (a command) is told how.
  ctx.mode = "eval";
  ctx.eval = o;  // its train::EvalSettings part
  std::string device;  // what the trainable is told to compute on
  if (o.device == "auto") {
    ctx.device = "cuda:0";  // taken if this build has CUDA and the device works, else the CPU
    device = "auto";
  } else if (o.device == "cpu") {
    ctx.device = "cpu";
    device = "cpu";
  } else if (o.device.rfind("cuda:", 0) == 0 && o.device.size() > 5 &&
             o.device.find_first_not_of("0123456789", 5) == std::string::npos) {
    ctx.device = o.device;
    device = "cuda";  // refused, not silently replaced, when unusable
  } else {
    throw std::invalid_argument("--device: '" + o.device + "' is not a device; valid: auto, cpu, cuda:N");
  }

  const config::TrainableSpec stored = read_spec(cfg);
  require_evaluable(file, stored);
  if (std::error_code ec; !o.data_dir.empty() && !fs::is_directory(o.data_dir, ec))
    throw std::invalid_argument("the manifest's data.dir " + o.data_dir +
                                " is not a folder. Point it at a folder of IDX files (t10k-images-idx3-ubyte.gz, "
                                "t10k-labels-idx1-ubyte.gz), or remove it to use the experiment's data");
  // Its output beside the trials' logs, one file per trial, replaced by the next evaluation.
  if (train::traits(stored).writes_logs) ctx.log_dir = file.path + ".logs/eval";
  const train::TrainableKind& kind = train::kind_of(stored);
  const config::TrainableSpec spec = kind.on_compute ? kind.on_compute(stored, device, o.threads) : stored;
  std::unique_ptr<train::Trainable> t = train::make_trainable(spec);
  // A program evaluates itself: ranktune cannot change its inputs or compute its metrics.
  if (t->times_itself()) {
    std::string refused;
    if (!o.normalize || o.input_dtype != config::EvalPipeline{}.input_dtype)
      refused = "a pipeline other than the training one";
    else if (!o.top_k.empty()) refused = "top-k accuracy";
    else if (o.confusion) refused = "the confusion matrix";
    else if (!o.data_dir.empty()) refused = "another data folder";
    if (!refused.empty())
      throw std::invalid_argument(file.path + ": the '" + stored.kind + "' trainable evaluates itself (its " +
                                  "on_evaluate function), so ranktune cannot apply " + refused + " to it. Compute " +
                                  "it in the script (it gets the split in RANKTUNE_EVAL_SPLIT), or remove it from " +
                                  "the manifest");
  }
  // One that times itself is told the batch sizes before it starts (the held-out samples,
  // which bound them otherwise, are known only afterwards).
  if (t->times_itself())
    for (const std::int64_t b : o.batch_sizes)
      if (b < 1)
        throw std::invalid_argument("--batch-sizes: " + std::to_string(b) +
                                    " is not a batch size (1 or more; 0 alone: no latency)");
  Turns turns(o.turns);
  turns.compute();  // reading, restoring and the held-out metrics may run beside other evaluations
  const std::string bytes = io::read_checkpoint_bytes(file, *leader.checkpoint);
  try {
    t->setup(leader.trial->config, ctx);
  } catch (const train::TrialFailure& e) {
    // Nothing to do with the file: the data, the device or the hyperparameters here.
    throw std::invalid_argument(file.path + ": " + trial_name(leader) + " cannot be set up: " + e.what());
  }
  try {
    train::MemoryCheckpointReader reader(std::as_bytes(std::span(bytes.data(), bytes.size())));
    t->restore(reader);
  } catch (const train::CheckpointError& e) {
    throw io::StoreError(file.path + ": " + trial_name(leader) + ": its checkpoint does not restore: " + e.what());
  } catch (const train::TrialFailure& e) {
    throw std::runtime_error(file.path + ": " + trial_name(leader) + " cannot be restored: " + e.what());
  }
  LeaderEvaluation out;
  out.leader = leader;
  train::HeldOutResult held_out;
  try {
    // One that times itself does so inside its evaluation: all of it is timed work then.
    if (t->times_itself() && !o.batch_sizes.empty()) turns.timing();
    held_out = t->evaluate_held_out();
    if (!o.batch_sizes.empty()) turns.timing();
    if (t->times_itself()) {
      for (const train::MeasuredLatency& m : held_out.latency) out.latency.push_back(stats_of(m));
    } else {
      for (const std::int64_t b : o.batch_sizes) {
        if (b < 1 || b > held_out.samples)
          throw std::invalid_argument("--batch-sizes: " + std::to_string(b) + " is not in 1.." +
                                      std::to_string(held_out.samples) + " (the held-out samples)");
        out.latency.push_back(time_batches(*t, held_out.samples, b, o));
      }
    }
    turns.release();
  } catch (const train::TrialFailure& e) {
    // The reason says the exit and the last line; the tail says what led there.
    const std::string tail = e.log_tail().empty() ? "" : "\n---- its output ends:\n" + e.log_tail();
    throw std::runtime_error(file.path + ": " + trial_name(leader) + ": evaluation failed: " + e.what() + tail);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(file.path + ": " + trial_name(leader) + ": " + e.what());
  }
  // Known once it has evaluated: a script says what it computed on.
  const train::ComputeInfo info = t->compute_info();
  out.path = info.path;
  out.threads = info.threads;
  // Those the manifest turned off are computed anyway (they cost nothing) but not reported.
  for (const auto& [name, value] : held_out.metrics)
    if ((o.accuracy || name != o.split + "_accuracy") && (o.loss || name != o.split + "_loss"))
      out.metrics[name] = value;
  out.confusion = held_out.confusion;
  out.classes = held_out.classes;
  out.samples = held_out.samples;
  out.seconds = since(t0);

  nlohmann::json data = nlohmann::json::array();
  for (const train::DataFile& f : held_out.data)
    data.push_back({{"path", f.path}, {"bytes", f.bytes}, {"crc32c", io::crc32c_hex(f.crc32c)}});
  const io::CheckpointRow& c = *leader.checkpoint;
  out.manifest = {
      {"results", fs::absolute(file.path).string()},
      {"experiment", file.meta.experiment},
      {"metric", file.meta.metric},
      {"mode", search::to_string(file.meta.mode)},
      {"trial", leader.trial->id},
      {"leaderboard_rank", leader.rank},
      {"best", finite_or_null(leader.trial->best)},
      {"best_iteration", leader.trial->best_iteration},
      {"config", io::to_json(leader.trial->config)},
      {"checkpoint",
       {{"iteration", c.iteration}, {"attempt", c.attempt}, {"bytes", c.size}, {"crc32c", io::crc32c_hex(c.crc32c)},
        {"score", finite_or_null(c.score)}}},
      {"trainable", [&] {
         nlohmann::json t = kind.describe ? kind.describe(spec) : nlohmann::json::object();
         t["kind"] = spec.kind;
         t["seed"] = cfg.seed;
         return t;
       }()},
      {"held_out", {{"split", o.split}, {"samples", held_out.samples}, {"files", data}}},
      {"pipeline",
       {{"name", o.pipeline}, {"normalize", o.normalize}, {"input_dtype", o.input_dtype}}},
      {"metrics_asked",
       {{"accuracy", o.accuracy}, {"loss", o.loss}, {"top_k", o.top_k}, {"confusion", o.confusion}}},
      {"compute", {{"device_requested", o.device}, {"path", out.path}, {"threads", out.threads}}},
      {"latency",
       {{"batch_sizes", o.batch_sizes}, {"warmup", o.warmup}, {"budget_s", o.latency_s},
        {"min_batches", o.min_batches}, {"max_batches", o.max_batches},
        {"timed", held_out.timed.empty() ? kPredictTimed : held_out.timed}}},
      {"ranktune_version", RANKTUNE_VERSION},
      {"git_sha", RANKTUNE_GIT_SHA},
  };
  return out;
}

}  // namespace ranktune::eval
