// The mlp trainable (train/mlp_trainable.h): its hyperparameters, its steps, checkpoints
// and held-out evaluation on an engine, and the mlp kind's line of trainable_kinds().
#include "train/mlp_trainable.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <variant>

#include "search/options.h"
#include "sys/text.h"
#include "train/idx.h"
#include "train/mnist.h"
#include "train/rng.h"

namespace ranktune::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// The shortest text that reads back as `d` ("0.1", "1e+300"): std::to_string printed 1e300
// as 301 digits, and a value just outside a bound ("1.0000001") must not round onto it.
std::string number_text(double d) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, res.ptr);
}

std::string value_text(const search::Value& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return "\"" + sys::excerpt(*s) + "\"";
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  return number_text(std::get<double>(v));
}

double number(const search::Config& c, const std::string& name, double fallback) {
  const auto it = c.find(name);
  if (it == c.end()) return fallback;
  if (const auto* d = std::get_if<double>(&it->second)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(&it->second)) return static_cast<double>(*i);
  throw std::invalid_argument("mlp parameter '" + name + "' must be a number (got " + value_text(it->second) + ")");
}

std::int64_t integer(const search::Config& c, const std::string& name, std::int64_t fallback) {
  const double d = number(c, name, static_cast<double>(fallback));
  if (d != std::floor(d) || std::abs(d) > 9.0e15)
    throw std::invalid_argument("mlp parameter '" + name + "' must be an integer (got " + value_text(c.at(name)) + ")");
  return static_cast<std::int64_t>(d);
}

std::string text(const search::Config& c, const std::string& name, const std::string& fallback) {
  const auto it = c.find(name);
  if (it == c.end()) return fallback;
  if (const auto* s = std::get_if<std::string>(&it->second)) return *s;
  throw std::invalid_argument("mlp parameter '" + name + "' must be a string (got " + value_text(it->second) + ")");
}

void check_range(const std::string& name, double v, double lo, double hi, bool hi_open, const std::string& range) {
  if (!(v >= lo && (hi_open ? v < hi : v <= hi)))
    throw std::invalid_argument("mlp parameter '" + name + "' must be in " + range + " (got " + number_text(v) + ")");
}

std::string data_dir_of(const MlpOptions& spec) { return spec.data_dir.empty() ? default_data_dir() : spec.data_dir; }

}  // namespace

const std::vector<std::string>& mlp_param_names() {
  static const std::vector<std::string> names = {"hidden", "depth",        "width",      "activation",
                                                 "optimizer", "lr",        "momentum",   "beta1",
                                                 "beta2",  "weight_decay", "batch_size", "dropout",
                                                 "init_seed"};
  return names;
}

const std::vector<std::string>& mlp_metrics() {
  static const std::vector<std::string> m = {"train_loss", "val_loss",    "val_accuracy",
                                              "samples_per_s", "step_time_s", "params_m"};
  return m;
}

MlpHyper parse_mlp_hyper(const search::Config& c, std::uint64_t default_seed) {
  for (const auto& [name, value] : c) {
    if (std::find(mlp_param_names().begin(), mlp_param_names().end(), name) == mlp_param_names().end())
      throw std::invalid_argument("'" + name + "' is not a parameter of the mlp trainable; valid: " +
                                  sys::comma_list(mlp_param_names()));
  }
  MlpHyper h;
  const bool has_depth = c.contains("depth") || c.contains("width");
  if (c.contains("hidden") && has_depth)
    throw std::invalid_argument("give the hidden layers either as 'hidden' or as 'depth' and 'width', not both");
  if (has_depth) {
    if (!c.contains("depth") || !c.contains("width"))
      throw std::invalid_argument("'depth' and 'width' go together; give both (or 'hidden' = \"256-128\")");
    const auto depth = integer(c, "depth", 2), width = integer(c, "width", 256);
    check_range("depth", static_cast<double>(depth), 0, 16, false, "0..16");
    check_range("width", static_cast<double>(width), 1, 65536, false, "1..65536");
    h.hidden.assign(static_cast<std::size_t>(depth), static_cast<int>(width));
  } else if (const auto it = c.find("hidden"); it != c.end()) {
    if (std::holds_alternative<std::string>(it->second)) {
      h.hidden = parse_hidden(std::get<std::string>(it->second));
    } else {
      const auto width = integer(c, "hidden", 256);
      check_range("hidden", static_cast<double>(width), 1, 65536, false, "1..65536 (one layer), or a string such as \"256-128\"");
      h.hidden = {static_cast<int>(width)};
    }
  }
  h.activation = parse_activation(text(c, "activation", "relu"));
  auto& o = h.optimizer;
  o.kind = parse_optimizer(text(c, "optimizer", "sgd"));
  // momentum (SGD's) and beta1/beta2 (Adam's) are read for either optimizer and used by their
  // own: a space that searches over `optimizer` draws all of them for every trial.
  const double lr = number(c, "lr", o.kind == OptimizerKind::Sgd ? 0.05 : 0.001);
  if (!(lr > 0 && lr <= 100)) throw std::invalid_argument("mlp parameter 'lr' must be in (0, 100] (got " + std::to_string(lr) + ")");
  o.lr = static_cast<float>(lr);
  const double momentum = number(c, "momentum", 0.9), beta1 = number(c, "beta1", 0.9), beta2 = number(c, "beta2", 0.999);
  check_range("momentum", momentum, 0, 1, true, "[0, 1)");
  check_range("beta1", beta1, 0, 1, true, "[0, 1)");
  check_range("beta2", beta2, 0, 1, true, "[0, 1)");
  o.momentum = static_cast<float>(momentum);
  o.beta1 = static_cast<float>(beta1);
  o.beta2 = static_cast<float>(beta2);
  const double wd = number(c, "weight_decay", 0);
  check_range("weight_decay", wd, 0, 1, false, "[0, 1]");
  o.weight_decay = static_cast<float>(wd);
  h.batch_size = integer(c, "batch_size", 128);
  check_range("batch_size", static_cast<double>(h.batch_size), 1, 1 << 20, false, "1..1048576");
  const double dropout = number(c, "dropout", 0);
  check_range("dropout", dropout, 0, 1, true, "[0, 1)");
  h.dropout = static_cast<float>(dropout);
  const auto seed = integer(c, "init_seed", 0);
  if (seed < 0) throw std::invalid_argument("mlp parameter 'init_seed' must be >= 0");
  h.init_seed = c.contains("init_seed") ? static_cast<std::uint64_t>(seed) : default_seed;
  return h;
}

MlpTrainable::MlpTrainable(const config::TrainableSpec& spec) : spec_(options_of<MlpOptions>(spec)) {}
MlpTrainable::~MlpTrainable() = default;

int MlpTrainable::gang_size() const { return context_.collective ? context_.collective->size() : 1; }

void MlpTrainable::setup(const search::Config& config, const Context& context) {
  context_ = context;
  try {
    hyper_ = parse_mlp_hyper(config, derive_key(context.seed, static_cast<std::uint64_t>(context.trial_id)));
  } catch (const std::invalid_argument& e) {
    throw TrialFailure(e.what());
  }
  try {
    images_ = cached_mnist_train(data_dir_of(spec_));
  } catch (const DataError& e) {
    throw TrialFailure(e.what());
  }
  shape_.sizes = {images_->features()};
  shape_.sizes.insert(shape_.sizes.end(), hyper_.hidden.begin(), hyper_.hidden.end());
  shape_.sizes.push_back(images_->classes);
  shape_.activation = hyper_.activation;

  // The split depends on the experiment seed only: every trial validates on the same images.
  const TrainValSplit split = split_train_val(images_->count, spec_.val_fraction, derive_key(context.seed, 0x5b11u),
                                              spec_.train_samples, spec_.val_samples);
  train_rows_ = split.train;
  val_rows_ = split.val;
  if (train_rows_.empty()) throw TrialFailure("the training split is empty; lower [trainable] val_fraction");

  threads_ = std::max(1, spec_.threads_per_worker);
  engine_.reset();
  test_engine_.reset();
  path_ = "cpu";
  path_note_.clear();
  const bool offered = context.device.rfind("cuda:", 0) == 0;
  if (spec_.device == "cuda" && !offered)
    throw TrialFailure("[trainable] device = \"cuda\" but worker rank " + std::to_string(context.rank) +
                       " has no GPU (it runs in CPU mode); use device = \"auto\" to fall back to the CPU");
  if (offered && spec_.device != "cpu") {
    const int device = std::stoi(context.device.substr(5));
    engine_ = make_cuda_engine(shape_, hyper_.optimizer.kind, images_, device, path_note_);
    if (!engine_ && spec_.device == "cuda")
      throw TrialFailure("[trainable] device = \"cuda\" but " + context.device + " cannot be used: " + path_note_);
  }
  if (!engine_) engine_ = make_cpu_engine(shape_, hyper_.optimizer.kind, images_, threads_);
  path_ = engine_->path();

  std::vector<float> params(shape_.param_count());
  init_params(shape_, hyper_.init_seed, params);
  engine_->set_params(params);
  // Every member computed the same weights from the same seed; the broadcast at the first
  // step makes that a guarantee rather than an assumption. Not here: setup() (and restore())
  // must not enter a collective, so that a member whose setup fails (a missing file, no
  // memory) cannot leave the others blocked in it: the gang agrees on setup's outcome first.
  params_shared_ = false;

  data_key_ = derive_key(hyper_.init_seed, 0xda7au);
  dropout_key_ = derive_key(hyper_.init_seed, 0xd209u);
  epoch_ = 0;
  pos_ = 0;
  batches_ = 0;
  steps_ = 0;
  start_epoch();
}

void MlpTrainable::start_epoch() {
  order_ = train_rows_;
  CounterStream rng(derive_key(data_key_, static_cast<std::uint64_t>(epoch_)));
  for (std::size_t i = order_.size() - 1; i > 0; --i) std::swap(order_[i], order_[below(rng.next(), i + 1)]);
  engine_->set_order(order_);
}

StepResult MlpTrainable::step() {
  const auto t0 = Clock::now();
  const auto n = static_cast<std::int64_t>(order_.size());
  const int rank = context_.collective ? context_.collective->rank() : 0;
  const int size = gang_size();
  std::int64_t samples = 0;
  allreduce_s_ = 0;
  if (pos_ >= n) {
    ++epoch_;
    pos_ = 0;
    start_epoch();
  }
  const std::int64_t batches = spec_.batches_per_step > 0 ? spec_.batches_per_step : (n - pos_ + hyper_.batch_size - 1) / hyper_.batch_size;
  try {
    if (context_.collective && !params_shared_) {
      engine_->broadcast_params(*context_.collective);
      params_shared_ = true;
    }
    for (std::int64_t k = 0; k < batches; ++k) {
      if (pos_ >= n) {
        ++epoch_;
        pos_ = 0;
        start_epoch();
      }
      const std::int64_t b = std::min(hyper_.batch_size, n - pos_);
      // This member's shard of the batch: rows [lo, hi) of it.
      const std::int64_t lo = b * rank / size, hi = b * (rank + 1) / size;
      engine_->forward_backward(pos_ + lo, hi - lo, lo, b, hyper_.dropout,
                                derive_key(dropout_key_, static_cast<std::uint64_t>(batches_)));
      if (context_.collective) {
        const auto a0 = Clock::now();
        engine_->allreduce_gradient(*context_.collective);
        allreduce_s_ += seconds(a0, Clock::now());
      }
      engine_->update(hyper_.optimizer);
      pos_ += b;
      ++batches_;
      samples += b;
    }
    const auto t1 = Clock::now();
    // Validation: each member evaluates its share of the rows; sums are added up.
    const auto v = static_cast<std::int64_t>(val_rows_.size());
    const std::int64_t vlo = v * rank / size, vhi = v * (rank + 1) / size;
    const EvalSums e = engine_->evaluate(std::span<const std::int32_t>(val_rows_).subspan(vlo, vhi - vlo));
    double sums[3] = {engine_->take_loss_sum(), e.loss_sum, e.correct};
    if (context_.collective) context_.collective->allreduce_sum(std::span<double>(sums, 3));
    ++steps_;
    const auto t2 = Clock::now();
    StepResult r;
    r.metrics["train_loss"] = sums[0] / static_cast<double>(std::max<std::int64_t>(samples, 1));
    r.metrics["val_loss"] = v > 0 ? sums[1] / static_cast<double>(v) : std::nan("");
    r.metrics["val_accuracy"] = v > 0 ? sums[2] / static_cast<double>(v) : std::nan("");
    r.metrics["samples_per_s"] = static_cast<double>(samples) / std::max(seconds(t0, t1), 1e-9);
    r.metrics["step_time_s"] = seconds(t0, t2);
    // The model's size, for an accuracy-against-size front (metric = ["val_accuracy",
    // "params_m"]): weights and biases, in millions.
    r.metrics["params_m"] = static_cast<double>(shape_.param_count()) / 1e6;
    return r;
  } catch (const CollectiveError& e) {
    throw TrialFailure(std::string("gang collective failed: ") + e.what());
  }
}

namespace {
constexpr char kTag[9] = "mlp-ckp1";
}

void MlpTrainable::save(CheckpointWriter& out) {
  if (!engine_) throw TrialFailure("save() before setup()");
  put_tag(out, kTag);
  std::vector<std::int32_t> sizes(shape_.sizes.begin(), shape_.sizes.end());
  out.put_array(std::span<const std::int32_t>(sizes));
  out.put<std::int32_t>(static_cast<std::int32_t>(shape_.activation));
  std::vector<float> params(shape_.param_count());
  engine_->get_params(params);
  out.put_array(std::span<const float>(params));
  OptimizerState st;
  engine_->get_optimizer_state(st);
  out.put<std::int32_t>(static_cast<std::int32_t>(hyper_.optimizer.kind));
  out.put<std::int64_t>(st.t);
  out.put_array(std::span<const float>(st.m));
  out.put_array(std::span<const float>(st.v));
  for (std::int64_t x : {epoch_, pos_, batches_, steps_}) out.put<std::int64_t>(x);
  out.put<std::uint64_t>(data_key_);
  out.put<std::uint64_t>(dropout_key_);
  out.put<std::uint64_t>(train_rows_.size());
}

void MlpTrainable::restore(CheckpointReader& in) {
  if (!engine_) throw TrialFailure("restore() before setup()");
  expect_tag(in, kTag);
  const auto n_sizes = in.get<std::uint64_t>();
  if (n_sizes > 64) throw CheckpointError("mlp checkpoint: corrupt layer list");
  std::vector<std::int32_t> sizes(n_sizes);
  in.read_exact(std::as_writable_bytes(std::span<std::int32_t>(sizes)));
  if (!std::equal(sizes.begin(), sizes.end(), shape_.sizes.begin(), shape_.sizes.end())) {
    std::string got;
    for (auto s : sizes) {
      if (!got.empty()) got += '-';
      got += std::to_string(s);
    }
    throw CheckpointError("mlp checkpoint is of a " + got + " network; this trial's is " + shape_.describe());
  }
  const auto activation = in.get<std::int32_t>();
  if (activation != static_cast<std::int32_t>(shape_.activation))
    throw CheckpointError("mlp checkpoint has another activation than this trial's (" +
                          std::string(activation_name(shape_.activation)) + ")");
  std::vector<float> params(shape_.param_count());
  in.get_array(std::span<float>(params));
  const auto kind = static_cast<OptimizerKind>(in.get<std::int32_t>());
  OptimizerState st;
  st.t = in.get<std::int64_t>();
  const auto read_slot = [&](std::vector<float>& slot) {
    const auto k = in.get<std::uint64_t>();
    if (k != 0 && k != params.size()) throw CheckpointError("mlp checkpoint: optimizer state of the wrong size");
    slot.resize(k);
    in.read_exact(std::as_writable_bytes(std::span<float>(slot)));
  };
  read_slot(st.m);
  read_slot(st.v);
  std::int64_t counters[4];
  for (auto& x : counters) x = in.get<std::int64_t>();
  const auto data_key = in.get<std::uint64_t>(), dropout_key = in.get<std::uint64_t>();
  const auto train_count = in.get<std::uint64_t>();

  engine_->set_params(params);
  // A checkpoint made with the other optimizer (PBT exploring 'optimizer') keeps the weights
  // and starts the new optimizer fresh.
  if (kind != hyper_.optimizer.kind) st.reset(hyper_.optimizer.kind, params.size());
  engine_->set_optimizer_state(st);
  epoch_ = counters[0];
  pos_ = counters[1];
  batches_ = counters[2];
  steps_ = counters[3];
  data_key_ = data_key;
  dropout_key_ = dropout_key;
  // With another training-set size the saved position means nothing: start a fresh epoch.
  if (train_count != train_rows_.size()) pos_ = static_cast<std::int64_t>(train_rows_.size());
  start_epoch();
}

std::vector<float> MlpTrainable::parameters() {
  std::vector<float> p(shape_.param_count());
  if (engine_) engine_->get_params(p);
  return p;
}

HeldOutResult MlpTrainable::evaluate_held_out() {
  if (!engine_) throw TrialFailure("evaluate_held_out() before setup()");
  const EvalSettings& want = context_.eval;
  InputCast cast = InputCast::None;
  try {
    cast = parse_input_cast(want.input_dtype);
  } catch (const std::invalid_argument& e) {
    throw TrialFailure(e.what());
  }
  if (want.split != "test" && want.split != "validation")
    throw TrialFailure("unknown split '" + want.split + "'; the mlp evaluates \"test\" or \"validation\"");
  if (!test_engine_) {
    std::shared_ptr<const ImageSet> images;
    if (want.split == "validation") {
      // The experiment's own validation split: the rows every trial validated on.
      if (!want.data_dir.empty()) throw TrialFailure("a data folder applies to the test split only");
      images = images_;
      test_rows_ = val_rows_;
      test_files_ = {fingerprint_file(idx_path(data_dir_of(spec_), "train-images-idx3-ubyte")),
                     fingerprint_file(idx_path(data_dir_of(spec_), "train-labels-idx1-ubyte"))};
    } else {
      const std::string dir = want.data_dir.empty() ? data_dir_of(spec_) : want.data_dir;
      try {
        images = std::make_shared<const ImageSet>(load_mnist_test(dir));
        test_files_ = {fingerprint_file(idx_path(dir, "t10k-images-idx3-ubyte")),
                       fingerprint_file(idx_path(dir, "t10k-labels-idx1-ubyte"))};
      } catch (const DataError& e) {
        throw TrialFailure(e.what());
      }
      test_rows_.resize(static_cast<std::size_t>(images->count));
      for (std::size_t i = 0; i < test_rows_.size(); ++i) test_rows_[i] = static_cast<std::int32_t>(i);
    }
    if (images->features() != shape_.sizes.front() || images->classes != shape_.sizes.back())
      throw TrialFailure("the " + want.split + " images have " + std::to_string(images->features()) + " pixels and " +
                         std::to_string(images->classes) + " classes, the model takes " +
                         std::to_string(shape_.sizes.front()) + " and gives " + std::to_string(shape_.sizes.back()));
    if (test_rows_.empty()) throw TrialFailure("the " + want.split + " split holds no images");
    // On the path training ran on, so that latency is measured where the model lives.
    std::string why;
    if (path_.rfind("cuda:", 0) == 0) {
      test_engine_ = make_cuda_engine(shape_, hyper_.optimizer.kind, images, std::stoi(path_.substr(5)), why);
      if (!test_engine_) throw TrialFailure("the " + want.split + " set cannot go to " + path_ + ": " + why);
    } else {
      test_engine_ = make_cpu_engine(shape_, hyper_.optimizer.kind, images, threads_);
    }
    test_images_ = images;
  }
  test_engine_->set_params(parameters());
  test_engine_->set_input_pipeline(want.normalize ? 1.0f / 255.0f : 1.0f, cast);

  // Logits in slices, so that a large split never needs them all in memory at once.
  const int classes = shape_.sizes.back();
  ClassificationMetrics m(classes, want.top_k);
  constexpr std::size_t slice = 8192;
  std::vector<float> logits;
  std::vector<std::uint8_t> labels;
  const std::span<const std::int32_t> rows(test_rows_);
  for (std::size_t at = 0; at < rows.size(); at += slice) {
    const auto part = rows.subspan(at, std::min(slice, rows.size() - at));
    logits.resize(part.size() * static_cast<std::size_t>(classes));
    test_engine_->logits(part, logits);
    labels.resize(part.size());
    for (std::size_t i = 0; i < part.size(); ++i) labels[i] = test_images_->labels[static_cast<std::size_t>(part[i])];
    m.add(logits, labels);
  }
  const std::string prefix = want.split + "_";
  HeldOutResult r;
  r.metrics[prefix + "loss"] = m.loss();
  r.metrics[prefix + "accuracy"] = m.accuracy();
  for (std::size_t i = 0; i < want.top_k.size(); ++i)
    r.metrics[prefix + "top" + std::to_string(want.top_k[i]) + "_accuracy"] = m.top_k_accuracy(i);
  if (want.confusion) {
    r.confusion = m.confusion();
    r.classes = classes;
  }
  r.samples = m.samples();
  r.data = test_files_;
  return r;
}

PredictTiming MlpTrainable::predict(std::int64_t first, std::int64_t count) {
  if (!test_engine_) throw TrialFailure("predict() before evaluate_held_out()");
  const auto n = static_cast<std::int64_t>(test_rows_.size());
  if (first < 0 || count < 1 || first + count > n)
    throw TrialFailure("predict(" + std::to_string(first) + ", " + std::to_string(count) + "): the held-out set has " +
                       std::to_string(n) + " images");
  return test_engine_->predict(
      std::span<const std::int32_t>(test_rows_).subspan(static_cast<std::size_t>(first), static_cast<std::size_t>(count)));
}

// ---------------------------------------------------------------- the kind

namespace {

const std::vector<std::string>& mlp_keys() {
  static const std::vector<std::string> keys = {"data_dir",           "val_fraction", "batches_per_step",
                                                "threads_per_worker", "device",       "train_samples",
                                                "val_samples"};
  return keys;
}

std::shared_ptr<const config::TrainableOptions> read_mlp(const config::TrainableKeys& keys, config::ExperimentConfig& cfg) {
  auto o = std::make_shared<MlpOptions>();
  std::string data_dir;
  if (keys.read("data_dir", data_dir)) {
    if (data_dir.empty()) keys.fail("data_dir", "must not be empty. Omit it to use Debian's dataset-fashion-mnist");
    o->data_dir = (config_dir(cfg) / data_dir).lexically_normal().string();
  }
  if (keys.read("val_fraction", o->val_fraction) && !(o->val_fraction > 0 && o->val_fraction < 1))
    keys.fail("val_fraction", "must be in (0, 1) (got " + config::number_text(o->val_fraction) + "). Use e.g. 0.1");
  keys.read_range("batches_per_step", o->batches_per_step, std::int64_t{0}, search::kMaxIterations);
  keys.read_min("threads_per_worker", o->threads_per_worker, 1);
  if (o->threads_per_worker > 1024)
    keys.fail("threads_per_worker", "must be <= 1024 (got " + std::to_string(o->threads_per_worker) + ")");
  keys.read_enum("device", {"auto", "cpu", "cuda"}, o->device);
  keys.read_min("train_samples", o->train_samples, std::int64_t{0});
  keys.read_min("val_samples", o->val_samples, std::int64_t{0});
  return o;
}

}  // namespace

void MlpOptions::print(config::TomlWriter& out, const std::vector<std::string>&) const {
  if (data_dir.empty())
    out.comment("data_dir: not set ($RANKTUNE_DATA_DIR, else /usr/share/datasets/fashion-mnist)");
  else
    out.string("data_dir", data_dir);
  out.number("val_fraction", val_fraction);
  out.integer("batches_per_step", batches_per_step);
  out.integer("threads_per_worker", threads_per_worker);
  out.string("device", device);
  out.integer("train_samples", train_samples);
  out.integer("val_samples", val_samples);
}

namespace {

// Every value of the space makes a valid trial, the metric is one it reports, the data is there.
void check_mlp(const config::ExperimentConfig& cfg) {
  const MlpOptions& spec = options_of<MlpOptions>(cfg.trainable);
  const auto& names = mlp_param_names();
  for (const auto& p : cfg.space.params) {
    const std::string key = "search.space." + p.name;
    if (std::find(names.begin(), names.end(), p.name) == names.end()) {
      const std::string near = sys::closest_name(p.name, names);
      const std::string name = sys::excerpt(p.name);
      cfg.fail(key, "'" + name + "' is not a parameter of the mlp trainable" +
                        (near.empty() ? "" : "; did you mean '" + near + "'?") + " Valid: " + sys::comma_list(names));
    }
    // Every value the domain can produce must make a valid trial: check the listed values,
    // or both ends of a range, one parameter at a time on top of the defaults.
    std::vector<search::Value> probes = p.domain.values;
    if (!p.domain.is_listed()) {
      const bool integral = p.domain.kind == search::DomainKind::RandInt;
      const double hi = integral ? p.domain.high - 1 : p.domain.high;
      for (double x : {p.domain.low, hi}) {
        if (integral) probes.emplace_back(std::in_place_type<std::int64_t>, static_cast<std::int64_t>(x));
        else probes.emplace_back(std::in_place_type<double>, x);
      }
    }
    for (const auto& v : probes) {
      search::Config c = {{p.name, v}};
      // Parameters that only make sense together get a valid partner for the probe.
      if (p.name == "depth" && !cfg.space.find("width")) cfg.fail(key, "'depth' needs 'width' in the space too");
      if (p.name == "width" && !cfg.space.find("depth")) cfg.fail(key, "'width' needs 'depth' in the space too");
      if (p.name == "depth") c["width"] = std::int64_t{8};
      if (p.name == "width") c["depth"] = std::int64_t{1};
      try {
        (void)parse_mlp_hyper(c, 0);
      } catch (const std::invalid_argument& e) {
        cfg.fail(key, e.what());
      }
    }
  }
  if (cfg.space.find("hidden") && (cfg.space.find("depth") || cfg.space.find("width")))
    cfg.fail("search.space.hidden", "give the hidden layers either as 'hidden' or as 'depth' and 'width', not both");
  const auto& metrics = mlp_metrics();
  if (std::find(metrics.begin(), metrics.end(), cfg.metric) == metrics.end())
    cfg.fail("experiment.metric", "the mlp trainable reports " + sys::comma_list(metrics) + "; '" + sys::excerpt(cfg.metric) +
                                      "' is not one of them");
  // The data must be there before any rank starts; reading it is the worker's job.
  const std::string dir = spec.data_dir.empty() ? default_data_dir() : spec.data_dir;
  for (const char* stem : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"}) {
    const std::string path = idx_path(dir, stem);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      cfg.fail(spec.data_dir.empty() ? "trainable.kind" : "trainable.data_dir",
               path + ": no such file. " +
                   (spec.data_dir.empty()
                        ? "Install Fashion-MNIST with `apt-get install dataset-fashion-mnist`, or set data_dir"
                        : "Put the IDX files of MNIST or Fashion-MNIST there, or remove data_dir to use Debian's "
                          "dataset-fashion-mnist (`apt-get install dataset-fashion-mnist`)"));
  }
}

TrainableTraits mlp_traits(const config::TrainableSpec& spec) {
  TrainableTraits t;
  t.can_checkpoint = true;
  t.uses_gpu = options_of<MlpOptions>(spec).device != "cpu";
  t.can_gang = true;
  t.can_evaluate = true;
  t.metrics = mlp_metrics();
  t.shape_params = {"hidden", "depth", "width"};  // the layers' sizes: the weights' shapes
  return t;
}

std::unique_ptr<Trainable> make_mlp(const config::TrainableSpec& spec) { return std::make_unique<MlpTrainable>(spec); }

config::TrainableSpec mlp_on_compute(const config::TrainableSpec& spec, const std::string& device, int threads) {
  config::TrainableSpec out = spec;
  MlpOptions& o = edit_options<MlpOptions>(out);
  if (threads > 0) o.threads_per_worker = threads;
  o.device = device;
  return out;
}

nlohmann::json mlp_describe(const config::TrainableSpec& spec) {
  const MlpOptions& o = options_of<MlpOptions>(spec);
  return {{"data_dir", o.data_dir}, {"val_fraction", o.val_fraction}};
}

}  // namespace

TrainableKind mlp_kind() {
  return {"mlp", "the built-in MLP on (Fashion-)MNIST, on the CPU or the worker's GPU, alone or as a gang",
          mlp_keys, read_mlp, check_mlp, mlp_traits, make_mlp, nullptr, mlp_on_compute, mlp_describe};
}

}  // namespace ranktune::train
