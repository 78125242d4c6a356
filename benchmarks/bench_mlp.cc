// Training throughput of the mlp trainable (one trainable step = one epoch over the
// training split), and optionally the held-out test accuracy at the end. mlp_vs_torch.sh
// runs it beside PyTorch on the identical architecture.
//
// Usage: bench_mlp [--hidden 256-128] [--batch 128] [--threads 1] [--epochs 1]
//                  [--optimizer sgd] [--lr 0.05] [--activation relu] [--dropout 0]
//                  [--weight-decay 0] [--device cpu|cuda:0] [--val-fraction 0.1]
//                  [--seed S --trial T] [--test]
// --seed and --trial give the experiment seed and trial id, so that a trial of a search
// (its hyperparameters and iterations) is retrained bit for bit on the CPU, e.g. to measure
// the held-out test accuracy of the best trial with --test.
// Prints the BLAS in use, then one line per epoch:
//   epoch N samples_per_s X train_loss X val_loss X val_accuracy X
// and with --test: "test_loss X test_accuracy X".

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "train/mlp_trainable.h"

extern "C" char* openblas_get_config(void);
extern "C" char* openblas_get_corename(void);

using namespace ranktune;

int main(int argc, char** argv) {
  std::string hidden = "256-128", optimizer = "sgd", activation = "relu", device = "cpu";
  long batch = 128, epochs = 1;
  int threads = 1;
  double lr = -1, dropout = 0, val_fraction = 0.1, weight_decay = 0;
  long seed = 0, trial = 1;
  bool test = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_mlp: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--hidden") hidden = next();
    else if (a == "--batch") batch = std::atol(next());
    else if (a == "--threads") threads = std::atoi(next());
    else if (a == "--epochs") epochs = std::atol(next());
    else if (a == "--optimizer") optimizer = next();
    else if (a == "--lr") lr = std::atof(next());
    else if (a == "--activation") activation = next();
    else if (a == "--dropout") dropout = std::atof(next());
    else if (a == "--device") device = next();
    else if (a == "--val-fraction") val_fraction = std::atof(next());
    else if (a == "--weight-decay") weight_decay = std::atof(next());
    else if (a == "--seed") seed = std::atol(next());
    else if (a == "--trial") trial = std::atol(next());
    else if (a == "--test") test = true;
    else {
      std::fprintf(stderr, "bench_mlp: unknown option %s (see the header of bench_mlp.cc)\n", a.c_str());
      return 2;
    }
  }
  train::MlpOptions spec;
  spec.threads_per_worker = threads;
  spec.val_fraction = val_fraction;
  spec.device = device == "cpu" ? "cpu" : "auto";
  search::Config config = {{"hidden", hidden},          {"batch_size", std::int64_t{batch}},
                           {"optimizer", optimizer},    {"activation", activation},
                           {"dropout", dropout},        {"weight_decay", weight_decay}};
  if (lr > 0) config["lr"] = lr;
  train::Context ctx;
  ctx.device = device;
  ctx.seed = static_cast<std::uint64_t>(seed);
  ctx.trial_id = trial;
  try {
    train::MlpTrainable t(train::make_spec(spec));
    t.setup(config, ctx);
    std::printf("blas: OpenBLAS %s (core %s), threads %d; path %s%s%s; model %s, batch %ld\n", openblas_get_config(),
                openblas_get_corename(), threads, t.path().c_str(), t.path_note().empty() ? "" : ": ",
                t.path_note().c_str(), t.shape().describe().c_str(), batch);
    for (long e = 1; e <= epochs; ++e) {
      const auto m = t.step().metrics;
      std::printf("epoch %ld samples_per_s %.0f train_loss %.4f val_loss %.4f val_accuracy %.4f\n", e,
                  m.at("samples_per_s"), m.at("train_loss"), m.at("val_loss"), m.at("val_accuracy"));
      std::fflush(stdout);
    }
    if (test) {
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
