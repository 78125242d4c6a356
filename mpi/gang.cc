// Gang: a gang trial's communicators (MPI, and NCCL when every member has a GPU) and the
// agreements that keep its members in step (mpi/gang.h: the design and its failures).
#include "mpi/gang.h"

#include <climits>
#include <vector>

#include "ranktune/config.h"
#include "mpi/backoff.h"
#include "mpi/errors.h"

#if RANKTUNE_WITH_NCCL
#include "train/nccl_collective.h"
#endif

namespace ranktune::mpi {
namespace {

using namespace std::chrono_literals;

constexpr int kReasonTag = 1;  // on the gang's own communicator: nothing else uses tags there

// The CUDA device of "cuda:N", or -1 for anything else.
int cuda_index(const std::string& device) {
  if (device.rfind("cuda:", 0) != 0) return -1;
  try {
    return std::stoi(device.substr(5));
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

boost::mpi::communicator gang_parent(const boost::mpi::communicator& world) {
  return boost::mpi::communicator(world, boost::mpi::comm_duplicate);
}

Gang::Gang(MPI_Comm parent, std::span<const int> members, int tag, const std::string& device)
    : members_(members.begin(), members.end()) {
  try {
    mpi_ = train::MpiCollective::create_group(parent, members, tag);
  } catch (const train::CollectiveError& e) {
    throw MpiError(std::string("cannot form the trial's gang: ") + e.what());
  }
  // NCCL only if every member can: one CPU member makes the whole gang train over MPI.
  int all_gpu = cuda_index(device) >= 0 && RANKTUNE_WITH_NCCL ? 1 : 0;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, &all_gpu, 1, MPI_INT, MPI_MIN, mpi_->comm(), &request));
  wait(request);
#if RANKTUNE_WITH_NCCL
  if (all_gpu == 1) {
    try {
      nccl_ = std::make_unique<train::NcclCollective>(mpi_->comm(), cuda_index(device));
    } catch (const train::CollectiveError& e) {
      throw MpiError(std::string("cannot form the trial's NCCL communicator: ") + e.what());
    }
  }
#endif
}

void Gang::wait(MPI_Request& request) {
  Backoff backoff(5us, 200us);
  for (;;) {
    int done = 0;
    MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    backoff.wait();
  }
}

Outcome Gang::agree(const Outcome& mine) {
  // The lowest failed member's gang rank, or INT_MAX when all went well.
  int failed = mine.ok ? INT_MAX : rank();
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MIN, mpi_->comm(), &request));
  wait(request);
  if (failed == INT_MAX) return {};
  if (failed == 0) return mine;  // the leader's own failure, or the followers' copy of "failed"

  Outcome gang{false, {}, {}};
  if (rank() == failed) {
    const std::string text = mine.reason + '\n' + mine.log_tail;
    MPI_CHECK(MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, kReasonTag, mpi_->comm()));
    return gang;
  }
  if (!leader()) return gang;
  MPI_Status status;
  MPI_CHECK(MPI_Probe(failed, kReasonTag, mpi_->comm(), &status));
  int count = 0;
  MPI_CHECK(MPI_Get_count(&status, MPI_CHAR, &count));
  std::string text(static_cast<std::size_t>(count), '\0');
  MPI_CHECK(MPI_Recv(text.data(), count, MPI_CHAR, failed, kReasonTag, mpi_->comm(), MPI_STATUS_IGNORE));
  const auto cut = text.find('\n');
  gang.reason = "gang member " + std::to_string(failed) + " (rank " + std::to_string(members_[static_cast<std::size_t>(failed)]) +
                ") failed: " + text.substr(0, cut);
  if (cut != std::string::npos) gang.log_tail = text.substr(cut + 1);
  return gang;
}

void Gang::share(std::int64_t (&decision)[3]) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_CHECK(MPI_Ibcast(decision, 3, MPI_INT64_T, 0, mpi_->comm(), &request));
  wait(request);
}

}  // namespace ranktune::mpi
