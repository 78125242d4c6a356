#pragma once
/// A worker's message pump: its side of the wire with rank 0. It receives the driver's
/// instructions (Start, Shutdown) and the decisions about the running trial, sends the
/// trial's replies (Placed, Result, Notice, LogTail, Ended), streams checkpoints both ways
/// within their ack window, and naps while it waits (mpi/backoff.h: idle ranks must not spin).
///
/// Why apart from the trial (mpi/trial_runner.h): the pump is about time and order on the
/// wire (how long to nap, which message may arrive when, acks taken in whenever they come),
/// the trial about the trainable's lifecycle (start, step, checkpoint, report) and the gang.
/// A trial only asks the pump for the next decision and hands it what to send; it never
/// sees a tag or a nap.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <boost/mpi/communicator.hpp>

#include "mpi/wire.h"
#include "train/checkpoint.h"

namespace ranktune::mpi {

class WorkerPump {
 public:
  explicit WorkerPump(const boost::mpi::communicator& world);

  /// Serves the driver until it says Shutdown: each Start goes to `run_trial`, which returns
  /// when the trial is over here. Then it collects the last checkpoint acks and says Bye.
  /// Returns the exit code (0). Throws MpiError on a message out of protocol.
  int serve(const std::function<void(const Start&)>& run_trial);

  /// The decision about `iteration` of `start`'s trial: within the lease (`until`), Continue
  /// unless a Stop is already waiting (the worker does not wait for it); at its end, the
  /// driver's answer, waited for.
  Decision next_decision(const Start& start, std::int64_t iteration, std::int64_t until);

  /// Receives the checkpoint that `start` announced, chunk by chunk, acknowledging each, and
  /// checks its size and CRC-32C. Call it before anything else of the trial (even if the
  /// trial is doomed), so that the stream always ends and the driver's window drains.
  /// Returns the bytes, or sets `problem` to why they cannot be restored.
  std::string receive_checkpoint(const Start& start, std::string& problem);
  /// Streams `bytes`, the checkpoint of `start`'s trial at `iteration`, to rank 0 in chunks
  /// (at most kCheckpointWindow unacknowledged: it naps for acks while the window is full).
  /// It returns once MPI has delivered the last chunk, without waiting for its ack: a small
  /// checkpoint costs no round trip.
  void stream_checkpoint(const Start& start, std::int64_t iteration, const train::CheckpointBytes& bytes);

  /// The trial's replies to the driver.
  void placed(const Placed& p);
  void result(const Result& r);
  void notice(const Notice& n);
  void log_tail(const LogTail& t);
  void ended(const Ended& e);

  int rank() const { return world_.rank(); }

 private:
  /// Waits for the driver's next message, taking in the checkpoint acks that arrive
  /// meanwhile, with naps up to `max_nap`.
  Incoming next_message(std::chrono::microseconds max_nap);
  /// The driver's next message if one is waiting (acks taken in), without blocking.
  std::optional<Incoming> poll_message();
  void take_ack(const Incoming& in);
  /// The decision about the running trial; anything else is a protocol error.
  Decision decision_for(const Start& start, const Incoming& in) const;

  const boost::mpi::communicator& world_;
  ChunkWindow checkpoints_;  ///< chunks of saves in flight to the driver
};

}  // namespace ranktune::mpi
