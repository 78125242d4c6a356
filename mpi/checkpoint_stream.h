#pragma once
/// Rank 0's checkpoint streams: the saves that workers stream in chunk by chunk, written
/// straight into the results file and acknowledged, and the restores streamed out to
/// workers from the file within the window of kCheckpointWindow chunks (protocol in
/// mpi/wire.h). Written against ChunkTransport, so a test drives it without MPI.

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "io/store.h"
#include "mpi/wire.h"
#include "search/controller.h"

namespace ranktune::mpi {

/// What the streams need of the transport: two messages to a worker.
class ChunkTransport {
 public:
  virtual ~ChunkTransport() = default;
  /// Acknowledges a chunk of a save that `worker` streams in (kTagCheckpointAck).
  virtual void acknowledge(int worker, const ChunkAck& ack) = 0;
  /// Sends a chunk of a restore to `worker` without blocking (kTagRestoreChunk).
  virtual void send_restore_chunk(int worker, const CheckpointChunk& chunk) = 0;
  /// `worker` acknowledged a restore chunk: the buffers of the chunks it has can go.
  virtual void release(int worker) = 0;
  /// Returns once every restore chunk sent has been delivered (no buffer is needed).
  virtual void wait_delivered() = 0;
};

/// ChunkTransport over MPI: blocking acks, non-blocking restore chunks (ChunkSends).
class MpiChunkTransport final : public ChunkTransport {
 public:
  explicit MpiChunkTransport(const boost::mpi::communicator& world) : world_(world) {}
  void acknowledge(int worker, const ChunkAck& ack) override;
  void send_restore_chunk(int worker, const CheckpointChunk& chunk) override;
  void release(int worker) override;
  void wait_delivered() override;

 private:
  const boost::mpi::communicator& world_;
  std::map<int, ChunkSends> sends_;  ///< by worker rank
};

/// A restore whose bytes failed their checksum once all of them were sent: its attempt
/// fails (the worker, which checks them too, fails the same attempt).
struct RestoreFailure {
  search::Command command;  ///< the Start the restore followed
  std::string reason;
};

class CheckpointStreams {
 public:
  /// Neither may be destroyed before the streams: they hold byte ranges of `writer`.
  CheckpointStreams(io::ResultsWriter& writer, ChunkTransport& transport) : writer_(writer), transport_(transport) {}

  /// Writes one chunk of a checkpoint that `source` streams, straight into the results
  /// file, and acknowledges it. After the last one the checkpoint is stored, with its row,
  /// and this returns when its first chunk arrived (the "checkpoint" event says how long
  /// it streamed); before, nullopt. Until then the store has only reserved its bytes, so a
  /// stream that never ends (the run stops first) leaves no row and its bytes free.
  /// Throws MpiError for a chunk out of order (a protocol error).
  std::optional<double> store_chunk(int source, const CheckpointChunk& c, double t);

  /// Queues the checkpoint of `start` (a Start with a restore, already sent to
  /// start.worker) and sends what the window allows of it.
  std::vector<RestoreFailure> restore(const search::Command& start, io::ResultsWriter::CheckpointSource source);
  /// A restore chunk arrived at `worker`: sends the next ones as far as the window allows.
  std::vector<RestoreFailure> acknowledged(int worker, const ChunkAck& ack);

  /// At shutdown: restores still queued or half sent end with an aborted chunk (their
  /// workers wait for chunks before anything else, and then fail those attempts).
  void abort_restores();
  /// At shutdown: a save chunk is acknowledged (the worker waits for that) and thrown away.
  void discard_chunk(int source, const CheckpointChunk& c);
  /// At shutdown: a restore chunk arrived; nothing more is sent.
  void acknowledged_at_shutdown(int worker, const ChunkAck& ack);
  /// Waits until every restore chunk is delivered, then forgets every stream (the saves
  /// never finished give their reserved bytes back).
  void close();

 private:
  /// Sends the next chunks of the restores queued for `worker`, as far as its window
  /// allows, reading each from the file just before it goes.
  std::vector<RestoreFailure> pump(int worker);

  /// A checkpoint streaming in from a worker (at most one per worker: it sends them in order).
  struct Upload {
    search::TrialId trial = 0;
    double began = 0;  ///< when its first chunk arrived
    io::ResultsWriter::CheckpointSink sink;
  };
  /// A checkpoint streaming out to a worker that restores it.
  struct Restore {
    search::Command command;  ///< the Start it follows
    io::ResultsWriter::CheckpointSource source;
  };
  /// The restores of one worker, sent one after another (their chunks share a tag).
  struct Outbox {
    explicit Outbox(int worker) : window(0, worker) {}
    AckWindow window;
    std::deque<Restore> queue;  ///< front: the one being sent
  };
  Outbox& outbox(int worker);

  io::ResultsWriter& writer_;
  ChunkTransport& transport_;
  std::map<int, Upload> uploads_;   ///< by source rank
  std::map<int, Outbox> restores_;  ///< by worker rank
};

}  // namespace ranktune::mpi
