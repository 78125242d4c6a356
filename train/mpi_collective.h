#pragma once
/// The gang collective over MPI, for host buffers (the CPU path, and the GPU path without
/// NCCL). It owns a duplicate of the communicator it is given, so its traffic never mixes
/// with the caller's, and frees it on destruction.

#include <mpi.h>

#include <memory>
#include <span>
#include <string>

#include "train/collective.h"

namespace ranktune::train {

class MpiCollective : public Collective {
 public:
  /// Duplicates `comm` (collective over its members). Throws CollectiveError.
  explicit MpiCollective(MPI_Comm comm);
  ~MpiCollective() override;
  MpiCollective(const MpiCollective&) = delete;
  MpiCollective& operator=(const MpiCollective&) = delete;

  /// A gang of the `members` ranks of `parent` (ranks of parent, leader first), created with
  /// MPI_Comm_create_group: only the members call it, so the other ranks go on undisturbed.
  /// `tag` must be unique among the gangs being created at the same time.
  static std::unique_ptr<MpiCollective> create_group(MPI_Comm parent, std::span<const int> members, int tag);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool device_buffers() const override { return false; }
  void allreduce_sum(std::span<float> data) override;
  void allreduce_sum(std::span<double> data) override;
  void broadcast(std::span<float> data, int root) override;
  std::string name() const override { return "mpi"; }
  MPI_Comm comm() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

}  // namespace ranktune::train
