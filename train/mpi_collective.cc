// MpiCollective: the gang's allreduce and broadcast over a duplicated MPI communicator,
// and gangs made with MPI_Comm_create_group (train/mpi_collective.h).
#include "train/mpi_collective.h"

#include <climits>
#include <vector>

namespace ranktune::train {
namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw CollectiveError(std::string(what) + " failed: " + std::string(text, len));
}

// MPI counts are ints; the MLP's gradient is far below that, but a bigger model must fail
// loudly rather than wrap.
int count_of(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX)) throw CollectiveError("collective buffer of " + std::to_string(n) + " elements is too large for MPI");
  return static_cast<int>(n);
}

}  // namespace

MpiCollective::MpiCollective(MPI_Comm comm) {
  check(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  // Errors come back as codes, so a broken gang throws instead of aborting the whole job.
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiCollective::~MpiCollective() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::unique_ptr<MpiCollective> MpiCollective::create_group(MPI_Comm parent, std::span<const int> members, int tag) {
  MPI_Group parent_group = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
  check(MPI_Comm_group(parent, &parent_group), "MPI_Comm_group");
  std::vector<int> ranks(members.begin(), members.end());
  int rc = MPI_Group_incl(parent_group, count_of(ranks.size()), ranks.data(), &group);
  MPI_Group_free(&parent_group);
  check(rc, "MPI_Group_incl");
  MPI_Comm comm = MPI_COMM_NULL;
  rc = MPI_Comm_create_group(parent, group, tag, &comm);
  MPI_Group_free(&group);
  check(rc, "MPI_Comm_create_group");
  if (comm == MPI_COMM_NULL) throw CollectiveError("MPI_Comm_create_group: this rank is not a member of the gang");
  // The collective holds its own duplicate; the temporary goes now, whatever happens.
  struct Free {
    MPI_Comm& c;
    ~Free() { MPI_Comm_free(&c); }
  } free_comm{comm};
  return std::make_unique<MpiCollective>(comm);
}

void MpiCollective::allreduce_sum(std::span<float> data) {
  check(MPI_Allreduce(MPI_IN_PLACE, data.data(), count_of(data.size()), MPI_FLOAT, MPI_SUM, comm_), "MPI_Allreduce");
}

void MpiCollective::allreduce_sum(std::span<double> data) {
  check(MPI_Allreduce(MPI_IN_PLACE, data.data(), count_of(data.size()), MPI_DOUBLE, MPI_SUM, comm_), "MPI_Allreduce");
}

void MpiCollective::broadcast(std::span<float> data, int root) {
  check(MPI_Bcast(data.data(), count_of(data.size()), MPI_FLOAT, root, comm_), "MPI_Bcast");
}

}  // namespace ranktune::train
