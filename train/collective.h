#pragma once
/// Collective communication among the ranks of a gang that trains one trial data-parallel.
/// Implementations: MpiCollective (host buffers, any MPI communicator) and NcclCollective
/// (device buffers, built when RANKTUNE_WITH_NCCL). Every member must call every operation in
/// the same order with the same sizes, as with MPI collectives. Errors throw
/// CollectiveError; a gang whose collective failed cannot continue.

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>

namespace ranktune::train {

class CollectiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Collective {
 public:
  virtual ~Collective() = default;
  /// This member's index in the gang, 0 being the leader.
  virtual int rank() const = 0;
  /// The number of members, >= 1.
  virtual int size() const = 0;
  /// Whether buffers are device (CUDA) pointers; else host memory.
  virtual bool device_buffers() const = 0;
  /// Replaces `data` on every member with the element-wise sum over the members.
  virtual void allreduce_sum(std::span<float> data) = 0;
  /// As allreduce_sum, in double (host buffers always): loss sums and counts, exactly.
  virtual void allreduce_sum(std::span<double> data) = 0;
  /// Copies `data` from member `root` to every member.
  virtual void broadcast(std::span<float> data, int root) = 0;
  /// "mpi" or "nccl".
  virtual std::string name() const = 0;

  /// The element-wise mean over the members: allreduce_sum, then a division by size().
  /// Host buffers only.
  void allreduce_average(std::span<float> data) {
    allreduce_sum(data);
    const float inv = 1.0f / static_cast<float>(size());
    for (float& x : data) x *= inv;
  }
};

}  // namespace ranktune::train
