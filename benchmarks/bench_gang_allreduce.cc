// Gang allreduce overhead: the gradient allreduce inside data-parallel mlp training (one
// batch per step, timed by the trainable) against a bare MPI_Allreduce of the same bytes over
// the same ranks, in the same run. Run under mpirun with 2 or more ranks; all ranks form
// one gang (MPI_Comm_create_group). The in-training time includes waiting for the slower
// member; a second training pass puts a barrier before each gradient allreduce (through a
// decorating collective) to split that wait from the transfer itself.
//
// Usage: mpirun -np 2 bench_gang_allreduce [--batches 300] [--hidden 256-128] [--batch 128]
// Prints medians in microseconds and their ratio on rank 0.

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "train/mlp_trainable.h"
#include "train/mpi_collective.h"

using namespace ranktune;

namespace {

/// Forwards to an MpiCollective; before each float allreduce (the gradient) it waits at a
/// barrier and records the wait and the allreduce separately.
class SplitTiming : public train::Collective {
 public:
  explicit SplitTiming(train::MpiCollective& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  bool device_buffers() const override { return false; }
  void allreduce_sum(std::span<float> data) override {
    const double t0 = MPI_Wtime();
    MPI_Barrier(inner_.comm());
    const double t1 = MPI_Wtime();
    inner_.allreduce_sum(data);
    wait.push_back(t1 - t0);
    transfer.push_back(MPI_Wtime() - t1);
  }
  void allreduce_sum(std::span<double> data) override { inner_.allreduce_sum(data); }
  void broadcast(std::span<float> data, int root) override { inner_.broadcast(data, root); }
  std::string name() const override { return "mpi+timing"; }
  std::vector<double> wait, transfer;

 private:
  train::MpiCollective& inner_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long batches = 300, batch = 128;
  std::string hidden = "256-128";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--batches") batches = std::atol(argv[i + 1]);
    else if (a == "--hidden") hidden = argv[i + 1];
    else if (a == "--batch") batch = std::atol(argv[i + 1]);
  }
  int rc = 0;
  try {
    std::vector<int> members(size);
    for (int r = 0; r < size; ++r) members[r] = r;
    auto gang = train::MpiCollective::create_group(MPI_COMM_WORLD, members, 1);
    train::MlpOptions spec;
    spec.batches_per_step = 1;
    spec.val_samples = 64;
    train::Context ctx;
    ctx.collective = gang.get();
    train::MlpTrainable t(train::make_spec(spec));
    t.setup({{"hidden", hidden}, {"batch_size", std::int64_t{batch}}}, ctx);
    const std::size_t floats = t.shape().param_count();

    std::vector<double> in_training;
    for (long b = 0; b < batches; ++b) {
      t.step();
      if (b >= 10) in_training.push_back(t.last_allreduce_s());  // after warm-up
    }
    std::vector<float> buf(floats, 1.0f);
    std::vector<double> bare;
    MPI_Barrier(MPI_COMM_WORLD);
    for (long b = 0; b < batches; ++b) {
      const double t0 = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(floats), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      if (b >= 10) bare.push_back(MPI_Wtime() - t0);
    }
    SplitTiming split(*gang);
    ctx.collective = &split;
    train::MlpTrainable t2(train::make_spec(spec));
    t2.setup({{"hidden", hidden}, {"batch_size", std::int64_t{batch}}}, ctx);
    for (long b = 0; b < batches; ++b) t2.step();
    split.wait.erase(split.wait.begin(), split.wait.begin() + std::min<long>(10, split.wait.size()));
    split.transfer.erase(split.transfer.begin(), split.transfer.begin() + std::min<long>(10, split.transfer.size()));
    const double a = median(in_training) * 1e6, m = median(bare) * 1e6;
    const double w = median(split.wait) * 1e6, x = median(split.transfer) * 1e6;
    if (rank == 0)
      std::printf("ranks %d, gradient %zu floats (%.0f KB), %ld batches of %ld: allreduce in training median %.0f us; "
                  "bare MPI_Allreduce median %.0f us; ratio %.2fx. With a barrier first: wait %.0f us + allreduce "
                  "%.0f us (ratio %.2fx)\n",
                  size, floats, floats * 4 / 1024.0, batches, batch, a, m, m > 0 ? a / m : 0, w, x,
                  m > 0 ? x / m : 0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gang_allreduce: rank %d: %s\n", rank, e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
