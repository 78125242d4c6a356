// The mlp trainable: gradients against finite differences, learning on real Fashion-MNIST
// (a few hundred images), bit-exact resume from a checkpoint, config validation, the test
// set kept out of the search, and the GPU path (or its CPU fall-back without a GPU).

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include <set>

#include <gtest/gtest.h>

#include "config/config.h"
#include "train/idx.h"
#include "train/mlp_engine.h"
#include "train/mlp_trainable.h"
#include "train/mnist.h"
#include "train/rng.h"
#include "tests/unit/common/expect_text.h"

namespace ranktune::train {
namespace {

namespace fs = std::filesystem;

config::TrainableSpec small_spec(std::int64_t train = 320, std::int64_t val = 200, std::int64_t batches = 0) {
  MlpOptions s;
  s.train_samples = train;
  s.val_samples = val;
  s.batches_per_step = batches;
  return make_spec(s);
}

Context context(std::uint64_t seed = 1, search::TrialId trial = 1) {
  Context c;
  c.seed = seed;
  c.trial_id = trial;
  return c;
}

// ------------------------------------------------------------------ gradients

// A random image set small enough for finite differences.
std::shared_ptr<const ImageSet> random_images(int n, int rows, int cols) {
  auto s = std::make_shared<ImageSet>();
  s->count = n;
  s->rows = rows;
  s->cols = cols;
  CounterStream rng(42);
  for (int i = 0; i < n * rows * cols; ++i) s->pixels.push_back(static_cast<std::uint8_t>(rng.next() >> 56));
  for (int i = 0; i < n; ++i) s->labels.push_back(static_cast<std::uint8_t>(below(rng.next(), 10)));
  return s;
}

TEST(MlpEngine, GradientMatchesFiniteDifferences) {
  for (Activation act : {Activation::Tanh, Activation::Relu}) {
    const auto data = random_images(8, 3, 4);
    MlpShape shape{{12, 7, 5, 10}, act};
    std::vector<float> p(shape.param_count());
    init_params(shape, 3, p);
    std::vector<std::int32_t> rows = {0, 1, 2, 3, 4, 5, 6, 7};
    auto loss_at = [&](const std::vector<float>& q) {
      auto e = make_cpu_engine(shape, OptimizerKind::Sgd, data, 1);
      e->set_params(q);
      return e->evaluate(rows).loss_sum / 8.0;
    };
    // The gradient, read back through one SGD step with lr 1 and no momentum.
    auto e = make_cpu_engine(shape, OptimizerKind::Sgd, data, 1);
    e->set_params(p);
    e->set_order(rows);
    e->forward_backward(0, 8, 0, 8, 0.0f, 0);
    EXPECT_NEAR(e->take_loss_sum() / 8.0, loss_at(p), 1e-5);
    OptimizerSettings unit;
    unit.lr = 1;
    unit.momentum = 0;
    e->update(unit);
    std::vector<float> after(p.size());
    e->get_params(after);
    int checked = 0;
    for (std::size_t i = 0; i < p.size(); i += 7) {
      const double g = static_cast<double>(p[i]) - after[i];
      std::vector<float> plus = p, minus = p;
      const float h = 1e-2f;
      plus[i] += h;
      minus[i] -= h;
      const double fd = (loss_at(plus) - loss_at(minus)) / (2.0 * h);
      EXPECT_NEAR(g, fd, 2e-3 + 0.03 * std::abs(fd)) << activation_name(act) << " parameter " << i;
      ++checked;
    }
    EXPECT_GT(checked, 20);
  }
}

// predict() is a timed evaluate(): the same forward pass, its classes in host memory, and the
// time of each of its three parts.
TEST(MlpEngine, PredictGivesTheClassesEvaluateCountsAndTimesItsParts) {
  const auto data = random_images(300, 6, 6);
  MlpShape shape{{36, 16, 10}, Activation::Relu};
  std::vector<float> p(shape.param_count());
  init_params(shape, 5, p);
  auto e = make_cpu_engine(shape, OptimizerKind::Sgd, data, 1);
  e->set_params(p);
  std::vector<std::int32_t> rows;
  for (int i = 299; i >= 0; i -= 2) rows.push_back(i);  // not in order, so the rows are followed
  const PredictTiming t = e->predict(rows);
  EXPECT_GT(t.pre_s, 0);
  EXPECT_GT(t.inference_s, 0);
  EXPECT_GT(t.post_s, 0);
  const std::span<const std::int32_t> classes = e->predictions();
  ASSERT_EQ(classes.size(), rows.size());
  double correct = 0;
  std::set<std::int32_t> seen;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ASSERT_TRUE(classes[i] >= 0 && classes[i] < 10) << classes[i];
    correct += classes[i] == data->labels[rows[i]] ? 1 : 0;
    seen.insert(classes[i]);
  }
  EXPECT_EQ(correct, e->evaluate(rows).correct);
  EXPECT_GT(seen.size(), 1u);  // not one class for every image
}

TEST(MlpEngine, OptimizersFollowTheirFormulas) {
  // One parameter, gradient 0.5, weight decay 0.1: checked against the formulas by hand.
  std::vector<float> w = {1.0f};
  const std::vector<float> g = {0.5f};
  OptimizerSettings sgd;
  sgd.lr = 0.1f;
  sgd.momentum = 0.9f;
  sgd.weight_decay = 0.1f;
  OptimizerState st;
  st.reset(OptimizerKind::Sgd, 1);
  optimizer_step(sgd, w, g, st);  // v = 0.6, w = 1 - 0.06
  EXPECT_FLOAT_EQ(w[0], 0.94f);
  optimizer_step(sgd, w, g, st);  // v = 0.9*0.6 + 0.5 + 0.094 = 1.134
  EXPECT_FLOAT_EQ(w[0], 0.94f - 0.1134f);
  OptimizerSettings adam;
  adam.kind = OptimizerKind::Adam;
  adam.lr = 0.01f;
  std::vector<float> w2 = {1.0f};
  st.reset(OptimizerKind::Adam, 1);
  optimizer_step(adam, w2, g, st);  // the first Adam step moves by lr (bias-corrected)
  EXPECT_NEAR(w2[0], 0.99f, 1e-6);
}

// ------------------------------------------------------------------ training

TEST(MlpTrainable, LearnsFashionMnistFromAFewHundredImages) {
  MlpTrainable t(small_spec(600, 300));
  t.setup({{"hidden", std::string("64")}, {"lr", 0.05}, {"batch_size", std::int64_t{32}}}, context());
  EXPECT_EQ(t.path(), "cpu");
  EXPECT_EQ(t.shape().describe(), "784-64-10 relu");
  double first = 0, last = 0, acc = 0;
  for (int i = 0; i < 4; ++i) {
    const StepResult r = t.step();
    ASSERT_FALSE(r.done);
    for (const auto& m : mlp_metrics()) EXPECT_TRUE(r.metrics.contains(m)) << m;
    if (i == 0) first = r.metrics.at("train_loss");
    last = r.metrics.at("train_loss");
    acc = r.metrics.at("val_accuracy");
    EXPECT_GT(r.metrics.at("samples_per_s"), 0);
    EXPECT_GE(r.metrics.at("step_time_s"), 0);
    // 784 inputs, 64 hidden, 10 classes: 784*64 + 64 + 64*10 + 10 weights and biases.
    EXPECT_DOUBLE_EQ(r.metrics.at("params_m"), (784.0 * 64 + 64 + 64 * 10 + 10) / 1e6);
  }
  EXPECT_LT(last, 0.7 * first);
  EXPECT_GT(acc, 0.6) << "4 epochs of 600 images reach about 0.75";
}

struct TrainRun {
  std::vector<search::Metrics> metrics;
  std::vector<float> params;
};

TrainRun train_steps(MlpTrainable& t, int steps) {
  TrainRun r;
  for (int i = 0; i < steps; ++i) r.metrics.push_back(t.step().metrics);
  r.params = t.parameters();
  return r;
}

void expect_bit_exact(const TrainRun& a, const TrainRun& b) {
  ASSERT_EQ(a.params.size(), b.params.size());
  EXPECT_EQ(std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(float)), 0) << "weights differ";
  ASSERT_EQ(a.metrics.size(), b.metrics.size());
  for (std::size_t i = 0; i < a.metrics.size(); ++i) {
    for (const char* m : {"train_loss", "val_loss", "val_accuracy"})
      EXPECT_EQ(a.metrics[i].at(m), b.metrics[i].at(m)) << m << " at step " << i;
  }
}

TEST(MlpTrainable, ResumesBitExactFromACheckpoint) {
  const search::Config sgd = {{"hidden", std::string("32-16")}, {"dropout", 0.3}, {"batch_size", std::int64_t{24}},
                              {"weight_decay", 1e-4}};
  const search::Config adam = {{"depth", std::int64_t{2}}, {"width", std::int64_t{24}}, {"optimizer", std::string("adam")},
                               {"activation", std::string("tanh")}, {"batch_size", std::int64_t{40}}};
  for (const auto& config : {sgd, adam}) {
    // 7 batches a step over 240 images: steps end mid-epoch and cross epoch boundaries.
    const auto spec = small_spec(240, 100, 7);
    MlpTrainable a(spec);
    a.setup(config, context());
    train_steps(a, 3);
    CheckpointBytes bytes;
    MemoryCheckpointWriter w(bytes);
    a.save(w);
    const TrainRun straight = train_steps(a, 4);

    MlpTrainable b(spec);
    b.setup(config, context());
    train_steps(b, 1);  // state that restore must overwrite
    MemoryCheckpointReader r(bytes);
    b.restore(r);
    EXPECT_EQ(r.remaining(), 0u);
    expect_bit_exact(straight, train_steps(b, 4));
  }
}

TEST(MlpTrainable, SameSeedSameRunOtherSeedOtherRun) {
  const search::Config c = {{"hidden", std::string("16")}, {"dropout", 0.2}};
  MlpTrainable a(small_spec(100, 50, 3)), b(small_spec(100, 50, 3)), d(small_spec(100, 50, 3));
  a.setup(c, context(1, 5));
  b.setup(c, context(1, 5));
  d.setup(c, context(1, 6));
  const TrainRun ra = train_steps(a, 2), rb = train_steps(b, 2), rd = train_steps(d, 2);
  expect_bit_exact(ra, rb);
  EXPECT_NE(ra.params, rd.params);
  MlpTrainable e(small_spec(100, 50, 3));
  search::Config seeded = c;
  seeded["init_seed"] = std::int64_t{99};
  e.setup(seeded, context(1, 5));
  MlpTrainable f(small_spec(100, 50, 3));
  f.setup(c, context(1, 5));
  EXPECT_NE(e.parameters(), f.parameters()) << "init_seed must change the initial weights";
  EXPECT_NE(train_steps(e, 1).params, ra.params);
}

TEST(MlpTrainable, RefusesAnotherModelsCheckpoint) {
  MlpTrainable a(small_spec(64, 32, 1)), b(small_spec(64, 32, 1));
  a.setup({{"hidden", std::string("16")}}, context());
  b.setup({{"hidden", std::string("17")}}, context());
  CheckpointBytes bytes;
  MemoryCheckpointWriter w(bytes);
  a.save(w);
  MemoryCheckpointReader r(bytes);
  try {
    b.restore(r);
    FAIL() << "restored a 784-16-10 checkpoint into a 784-17-10 network";
  } catch (const CheckpointError& e) {
    EXPECT_CONTAINS(e.what(), "784-16-10");
  }
  CheckpointBytes junk(100, std::byte{1});
  MemoryCheckpointReader rj(junk);
  EXPECT_THROW(a.restore(rj), CheckpointError);
  bytes.resize(bytes.size() / 2);
  MemoryCheckpointReader rt(bytes);
  EXPECT_THROW(a.restore(rt), CheckpointError);
}

TEST(MlpTrainable, KeepsWeightsAcrossAnOptimizerChange) {
  // PBT may hand an SGD trial's checkpoint to a trial whose config says Adam.
  MlpTrainable sgd(small_spec(64, 32, 2)), adam(small_spec(64, 32, 2));
  sgd.setup({{"hidden", std::string("16")}}, context());
  sgd.step();
  adam.setup({{"hidden", std::string("16")}, {"optimizer", std::string("adam")}}, context(1, 2));
  adam.step();
  CheckpointBytes bytes;
  MemoryCheckpointWriter w(bytes);
  sgd.save(w);
  MemoryCheckpointReader r(bytes);
  adam.restore(r);
  EXPECT_EQ(adam.parameters(), sgd.parameters());
  const auto m = adam.step().metrics;
  EXPECT_TRUE(std::isfinite(m.at("train_loss")));
  EXPECT_NE(adam.parameters(), sgd.parameters());
}

TEST(MlpTrainable, BadHyperparametersFailTheTrialClearly) {
  auto why = [](const search::Config& c) -> std::string {
    try {
      parse_mlp_hyper(c, 0);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_CONTAINS(why({{"lr_rate", 0.1}}), "'lr_rate' is not a parameter of the mlp trainable");
  EXPECT_CONTAINS(why({{"activation", std::string("gelu")}}), "valid: relu, tanh");
  EXPECT_CONTAINS(why({{"optimizer", std::string("rmsprop")}}), "valid: sgd, adam");
  EXPECT_CONTAINS(why({{"dropout", 1.0}}), "'dropout' must be in [0, 1)");
  EXPECT_CONTAINS(why({{"batch_size", 12.5}}), "must be an integer");
  EXPECT_CONTAINS(why({{"hidden", std::string("256-abc")}}), "'abc' is not a layer size");
  EXPECT_CONTAINS(why({{"hidden", std::string("64")}, {"depth", std::int64_t{2}}, {"width", std::int64_t{3}}}), "not both");
  EXPECT_CONTAINS(why({{"depth", std::int64_t{2}}}), "go together");
  EXPECT_EQ(parse_mlp_hyper({{"hidden", std::int64_t{100}}}, 0).hidden, std::vector<int>{100});
  EXPECT_EQ(parse_mlp_hyper({{"depth", std::int64_t{3}}, {"width", 50.0}}, 0).hidden, (std::vector<int>{50, 50, 50}));
  EXPECT_FLOAT_EQ(parse_mlp_hyper({{"optimizer", std::string("adam")}}, 0).optimizer.lr, 0.001f);

  MlpTrainable t(small_spec());
  EXPECT_THROW(t.setup({{"activation", std::string("gelu")}}, context()), TrialFailure);
}

// ------------------------------------------------------------------ data and the test set

TEST(MlpTrainable, SearchNeverReadsTheTestSet) {
  // A folder with the training files only: the whole training path works without t10k.
  char tmpl[] = "/tmp/ranktune-mlp-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"})
    fs::create_symlink(fs::path(default_data_dir()) / f, dir / f);
  config::TrainableSpec spec = small_spec(64, 32, 2);
  edit_options<MlpOptions>(spec).data_dir = dir.string();
  MlpTrainable t(spec);
  t.setup({{"hidden", std::string("8")}}, context());
  const auto m = t.step().metrics;
  EXPECT_GT(m.at("val_accuracy"), 0.0);
  try {
    t.evaluate_held_out();
    FAIL() << "evaluate_held_out found test files that are not there";
  } catch (const TrialFailure& e) {
    EXPECT_CONTAINS(e.what(), "t10k-images-idx3-ubyte.gz");
    EXPECT_CONTAINS(e.what(), "apt-get install dataset-fashion-mnist");
  }
  fs::remove_all(dir);

  // With the real folder, held-out evaluation works and sees 10k images.
  MlpTrainable full(small_spec(300, 100, 10));
  full.setup({{"hidden", std::string("32")}}, context());
  full.step();
  const HeldOutResult held_out = full.evaluate_held_out();
  EXPECT_EQ(held_out.samples, 10000);
  EXPECT_GT(held_out.metrics.at("test_accuracy"), 0.3);
  EXPECT_GT(held_out.metrics.at("test_loss"), 0.0);
  // The manifest's fingerprints: the two t10k files, with their real sizes.
  ASSERT_EQ(held_out.data.size(), 2u);
  EXPECT_CONTAINS(held_out.data[0].path, "t10k-images-idx3-ubyte");
  EXPECT_EQ(held_out.data[0].bytes, fs::file_size(held_out.data[0].path));
  EXPECT_NE(held_out.data[0].crc32c, 0u);
  // predict() takes any batch inside the test set and refuses one beyond it.
  full.predict(0, 1);
  full.predict(9872, 128);
  EXPECT_THROW(full.predict(9900, 128), TrialFailure);
}

TEST(MlpTrainable, MissingDataFailsTheTrialNamingTheFile) {
  config::TrainableSpec spec = small_spec();
  edit_options<MlpOptions>(spec).data_dir = "/nonexistent/fashion";
  MlpTrainable t(spec);
  try {
    t.setup({}, context());
    FAIL();
  } catch (const TrialFailure& e) {
    EXPECT_CONTAINS(e.what(), "/nonexistent/fashion/train-images-idx3-ubyte.gz: no such file");
    EXPECT_CONTAINS(e.what(), "apt-get install dataset-fashion-mnist");
  }
}

// ------------------------------------------------------------------ config

std::string config_error(const std::string& extra_space, const std::string& extra_trainable = "",
                         const std::string& metric = "val_accuracy") {
  const std::string text = "[experiment]\nname = \"m\"\nmetric = \"" + metric + "\"\nmode = \"max\"\n"
                           "[search.space]\nlr = { loguniform = [0.001, 0.1] }\n" + extra_space +
                           "[trainable]\nkind = \"mlp\"\n" + extra_trainable;
  try {
    config::ExperimentConfig cfg = config::parse_config(text, "exp.toml");
    validate(cfg);
    return "(valid) " + config::render_config(cfg);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
}

TEST(MlpConfig, KeysAreParsedAndChecked) {
  const std::string ok = config_error("hidden = { choice = [\"256-128\", \"512\"] }\n",
                                      "val_fraction = 0.2\nbatches_per_step = 50\nthreads_per_worker = 2\n"
                                      "device = \"cpu\"\ntrain_samples = 1000\n");
  EXPECT_CONTAINS(ok, "(valid)");
  EXPECT_CONTAINS(ok, "batches_per_step = 50");
  EXPECT_CONTAINS(ok, "# data_dir: not set");
  EXPECT_CONTAINS(config_error("lr_rate = { uniform = [0.0, 1.0] }\n"), "exp.toml:7: search.space.lr_rate: 'lr_rate' is not a parameter");
  EXPECT_CONTAINS(config_error("dropout = { uniform = [0.0, 1.0] }\n"), "'dropout' must be in [0, 1)");
  // A bound far out of range is quoted as the number it is, not 301 digits of std::to_string.
  const std::string huge = config_error("dropout = { uniform = [0.0, 1e300] }\n");
  EXPECT_CONTAINS(huge, "'dropout' must be in [0, 1) (got 1e+300)");
  EXPECT_LT(huge.size(), 200u) << huge;
  EXPECT_CONTAINS(config_error("momentum = { uniform = [0.5, 1.0000001] }\n"), "(got 1.0000001)");
  EXPECT_CONTAINS(config_error("activation = { choice = [\"relu\", \"elu\"] }\n"), "unknown activation 'elu'");
  EXPECT_CONTAINS(config_error("", "", "loss"), "the mlp trainable reports train_loss, val_loss");
  EXPECT_CONTAINS(config_error("", "val_fraction = 1.5\n"), "trainable.val_fraction: must be in (0, 1)");
  EXPECT_CONTAINS(config_error("", "device = \"gpu\"\n"), "Did you mean \"cpu\"?");
  EXPECT_CONTAINS(config_error("", "function = \"branin\"\n"), "applies only to kind = \"synthetic\"");
  EXPECT_CONTAINS(config_error("", "data_dir = \"/no/such/dir\"\n"),
                  "/no/such/dir/train-images-idx3-ubyte.gz: no such file");
  EXPECT_CONTAINS(config_error("", "batchs_per_step = 3\n"), "Did you mean 'batches_per_step'?");
}

// ------------------------------------------------------------------ GPU path

// On a machine with a GPU this trains the same model on the GPU and the CPU and compares;
// without one it checks the fall-back. benchmarks/gpu_check.sh runs it on a GPU machine.
TEST(MlpCuda, GpuMatchesCpuOrFallsBack) {
  const search::Config c = {{"hidden", std::string("128-64")}, {"batch_size", std::int64_t{64}}, {"dropout", 0.1}};
  Context gpu_ctx = context();
  gpu_ctx.device = "cuda:0";
  MlpTrainable gpu(small_spec(2000, 500, 0));
  gpu.setup(c, gpu_ctx);
  if (gpu.path() == "cpu") {
    EXPECT_FALSE(gpu.path_note().empty()) << "a fall-back must say why";
    std::printf("no GPU: %s\n", gpu.path_note().c_str());
    config::TrainableSpec forced = small_spec();
    edit_options<MlpOptions>(forced).device = "cuda";
    MlpTrainable strict(forced);
    EXPECT_THROW(strict.setup(c, gpu_ctx), TrialFailure);
    return;
  }
  EXPECT_EQ(gpu.path(), "cuda:0");
  MlpTrainable cpu(small_spec(2000, 500, 0));
  cpu.setup(c, context());
  EXPECT_EQ(cpu.parameters(), gpu.parameters()) << "same initial weights";
  for (int epoch = 0; epoch < 3; ++epoch) {
    const auto g = gpu.step().metrics, h = cpu.step().metrics;
    // Documented tolerance (benchmarks/README.md): fp32 GEMMs summed in another order drift
    // apart slowly; after 3 epochs losses agree to 2% and accuracies to 2 points.
    EXPECT_NEAR(g.at("train_loss"), h.at("train_loss"), 0.02 * h.at("train_loss")) << "epoch " << epoch;
    EXPECT_NEAR(g.at("val_loss"), h.at("val_loss"), 0.02 * h.at("val_loss")) << "epoch " << epoch;
    EXPECT_NEAR(g.at("val_accuracy"), h.at("val_accuracy"), 0.02) << "epoch " << epoch;
  }
  CheckpointBytes bytes;
  MemoryCheckpointWriter w(bytes);
  gpu.save(w);
  MlpTrainable back(small_spec(2000, 500, 0));
  back.setup(c, gpu_ctx);
  MemoryCheckpointReader r(bytes);
  back.restore(r);
  EXPECT_EQ(back.parameters(), gpu.parameters()) << "GPU checkpoint round trip";
}

}  // namespace
}  // namespace ranktune::train
