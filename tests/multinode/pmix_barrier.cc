// Probe of the PMIx barrier that Open MPI's MPI_Init and MPI_Finalize rely on (run by
// pmix_barrier.sh under `srun --mpi=pmix` over several nodes). Every rank on the last node
// (SLURM_NODEID == SLURM_NNODES - 1) sleeps DELAY seconds before MPI_Finalize; every rank
// prints how long its MPI_Finalize took. Open MPI 4.1's MPI_Finalize, like the end of its
// MPI_Init, is a zero-byte PMIx fence and nothing else, so with a barrier that spans the
// nodes every rank waits for the sleepers; with a barrier that each node completes alone
// (Slurm 22.05's mpi/pmix tree fence, docs/guide/multinode.md) the others return at once.
// That second case is what lets a rank leave MPI_Init and send to a peer on another node
// that has not yet registered its message handlers, which kills the peer with SIGSEGV.
//   pmix_barrier DELAY      prints "rank R node N finalize S" per rank; exits 0
//   pmix_barrier exchange   every rank sends to every other as soon as MPI_Init returns (the
//                           launch that crashes about once in 100 without a barrier); exits 0
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>
#include <vector>

namespace {
int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}
}  // namespace

int main(int argc, char** argv) {
  const bool exchange = argc > 1 && std::string_view(argv[1]) == "exchange";
  const double delay = argc > 1 && !exchange ? std::atof(argv[1]) : 2.0;
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (exchange) {
    std::vector<int> got(size);
    std::vector<MPI_Request> requests;
    for (int peer = 0; peer < size; ++peer) {
      if (peer == rank) continue;
      requests.emplace_back();
      MPI_Isend(&rank, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, &requests.back());
      requests.emplace_back();
      MPI_Irecv(&got[peer], 1, MPI_INT, peer, 0, MPI_COMM_WORLD, &requests.back());
    }
    MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
    MPI_Finalize();
    return 0;
  }
  const int node = env_int("SLURM_NODEID"), nodes = env_int("SLURM_NNODES");
  if (node < 0 || nodes < 2) {
    std::fprintf(stderr, "pmix_barrier: run me under srun on 2 or more nodes (SLURM_NODEID=%d SLURM_NNODES=%d)\n", node, nodes);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (node == nodes - 1) std::this_thread::sleep_for(std::chrono::duration<double>(delay));
  const auto start = std::chrono::steady_clock::now();
  MPI_Finalize();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("rank %d node %d finalize %.3f\n", rank, node, took);
  return 0;
}
