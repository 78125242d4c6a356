#pragma once
/// The gang collective over NCCL, for device buffers (the GPU path). Built when
/// RANKTUNE_WITH_NCCL. The leader's ncclUniqueId is broadcast over the gang's MPI
/// communicator, which the collective also keeps (duplicated) for the small host-side sums.
/// The NCCL communicator and the stream are freed on destruction, or aborted if an operation
/// failed.

#include <mpi.h>

#include <memory>
#include <span>
#include <string>

#include "train/collective.h"

namespace ranktune::train {

class NcclCollective : public Collective {
 public:
  /// Collective over the members of `gang`; each member passes its own CUDA device.
  /// Throws CollectiveError.
  NcclCollective(MPI_Comm gang, int device);
  ~NcclCollective() override;
  NcclCollective(const NcclCollective&) = delete;
  NcclCollective& operator=(const NcclCollective&) = delete;

  int rank() const override;
  int size() const override;
  bool device_buffers() const override { return true; }
  /// `data` is device memory; returns when the sum is complete.
  void allreduce_sum(std::span<float> data) override;
  /// Host memory, over MPI (loss sums and counts).
  void allreduce_sum(std::span<double> data) override;
  /// `data` is device memory.
  void broadcast(std::span<float> data, int root) override;
  std::string name() const override { return "nccl"; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ranktune::train
