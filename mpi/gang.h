#pragma once
/// One member's side of a gang trial: the communicators of the trial's ranks, and the two
/// small agreements that keep the members in step around the training collectives.
///
/// A gang is created by its members alone (MPI_Comm_create_group, collective only over
/// them), so the driver and the other workers go on undisturbed. On GPUs, when every member
/// has a CUDA device and the build has NCCL, the training collective is NCCL (the leader's
/// ncclUniqueId travels over the gang's MPI communicator); else it is MPI. Everything is
/// freed on destruction, whatever happened.
///
/// Failures: every phase of a trial (setup, each step, each checkpoint) ends with agree(),
/// so one member's failure stops all of them at the same point and the leader reports it
/// for the gang. A member whose phase failed first raises an alarm(): the others may be
/// waiting for something that now never comes (a DDP program blocked on its dead peer), and
/// stop waiting when they see alarmed(); their failures are secondary, and agree() reports
/// the earliest primary one. A worker rank that dies *inside* a collective is not covered:
/// Open MPI then ends the whole job, and `ranktune run --resume` goes on.
/// Waits use non-blocking collectives and a sleeping backoff: a member waiting for its
/// leader's decision does not spin a core.

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "train/collective.h"
#include "train/mpi_collective.h"

namespace ranktune::mpi {

/// The communicator gangs are created from: a duplicate of `world`, so that forming a gang
/// can never match the driver's messages. Collective over `world`: the driver and every
/// worker call it once, after place().
boost::mpi::communicator gang_parent(const boost::mpi::communicator& world);

/// What a phase of a trial came to on one member.
struct Outcome {
  bool ok = true;
  std::string reason;    ///< why it failed
  std::string log_tail;  ///< the trainable's last output lines
  /// It failed because another member had failed (train::PeerFailure).
  bool secondary = false;
  /// When the failure was seen (seconds since the epoch; 0: unknown), so that the gang can
  /// name the member that failed first: a DDP program whose peer died fails too, later.
  double failed_at = 0;
};

/// Seconds since the epoch, for Outcome::failed_at (comparable across a gang's hosts as far
/// as their clocks agree).
double wall_seconds();

class Gang {
 public:
  /// Joins the gang of `members` (ranks of `parent`, leader first; this rank among them).
  /// `tag` tells apart gangs created at the same time. `device` is this rank's "cpu" or
  /// "cuda:N". Throws MpiError when the communicators cannot be built.
  Gang(MPI_Comm parent, std::span<const int> members, int tag, const std::string& device);
  Gang(const Gang&) = delete;
  Gang& operator=(const Gang&) = delete;

  /// The collective the trainable trains with.
  train::Collective& collective() { return nccl_ ? *nccl_ : static_cast<train::Collective&>(*mpi_); }
  int rank() const { return mpi_->rank(); }
  int size() const { return mpi_->size(); }
  bool leader() const { return rank() == 0; }

  /// Every member calls this with its outcome of the same phase. Returns the gang's: ok
  /// when every member's is; else the primary (not secondary) failure seen first (by
  /// failed_at; the lowest member on a tie), whose reason (prefixed with its gang and world
  /// rank) and log tail the leader gets in full. Takes in the alarms raised in the phase.
  Outcome agree(const Outcome& mine);

  /// Tells every other member, at once, that this member's phase failed: they may be
  /// waiting on a peer that is gone. At most once per phase; agree() ends the phase.
  void alarm();
  /// Whether another member raised an alarm in this phase. Never blocks.
  bool alarmed();

  /// Every member's `text` (at most 1024 bytes each), by gang rank: one collective over
  /// the gang, waited for with the sleeping backoff.
  std::vector<std::string> all_gather(const std::string& text);

  /// The leader's decision, as three integers (kind, lease, save), copied to every member.
  void share(std::int64_t (&decision)[3]);

 private:
  /// Waits for a non-blocking operation with a sleeping backoff.
  void wait(MPI_Request& request);

  // Members are destroyed in reverse order: the NCCL communicator before the MPI one it
  // was built over.
  std::unique_ptr<train::MpiCollective> mpi_;
  std::unique_ptr<train::Collective> nccl_;
  std::vector<int> members_;  ///< world ranks, by gang rank
  std::vector<MPI_Request> alarms_;  ///< this member's alarm sends of the current phase
  int alarm_payload_ = 1;            ///< what they send (it must outlive the sends)
};

}  // namespace ranktune::mpi
