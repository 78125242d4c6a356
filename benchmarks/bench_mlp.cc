// Training throughput of the mlp trainable (one trainable step = one epoch over the
// training split), and optionally the held-out test accuracy at the end. mlp_vs_torch.sh
// runs it beside PyTorch on the identical architecture; quality/mlp_side.py drives it from
// Optuna (--serve) for the search comparison at equal wall time.
//
// Usage: bench_mlp [--hidden 256-128] [--batch 128] [--threads 1] [--epochs 1]
//                  [--optimizer sgd] [--lr 0.05] [--activation relu] [--dropout 0]
//                  [--weight-decay 0] [--device cpu|cuda:0] [--val-fraction 0.1]
//                  [--train-samples 0] [--val-samples 0] [--seed S --trial T] [--test]
//        bench_mlp --serve [the same options, as every trial's defaults]
// --seed and --trial give the experiment seed and trial id, so that a trial of a search
// (its hyperparameters and iterations) is retrained bit for bit on the CPU, e.g. to measure
// the held-out test accuracy of the best trial with --test. --train-samples and
// --val-samples are the trainable's train_samples and val_samples (0: the whole split).
// Prints the BLAS in use, then one line per epoch:
//   epoch N samples_per_s X train_loss X val_loss X val_accuracy X
// and with --test: "test_loss X test_accuracy X".
//
// --serve: one trial per line of stdin, each line options as above (--trial, --epochs and
// the hyperparameters; those not given keep the command line's), so that a driver pays the
// data loading once per process, as a ranktune worker does. For each trial it prints the
// epoch lines (flushed), and after each epoch but the last reads one line: "stop" ends the
// trial (pruned), anything else trains the next epoch. A trial ends with "end"; a trial
// that cannot start prints "error MESSAGE" instead. End of stdin ends the process.

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "train/mlp_trainable.h"

extern "C" char* openblas_get_config(void);
extern "C" char* openblas_get_corename(void);

using namespace ranktune;

namespace {

struct Options {
  std::string hidden = "256-128", optimizer = "sgd", activation = "relu", device = "cpu";
  long batch = 128, epochs = 1, train_samples = 0, val_samples = 0;
  int threads = 1;
  double lr = -1, dropout = 0, val_fraction = 0.1, weight_decay = 0;
  long seed = 0, trial = 1;
  bool test = false, serve = false;
};

/// Reads options into `o`; returns "" or what was wrong.
std::string parse(const std::vector<std::string>& args, Options& o) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--test") { o.test = true; continue; }
    if (a == "--serve") { o.serve = true; continue; }
    if (i + 1 >= args.size()) return a + " needs a value";
    const std::string v = args[++i];
    if (a == "--hidden") o.hidden = v;
    else if (a == "--batch") o.batch = std::atol(v.c_str());
    else if (a == "--threads") o.threads = std::atoi(v.c_str());
    else if (a == "--epochs") o.epochs = std::atol(v.c_str());
    else if (a == "--optimizer") o.optimizer = v;
    else if (a == "--lr") o.lr = std::atof(v.c_str());
    else if (a == "--activation") o.activation = v;
    else if (a == "--dropout") o.dropout = std::atof(v.c_str());
    else if (a == "--device") o.device = v;
    else if (a == "--val-fraction") o.val_fraction = std::atof(v.c_str());
    else if (a == "--weight-decay") o.weight_decay = std::atof(v.c_str());
    else if (a == "--train-samples") o.train_samples = std::atol(v.c_str());
    else if (a == "--val-samples") o.val_samples = std::atol(v.c_str());
    else if (a == "--seed") o.seed = std::atol(v.c_str());
    else if (a == "--trial") o.trial = std::atol(v.c_str());
    else return "unknown option " + a + " (see the header of bench_mlp.cc)";
  }
  return "";
}

train::MlpTrainable make_trainable(const Options& o) {
  train::MlpOptions spec;
  spec.threads_per_worker = o.threads;
  spec.val_fraction = o.val_fraction;
  spec.train_samples = o.train_samples;
  spec.val_samples = o.val_samples;
  spec.device = o.device == "cpu" ? "cpu" : "auto";
  return train::MlpTrainable(train::make_spec(spec));
}

void setup(train::MlpTrainable& t, const Options& o) {
  search::Config config = {{"hidden", o.hidden},          {"batch_size", std::int64_t{o.batch}},
                           {"optimizer", o.optimizer},    {"activation", o.activation},
                           {"dropout", o.dropout},        {"weight_decay", o.weight_decay}};
  if (o.lr > 0) config["lr"] = o.lr;
  train::Context ctx;
  ctx.device = o.device;
  ctx.seed = static_cast<std::uint64_t>(o.seed);
  ctx.trial_id = o.trial;
  t.setup(config, ctx);
}

template <class Metrics>
void print_epoch(long e, const Metrics& m) {
  std::printf("epoch %ld samples_per_s %.0f train_loss %.4f val_loss %.4f val_accuracy %.6f\n", e, m.at("samples_per_s"),
              m.at("train_loss"), m.at("val_loss"), m.at("val_accuracy"));
  std::fflush(stdout);
}

int serve(const Options& defaults) {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::vector<std::string> args;
    for (std::string w; words >> w;) args.push_back(w);
    if (args.empty()) continue;
    Options o = defaults;
    o.test = false;
    if (const std::string bad = parse(args, o); !bad.empty()) {
      std::printf("error %s\n", bad.c_str());
      std::fflush(stdout);
      continue;
    }
    try {
      train::MlpTrainable t = make_trainable(o);
      setup(t, o);
      for (long e = 1; e <= o.epochs; ++e) {
        const auto m = t.step().metrics;
        print_epoch(e, m);
        if (e < o.epochs && (!std::getline(std::cin, line) || line == "stop")) break;
      }
      std::printf("end\n");
    } catch (const std::exception& e) {
      std::printf("error %s\n", e.what());
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const std::string bad = parse(std::vector<std::string>(argv + 1, argv + argc), o); !bad.empty()) {
    std::fprintf(stderr, "bench_mlp: %s\n", bad.c_str());
    return 2;
  }
  if (o.serve) return serve(o);
  try {
    train::MlpTrainable t = make_trainable(o);
    setup(t, o);
    std::printf("blas: OpenBLAS %s (core %s), threads %d; path %s%s%s; model %s, batch %ld\n", openblas_get_config(),
                openblas_get_corename(), o.threads, t.path().c_str(), t.path_note().empty() ? "" : ": ",
                t.path_note().c_str(), t.shape().describe().c_str(), o.batch);
    for (long e = 1; e <= o.epochs; ++e) {
      const auto m = t.step().metrics;
      print_epoch(e, m);
    }
    if (o.test) {
      const auto held_out = t.evaluate_held_out();
      std::printf("test_loss %.4f test_accuracy %.4f\n", held_out.metrics.at("test_loss"),
                  held_out.metrics.at("test_accuracy"));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_mlp: %s\n", e.what());
    return 1;
  }
  return 0;
}
