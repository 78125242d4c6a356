// The trainable kinds' table (train/registry.h): the factory, reading [trainable], the
// traits, and validate().

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "config/config.h"
#include "train/command.h"
#include "train/registry.h"
#include "train/synthetic.h"
#include "train/trainable.h"
#include "tests/unit/common/expect_text.h"

namespace ranktune::train {
namespace {

config::TrainableSpec synthetic_spec(const std::string& function) {
  SyntheticOptions options;
  options.function = function;
  return make_spec(options);
}

TEST(MakeTrainable, BuildsEachKind) {
  EXPECT_NE(dynamic_cast<SyntheticTrainable*>(make_trainable(synthetic_spec("branin")).get()), nullptr);
  config::TrainableSpec command = make_spec(CommandOptions{});
  edit_options<CommandOptions>(command).command = {"true"};
  EXPECT_NE(dynamic_cast<CommandTrainable*>(make_trainable(command).get()), nullptr);
  command.kind = "mystery";
  EXPECT_THROW(make_trainable(command), std::invalid_argument);
  EXPECT_EQ(reported_metrics(synthetic_spec("sphere")), (std::vector<std::string>{"loss", "objective"}));
}

search::Param uniform(const std::string& name, double low, double high) {
  search::Param p;
  p.name = name;
  p.domain.kind = search::DomainKind::Uniform;
  p.domain.low = low;
  p.domain.high = high;
  return p;
}

config::ExperimentConfig branin_config() {
  config::ExperimentConfig cfg;
  cfg.path = "/tmp/ranktune_validate/exp.toml";
  cfg.metric = "loss";
  cfg.mode = search::Mode::Min;
  cfg.space.params = {uniform("x1", -5, 10), uniform("x2", 0, 15)};
  cfg.trainable = synthetic_spec("branin");
  cfg.lines = {{"experiment.metric", 3}, {"search.space", 9}, {"trainable.function", 14},
               {"trainable.command", 15}, {"trainable.kind", 13}};
  return cfg;
}

// Runs validate and returns the error; fails the test when none is thrown.
config::ConfigError validate_error(config::ExperimentConfig cfg) {
  try {
    validate(cfg);
  } catch (const config::ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "validate() accepted the config";
  return config::ConfigError("", 0, "", "");
}

TEST(Validate, AcceptsBraninAndPutsTheMetricFirst) {
  auto cfg = branin_config();
  validate(cfg);
  EXPECT_EQ(cfg.trainable.metrics, (std::vector<std::string>{"loss", "objective"}));
  cfg.metric = "objective";
  validate(cfg);
  EXPECT_EQ(cfg.trainable.metrics, (std::vector<std::string>{"objective", "loss"}));
}

TEST(Validate, UnknownFunction) {
  auto cfg = branin_config();
  edit_options<SyntheticOptions>(cfg.trainable).function = "branni";
  const auto e = validate_error(cfg);
  EXPECT_EQ(e.key(), "trainable.function");
  EXPECT_EQ(e.line(), 14);
  EXPECT_CONTAINS(e.what(), ":14:");
  EXPECT_CONTAINS(e.what(), "unknown function 'branni'; valid: branin, hartmann6, rosenbrock, sphere");
}

TEST(Validate, MissingParameters) {
  auto cfg = branin_config();
  cfg.space.params.pop_back();
  auto e = validate_error(cfg);
  EXPECT_EQ(e.key(), "search.space");
  EXPECT_EQ(e.line(), 9);
  EXPECT_CONTAINS(e.what(), "missing: x2");

  edit_options<SyntheticOptions>(cfg.trainable).function = "sphere";
  cfg.space.params = {uniform("lr", 0, 1)};
  e = validate_error(cfg);
  EXPECT_EQ(e.key(), "search.space");
  EXPECT_CONTAINS(e.what(), "missing: x1");

  cfg.space.params = {uniform("x1", 0, 1), uniform("x3", 0, 1)};
  EXPECT_CONTAINS(validate_error(cfg).what(), "missing: x2");
  cfg.space.params.push_back(uniform("x2", 0, 1));
  validate(cfg);

  edit_options<SyntheticOptions>(cfg.trainable).function = "hartmann6";
  EXPECT_CONTAINS(validate_error(cfg).what(), "missing: x4, x5, x6");
}

TEST(Validate, StringParameterIsRejected) {
  auto cfg = branin_config();
  cfg.space.params[0].domain.kind = search::DomainKind::Choice;
  cfg.space.params[0].domain.values = {std::string("a"), std::string("b")};
  const auto e = validate_error(cfg);
  EXPECT_EQ(e.line(), 9);  // [search.space], the nearest recorded key
  EXPECT_CONTAINS(e.what(), "must be numeric");
}

TEST(Validate, WrongMetric) {
  auto cfg = branin_config();
  cfg.metric = "accuracy";
  const auto e = validate_error(cfg);
  EXPECT_EQ(e.key(), "experiment.metric");
  EXPECT_EQ(e.line(), 3);
  EXPECT_CONTAINS(e.what(), "the synthetic trainable reports loss, objective");
}

// ZDT1 over x1..x`n` in [0, 1], optimizing f1.
config::ExperimentConfig zdt1_config(int n) {
  auto cfg = branin_config();
  cfg.metric = "f1";
  cfg.trainable = synthetic_spec("zdt1");
  cfg.space.params.clear();
  for (int i = 1; i <= n; ++i) cfg.space.params.push_back(uniform(variadic_param(i), 0, 1));
  return cfg;
}

TEST(Validate, MultiObjectiveFunctionRecordsEveryObjective) {
  auto cfg = zdt1_config(30);
  validate(cfg);
  EXPECT_EQ(cfg.trainable.metrics, (std::vector<std::string>{"f1", "f2"}));
  cfg.metric = "f2";
  validate(cfg);
  EXPECT_EQ(cfg.trainable.metrics, (std::vector<std::string>{"f2", "f1"}));
  cfg = zdt1_config(12);
  cfg.trainable = synthetic_spec("dtlz2");
  validate(cfg);
  EXPECT_EQ(cfg.trainable.metrics, (std::vector<std::string>{"f1", "f2", "f3"}));

  cfg.metric = "loss";  // a single-objective function's metric
  const auto e = validate_error(cfg);
  EXPECT_EQ(e.key(), "experiment.metric");
  EXPECT_CONTAINS(e.what(), "the synthetic trainable reports f1, f2, f3; 'loss' is not one of them (dtlz2 has 3 objectives");
}

TEST(Validate, MultiObjectiveFunctionNeedsEnoughParameters) {
  auto e = validate_error(zdt1_config(1));
  EXPECT_EQ(e.key(), "search.space");
  EXPECT_EQ(e.line(), 9);
  EXPECT_CONTAINS(e.what(), "zdt1 needs parameters x1..xn (n >= 2); missing: x2");
  auto cfg = zdt1_config(0);
  cfg.space.params.push_back(uniform("lr", 0, 1));
  EXPECT_CONTAINS(validate_error(cfg).what(), "zdt1 needs parameters x1..xn (n >= 2); missing: x1, x2");
  cfg = zdt1_config(2);
  cfg.trainable = synthetic_spec("dtlz2");
  EXPECT_CONTAINS(validate_error(cfg).what(), "dtlz2 needs parameters x1..xn (n >= 3); missing: x3");
  cfg = zdt1_config(2);
  validate(cfg);
}

TEST(Validate, MultiObjectiveFunctionInputsStayInTheirDomain) {
  auto cfg = zdt1_config(30);
  cfg.space.params[4].domain.high = 1.5;
  auto e = validate_error(cfg);
  EXPECT_EQ(e.key(), "search.space.x5");
  EXPECT_CONTAINS(e.what(), "'x5' is an input of zdt1, which is defined on [0, 1]; its values reach 1.5. Keep its range within [0, 1]");

  cfg = zdt1_config(30);
  cfg.space.params[0].domain = {search::DomainKind::Choice, 0, 0, 0, {0.5, std::int64_t{-1}}};
  EXPECT_CONTAINS(validate_error(cfg).what(), "'x1' is an input of zdt1, which is defined on [0, 1]; its values reach -1.");
  // randint's upper bound is exclusive: [0, 2) draws 0 and 1, both in [0, 1].
  cfg.space.params[0].domain = {search::DomainKind::RandInt, 0, 2, 0, {}};
  validate(cfg);
  cfg.space.params[0].domain = {search::DomainKind::RandInt, 0, 3, 0, {}};
  EXPECT_CONTAINS(validate_error(cfg).what(), "its values reach 2.");
  cfg.space.params[0].domain = {search::DomainKind::Grid, 0, 0, 0, {0.0, 0.25, 1.0}};
  validate(cfg);
  // Parameters that are not inputs of the function may range anywhere; single-objective
  // functions have no domain to keep.
  cfg.space.params.push_back(uniform("lr", -10, 10));
  validate(cfg);
  auto sphere = branin_config();
  sphere.trainable = synthetic_spec("sphere");
  sphere.space.params = {uniform("x1", -100, 100)};
  validate(sphere);
}

TEST(Validate, UnknownKind) {
  auto cfg = branin_config();
  cfg.trainable.kind = "magic";
  const auto e = validate_error(cfg);
  EXPECT_EQ(e.key(), "trainable.kind");
  EXPECT_EQ(e.line(), 13);
}

TEST(Validate, CommandProgramMustExist) {
  auto cfg = branin_config();
  cfg.trainable = make_spec(CommandOptions{});
  edit_options<CommandOptions>(cfg.trainable).command = {"./no_such_train.py"};
  auto e = validate_error(cfg);
  EXPECT_EQ(e.key(), "trainable.command");
  EXPECT_EQ(e.line(), 15);
  EXPECT_CONTAINS(e.what(), "/tmp/ranktune_validate/no_such_train.py");
  edit_options<CommandOptions>(cfg.trainable).command = {"ranktune-no-such-program"};
  EXPECT_CONTAINS(validate_error(cfg).what(), "not found in PATH");

  // The example script, relative to a config in the source tree; the metric goes first.
  cfg.path = std::string(RANKTUNE_SOURCE_DIR) + "/examples/experiment.toml";
  edit_options<CommandOptions>(cfg.trainable).command = {"./quadratic.py"};
  cfg.trainable.metrics = {"accuracy", "loss"};
  validate(cfg);
  EXPECT_EQ(cfg.trainable.metrics, (std::vector<std::string>{"loss", "accuracy"}));
  edit_options<CommandOptions>(cfg.trainable).command = {"sh", "-c", "true"};  // PATH lookup
  validate(cfg);
}



// ---------------------------------------------------------------- the table and the traits

config::ExperimentConfig read(const std::string& trainable, const std::string& resources = "") {
  config::ExperimentConfig cfg = config::parse_config("[experiment]\nname = \"t\"\nmetric = \"loss\"\nmode = \"min\"\n"
                                              "[search.space]\nx = { uniform = [0.0, 1.0] }\n"
                                              "[trainable]\n" + trainable + resources, "/tmp/t/exp.toml");
  read_trainable(cfg);
  return cfg;
}

// The error of read(), or "" when it read.
std::string read_error(const std::string& trainable, const std::string& resources = "") {
  try {
    read(trainable, resources);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(TrainableKinds, OneLinePerKindWithItsHelpAndKeys) {
  EXPECT_EQ(trainable_kind_names(), (std::vector<std::string>{"synthetic", "command", "mlp"}));
  for (const TrainableKind& k : trainable_kinds()) {
    SCOPED_TRACE(k.name);
    EXPECT_GT(std::string(k.help).size(), 10u);
    EXPECT_EQ(std::string(k.help).find('\n'), std::string::npos);
    EXPECT_FALSE(k.keys().empty());
    // Each kind's keys are its own: a key of two kinds could not be refused as the other's.
    for (const TrainableKind& other : trainable_kinds()) {
      if (&other == &k) continue;
      for (const auto& key : k.keys()) EXPECT_EQ(std::count(other.keys().begin(), other.keys().end(), key), 0) << key;
    }
  }
}

TEST(TrainableKinds, TheUnknownKindErrorListsTheTable) {
  std::string valid;
  for (const auto& name : trainable_kind_names()) valid += (valid.empty() ? "\"" : ", \"") + name + "\"";
  const std::string msg = read_error("kind = \"magic\"\n");
  EXPECT_EQ(msg.rfind("/tmp/t/exp.toml:8: trainable.kind: unknown value \"magic\".", 0), 0u) << msg;
  EXPECT_CONTAINS(msg, "Valid values: " + valid);
  config::TrainableSpec spec = synthetic_spec("branin");
  spec.kind = "magic";
  try {
    make_trainable(spec);
    FAIL() << "built an unknown kind";
  } catch (const std::invalid_argument& e) {
    EXPECT_CONTAINS(e.what(), "valid: synthetic, command, mlp");
  }
}

TEST(TrainableKinds, TraitsFollowTheOptions) {
  const TrainableTraits synthetic = traits(read("kind = \"synthetic\"\nfunction = \"sphere\"\n").trainable);
  EXPECT_TRUE(synthetic.can_checkpoint);
  EXPECT_TRUE(synthetic.can_gang);
  EXPECT_FALSE(synthetic.uses_gpu || synthetic.can_evaluate || synthetic.writes_logs);
  EXPECT_EQ(synthetic.metrics, (std::vector<std::string>{"loss", "objective"}));

  // A command checkpoints only when it says it speaks the protocol.
  const std::string command = "kind = \"command\"\ncommand = [\"true\"]\nmetrics = [\"acc\"]\n";
  const TrainableTraits plain = traits(read(command).trainable);
  EXPECT_FALSE(plain.can_checkpoint || plain.uses_gpu || plain.can_evaluate);
  // A command runs as a gang of processes that do their own distributed training.
  EXPECT_TRUE(plain.writes_logs && plain.can_gang && plain.distributed_env);
  EXPECT_FALSE(synthetic.distributed_env);
  EXPECT_EQ(plain.metrics, (std::vector<std::string>{"loss", "acc"}));
  EXPECT_TRUE(traits(read(command + "checkpoint = true\n").trainable).can_checkpoint);
  // `ranktune eval` evaluates a command from its checkpoint, so only then; the traits say why not.
  EXPECT_TRUE(traits(read(command + "checkpoint = true\n").trainable).can_evaluate);
  EXPECT_CONTAINS(plain.no_evaluation, "has no checkpoint = true");

  // The mlp uses the worker's GPU unless told to stay on the CPU.
  EXPECT_TRUE(traits(read("kind = \"mlp\"\n").trainable).uses_gpu);
  EXPECT_TRUE(traits(read("kind = \"mlp\"\ndevice = \"cuda\"\n").trainable).uses_gpu);
  const TrainableTraits cpu = traits(read("kind = \"mlp\"\ndevice = \"cpu\"\n").trainable);
  EXPECT_FALSE(cpu.uses_gpu);
  EXPECT_TRUE(cpu.can_checkpoint && cpu.can_gang && cpu.can_evaluate);
}

TEST(TrainableKinds, EveryKindRunsAsAGang) {
  EXPECT_EQ(read_error("kind = \"synthetic\"\n", "[resources]\nranks_per_trial = 2\n"), "");
  EXPECT_EQ(read_error("kind = \"mlp\"\n", "[resources]\nranks_per_trial = 2\n"), "");
  // A command runs as one process per member (a DDP script), no longer refused.
  EXPECT_EQ(read_error("kind = \"command\"\ncommand = [\"true\"]\n", "[resources]\nranks_per_trial = 2\n"), "");
  for (const TrainableKind& k : trainable_kinds()) EXPECT_EQ(k.no_gang, nullptr) << k.name;
}

TEST(TrainableKinds, EachKindPrintsWhatItReadsBack) {
  // The resolved config reads back as the same options: each kind prints all of its keys.
  for (const std::string& trainable :
       {std::string("kind = \"synthetic\"\nfunction = \"sphere\"\nnoise = 0.5\nseconds_per_step = 0.25\n"),
        std::string("kind = \"command\"\ncommand = [\"./t.py\", \"-x\"]\nenv = { A = \"1\" }\nstep_timeout_s = 3\n"
                    "max_log_mb = 0\nkill_grace_s = 1.5\ncheckpoint = true\nmetrics = [\"acc\"]\n"),
        std::string("kind = \"mlp\"\ndata_dir = \"d\"\nval_fraction = 0.2\nbatches_per_step = 4\n"
                    "threads_per_worker = 2\ndevice = \"cpu\"\ntrain_samples = 100\nval_samples = 50\n")}) {
    SCOPED_TRACE(trainable);
    const config::ExperimentConfig a = read(trainable);
    const std::string text = config::render_config(a);
    config::ExperimentConfig b = config::parse_config(text, "/elsewhere/r.toml");
    read_trainable(b);
    EXPECT_EQ(b.trainable.kind, a.trainable.kind);
    EXPECT_EQ(b.trainable.metrics, a.trainable.metrics);
    EXPECT_EQ(config::render_config(b), text);
  }
}

}  // namespace
}  // namespace ranktune::train
