// Gang: a gang trial's communicators (MPI, and NCCL when every member has a GPU) and the
// agreements that keep its members in step (mpi/gang.h: the design and its failures).
#include "mpi/gang.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "mpi/backoff.h"
#include "mpi/errors.h"
#include "train/gpu_runtime.h"

namespace ranktune::mpi {
namespace {

using namespace std::chrono_literals;

// On the gang's own communicator: nothing else uses tags there.
constexpr int kReasonTag = 1;
constexpr int kAlarmTag = 2;
constexpr int kGatherBytes = 1024;  // all_gather's fixed slot per member

// What each member tells the others in agree(): its state, and when it failed.
constexpr double kOk = 0, kFailed = 1, kSecondary = 2;
constexpr int kAlarmSent = 4;  // added to the state: the others have an alarm to take in

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

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

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
  // NCCL only if every member can: one CPU member makes the whole gang train over MPI. A
  // member on a GPU has the plugin loaded already (placement bound its device through it).
  const train::gpu::Api* gpu = cuda_index(device) >= 0 ? train::gpu::runtime() : nullptr;
  int all_gpu = gpu != nullptr && gpu->make_nccl_collective != nullptr ? 1 : 0;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, &all_gpu, 1, MPI_INT, MPI_MIN, mpi_->comm(), &request));
  wait(request);
  if (all_gpu == 1) {
    try {
      nccl_ = gpu->make_nccl_collective(mpi_->comm(), cuda_index(device));
    } catch (const train::CollectiveError& e) {
      throw MpiError(std::string("cannot form the trial's NCCL communicator: ") + e.what());
    }
  }
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

void Gang::alarm() {
  if (!alarms_.empty()) return;
  for (int r = 0; r < size(); ++r) {
    if (r == rank()) continue;
    alarms_.emplace_back(MPI_REQUEST_NULL);
    MPI_CHECK(MPI_Isend(&alarm_payload_, 1, MPI_INT, r, kAlarmTag, mpi_->comm(), &alarms_.back()));
  }
}

bool Gang::alarmed() {
  int flag = 0;
  MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, kAlarmTag, mpi_->comm(), &flag, MPI_STATUS_IGNORE));
  return flag != 0;
}

Outcome Gang::agree(const Outcome& mine) {
  // Every member's state and failure time: the gang names the first primary failure.
  const bool sent = !alarms_.empty();
  double me[2] = {(mine.ok ? kOk : mine.secondary ? kSecondary : kFailed) + (sent ? kAlarmSent : 0),
                  mine.ok ? 0.0 : mine.failed_at};
  std::vector<double> all(2 * static_cast<std::size_t>(size()));
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_CHECK(MPI_Iallgather(me, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, mpi_->comm(), &request));
  wait(request);
  // The phase is over: take in the alarms the others raised, and finish our own sends.
  for (int r = 0; r < size(); ++r) {
    if (r == rank() || all[2 * r] < kAlarmSent) continue;
    int payload = 0;
    MPI_CHECK(MPI_Recv(&payload, 1, MPI_INT, r, kAlarmTag, mpi_->comm(), MPI_STATUS_IGNORE));
  }
  for (MPI_Request& a : alarms_) wait(a);
  alarms_.clear();

  int failed = -1;  // the member whose failure the gang reports
  for (int pass = 0; pass < 2 && failed < 0; ++pass) {
    const double want = pass == 0 ? kFailed : kSecondary;
    for (int r = 0; r < size(); ++r) {
      const double state = all[2 * r] >= kAlarmSent ? all[2 * r] - kAlarmSent : all[2 * r];
      if (state != want) continue;
      if (failed < 0 || all[2 * r + 1] < all[2 * failed + 1]) failed = r;
    }
  }
  if (failed < 0) return {};
  if (failed == 0) return rank() == 0 ? mine : Outcome{false, {}, {}};

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

std::vector<std::string> Gang::all_gather(const std::string& text) {
  std::vector<char> mine(kGatherBytes, '\0');
  std::memcpy(mine.data(), text.data(), std::min<std::size_t>(text.size(), kGatherBytes - 1));
  std::vector<char> all(static_cast<std::size_t>(kGatherBytes) * static_cast<std::size_t>(size()));
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_CHECK(MPI_Iallgather(mine.data(), kGatherBytes, MPI_CHAR, all.data(), kGatherBytes, MPI_CHAR, mpi_->comm(), &request));
  wait(request);
  std::vector<std::string> out;
  for (int r = 0; r < size(); ++r) out.emplace_back(all.data() + static_cast<std::size_t>(r) * kGatherBytes);
  return out;
}

void Gang::share(std::int64_t (&decision)[3]) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_CHECK(MPI_Ibcast(decision, 3, MPI_INT64_T, 0, mpi_->comm(), &request));
  wait(request);
}

}  // namespace ranktune::mpi
