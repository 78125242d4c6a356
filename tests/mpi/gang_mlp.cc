// A real-MPI check of data-parallel gang training (run by gang_mlp.sh under mpirun -np 3,
// and across hosts by tests/multinode/gangs.sh with -np 5): ranks 1..N-1 form a gang with
// MPI_Comm_create_group (rank 0 is not involved), train the mlp trainable for k steps, and
// must end with identical weights; rank 0 trains the same trial alone with the same global
// batch size, and the gang must match it within a tolerance (the gradient is summed in
// another order, nothing else differs).
//   gang_mlp [steps]    prints "ok: ..." on rank 0 and exits 0, else exits 1

#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "train/mlp_trainable.h"
#include "train/mpi_collective.h"

using namespace ranktune;

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  return 1;
}

int run(int steps) {
  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (world_size < 3) return fail("run with mpirun -np 3 or more (a gang of 2 or more, and rank 0 alone)");
  const int members_n = world_size - 1;

  train::MlpOptions spec;
  spec.train_samples = 512;
  spec.val_samples = 256;
  spec.batches_per_step = 6;
  // Dropout and an odd batch: the shards are unequal (16 and 17 rows) and masks are keyed
  // by the row's place in the global batch.
  const search::Config config = {{"hidden", std::string("48-24")}, {"batch_size", std::int64_t{33}},
                                 {"dropout", 0.25}, {"optimizer", std::string("adam")}, {"lr", 0.003}};
  train::Context ctx;
  ctx.seed = 11;
  ctx.trial_id = 4;

  std::unique_ptr<train::MpiCollective> gang;
  if (world_rank > 0) {
    std::vector<int> members;
    for (int r = 1; r < world_size; ++r) members.push_back(r);
    gang = train::MpiCollective::create_group(MPI_COMM_WORLD, members, /*tag=*/77);
    if (gang->size() != members_n || gang->rank() != world_rank - 1) return fail("gang rank/size");
    ctx.collective = gang.get();
    ctx.rank = world_rank;
  }
  train::MlpTrainable t(train::make_spec(spec));
  t.setup(config, ctx);
  search::Metrics last;
  for (int i = 0; i < steps; ++i) last = t.step().metrics;
  std::vector<float> w = t.parameters();
  const int n = static_cast<int>(w.size());

  // Everyone's weights and val_loss to rank 0.
  const auto size = static_cast<std::size_t>(world_size);
  std::vector<float> all(world_rank == 0 ? size * w.size() : 0);
  MPI_Gather(w.data(), n, MPI_FLOAT, all.data(), n, MPI_FLOAT, 0, MPI_COMM_WORLD);
  std::vector<double> val(size), ar(size);
  double mine = last.at("val_loss");
  MPI_Gather(&mine, 1, MPI_DOUBLE, val.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  double allreduce_s = t.last_allreduce_s();
  MPI_Gather(&allreduce_s, 1, MPI_DOUBLE, ar.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (world_rank != 0) return 0;

  const float* alone = all.data();
  const float* g1 = all.data() + w.size();
  for (int m = 2; m <= members_n; ++m) {
    const float* gm = all.data() + static_cast<std::size_t>(m) * w.size();
    if (std::memcmp(g1, gm, w.size() * sizeof(float)) != 0)
      return fail("gang members 1 and " + std::to_string(m) + " have different weights after " + std::to_string(steps) + " steps");
    if (val[1] != val[static_cast<std::size_t>(m)]) return fail("gang members report different val_loss");
    if (!(ar[static_cast<std::size_t>(m)] > 0)) return fail("allreduce time not measured on gang member " + std::to_string(m));
  }
  if (!(ar[1] > 0 && ar[0] == 0)) return fail("allreduce time not measured in the gang (or measured alone)");
  double max_diff = 0, max_w = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::abs(g1[i] - alone[i])));
    max_w = std::max(max_w, static_cast<double>(std::abs(alone[i])));
  }
  bool same = std::memcmp(g1, alone, w.size() * sizeof(float)) == 0;
  // Tolerance: after a few Adam steps rounding differences stay far below 1e-3 of the
  // largest weight; a wrong shard, mask or scaling moves weights by ~lr = 3e-3 per step.
  const double tol = 1e-4;
  std::printf("gang of %d vs 1 rank after %d steps: max |dw| = %.3g (max |w| = %.3g, tol %.1g)%s; val_loss %.6f vs %.6f\n",
              members_n, steps, max_diff, max_w, tol, same ? " (bit-identical)" : "", val[1], val[0]);
  if (max_diff > tol) return fail("the gang does not match one rank with the same batch");
  if (std::abs(val[1] - val[0]) > 1e-4 * std::abs(val[0])) return fail("val_loss of gang and single rank differ");
  std::printf("ok: weights identical on all %d gang ranks; gang matches a single rank\n", members_n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 1;
  try {
    rc = run(argc > 1 ? std::atoi(argv[1]) : 4);
  } catch (const std::exception& e) {
    rc = fail(e.what());
  }
  // A failing rank must not leave the others waiting in a collective.
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
