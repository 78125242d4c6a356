// NcclCollective: the gang's allreduce and broadcast of device buffers over NCCL, with the
// host-side sums over MPI (train/nccl_collective.h).
#include "train/nccl_collective.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "train/mpi_collective.h"

namespace ranktune::train {
namespace {

void check_nccl(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess) throw CollectiveError(std::string(what) + " failed: " + ncclGetErrorString(rc));
}
void check_cuda(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw CollectiveError(std::string(what) + " failed: " + cudaGetErrorString(rc));
}

}  // namespace

struct NcclCollective::Impl {
  MpiCollective host;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  bool broken = false;

  Impl(MPI_Comm gang, int device) : host(gang) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    // The leader's failure travels with the id, so the members fail too instead of waiting.
    struct {
      ncclUniqueId id;
      int result;
    } msg{};
    if (host.rank() == 0) msg.result = static_cast<int>(ncclGetUniqueId(&msg.id));
    const int rc = MPI_Bcast(&msg, sizeof msg, MPI_BYTE, 0, host.comm());
    if (rc != MPI_SUCCESS) throw CollectiveError("MPI_Bcast of the ncclUniqueId failed");
    check_nccl(static_cast<ncclResult_t>(msg.result), "ncclGetUniqueId (on the gang leader)");
    const ncclUniqueId& id = msg.id;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    const ncclResult_t init = ncclCommInitRank(&comm, host.size(), id, host.rank());
    if (init != ncclSuccess) {
      cudaStreamDestroy(stream);
      check_nccl(init, "ncclCommInitRank");
    }
  }
  ~Impl() {
    if (comm) broken ? ncclCommAbort(comm) : ncclCommDestroy(comm);
    if (stream) cudaStreamDestroy(stream);
  }
  void run(ncclResult_t rc, const char* what) {
    if (rc == ncclSuccess) {
      const cudaError_t s = cudaStreamSynchronize(stream);
      if (s == cudaSuccess) return;
      broken = true;
      check_cuda(s, what);
    }
    broken = true;
    check_nccl(rc, what);
  }
};

NcclCollective::NcclCollective(MPI_Comm gang, int device) : impl_(std::make_unique<Impl>(gang, device)) {}
NcclCollective::~NcclCollective() = default;

int NcclCollective::rank() const { return impl_->host.rank(); }
int NcclCollective::size() const { return impl_->host.size(); }

void NcclCollective::allreduce_sum(std::span<float> data) {
  impl_->run(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, impl_->comm, impl_->stream),
             "ncclAllReduce");
}

void NcclCollective::allreduce_sum(std::span<double> data) { impl_->host.allreduce_sum(data); }

void NcclCollective::broadcast(std::span<float> data, int root) {
  impl_->run(ncclBroadcast(data.data(), data.data(), data.size(), ncclFloat, root, impl_->comm, impl_->stream),
             "ncclBroadcast");
}

}  // namespace ranktune::train
