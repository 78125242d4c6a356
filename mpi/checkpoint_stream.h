#pragma once
/// Rank 0's checkpoint streams: the saves that workers stream in chunk by chunk, each
/// chunk's bytes received into a buffer that the writer thread (mpi/write_thread.h) writes
/// into the results file while the main thread receives the next, and acknowledged once
/// written; and the restores streamed out to workers from the file within the window of
/// kCheckpointWindow chunks (protocol in mpi/wire.h). Written against ChunkTransport, so a
/// test drives it without MPI.

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "io/store.h"
#include "mpi/wire.h"
#include "mpi/write_thread.h"
#include "controller/controller.h"

namespace ranktune::mpi {

/// What the streams need of the transport: the bytes of a save's chunk, and two messages
/// to a worker.
class ChunkTransport {
 public:
  virtual ~ChunkTransport() = default;
  /// Receives the chunk.size bytes that follow the header `chunk` of a save from `worker`
  /// (kTagCheckpointData) into `into`.
  virtual void receive_bytes(int worker, const CheckpointChunk& chunk, char* into) = 0;
  /// Acknowledges a chunk of a save that `worker` streams in (kTagCheckpointAck).
  virtual void acknowledge(int worker, const ChunkAck& ack) = 0;
  /// Sends a chunk of a restore and its bytes to `worker` without blocking
  /// (kTagRestoreChunk, kTagRestoreData).
  virtual void send_restore_chunk(int worker, const CheckpointChunk& chunk, std::string bytes) = 0;
  /// `worker` acknowledged a restore chunk: the buffers of the chunks it has can go.
  virtual void release(int worker) = 0;
  /// Returns once every restore chunk sent has been delivered (no buffer is needed).
  virtual void wait_delivered() = 0;
};

/// ChunkTransport over MPI: blocking acks, non-blocking restore chunks (ChunkSends).
class MpiChunkTransport final : public ChunkTransport {
 public:
  explicit MpiChunkTransport(const boost::mpi::communicator& world) : world_(world) {}
  void receive_bytes(int worker, const CheckpointChunk& chunk, char* into) override;
  void acknowledge(int worker, const ChunkAck& ack) override;
  void send_restore_chunk(int worker, const CheckpointChunk& chunk, std::string bytes) override;
  void release(int worker) override;
  void wait_delivered() override;

 private:
  const boost::mpi::communicator& world_;
  std::map<int, ChunkSends> sends_;  ///< by worker rank
};

/// A restore whose bytes failed their checksum once all of them were sent: its attempt
/// fails (the worker, which checks them too, fails the same attempt).
struct RestoreFailure {
  controller::Instruction command;  ///< the Start the restore followed
  std::string reason;
};

/// A checkpoint that a worker streamed in, now stored with its row.
struct StoredCheckpoint {
  int source = 0;  ///< the worker rank that sent it
  search::TrialId trial = 0;
  int attempt = 0;
  std::int64_t iteration = 0;
  std::int64_t total = 0;  ///< its bytes
  double began = 0;        ///< when its first chunk arrived
};

class CheckpointStreams {
 public:
  /// Neither may be destroyed before the streams: they hold byte ranges of `writer`.
  /// `fsync` ([checkpoint] fsync): each checkpoint's bytes are made durable (fdatasync)
  /// after its last chunk is written, before it is stored and acknowledged.
  CheckpointStreams(io::ResultsWriter& writer, ChunkTransport& transport, bool fsync = false)
      : writer_(writer), transport_(transport), fsync_(fsync) {}

  /// Receives one chunk of a checkpoint that `source` streams: its header `c` has arrived,
  /// its bytes are received now into a buffer (at most kCheckpointWindow per worker, since
  /// a chunk is acknowledged only once written), which the writer thread writes straight
  /// into the reserved range of the results file. Until the last chunk is written and
  /// poll() has stored the row, the store has only reserved its bytes, so a stream that
  /// never ends (the run stops first) leaves no row and its bytes free.
  /// Throws MpiError for a chunk out of order (a protocol error).
  void receive_chunk(int source, const CheckpointChunk& c, double t);
  /// Acknowledges the chunks that the writer thread has written since the last call, in
  /// the order they came; a checkpoint whose last chunk is written gets its row (with `t`
  /// as its time) and is returned. Rethrows the writer thread's error (a StoreError, e.g.
  /// DiskFullError): the run stops on it as on any error of the results file.
  std::vector<StoredCheckpoint> poll(double t);
  /// Waits until every chunk received is written, then as poll().
  std::vector<StoredCheckpoint> drain(double t);
  /// Waits until every chunk received from `source` is written, then as poll(); at once
  /// when none is queued. The driver calls it before it handles any other message of
  /// `source`: what a worker sends after a checkpoint (its next Result, its Ended) is
  /// handled after the checkpoint is stored, in the order the worker sent them.
  std::vector<StoredCheckpoint> written_from(int source, double t);

  /// Queues the checkpoint of `start` (a Start with a restore, already sent to
  /// start.worker) and sends what the window allows of it.
  std::vector<RestoreFailure> restore(const controller::Instruction& start, io::ResultsWriter::CheckpointSource source);
  /// A restore chunk arrived at `worker`: sends the next ones as far as the window allows.
  std::vector<RestoreFailure> acknowledged(int worker, const ChunkAck& ack);

  /// At shutdown: restores still queued or half sent end with an aborted chunk (their
  /// workers wait for chunks before anything else, and then fail those attempts).
  void abort_restores();
  /// At shutdown, once drain() has written what came before: a save chunk's bytes are
  /// received and thrown away, and it is acknowledged (the worker waits for that).
  void discard_chunk(int source, const CheckpointChunk& c);
  /// At shutdown: a restore chunk arrived; nothing more is sent.
  void acknowledged_at_shutdown(int worker, const ChunkAck& ack);
  /// Waits until every chunk received is written and every restore chunk is delivered,
  /// then forgets every stream (the saves never finished give their reserved bytes back).
  void close();

 private:
  /// Sends the next chunks of the restores queued for `worker`, as far as its window
  /// allows, reading each from the file just before it goes.
  std::vector<RestoreFailure> pump(int worker);

  /// A checkpoint streaming in from a worker (at most one being received per worker: it
  /// sends them in order; earlier ones may still be being written).
  struct Upload {
    search::TrialId trial = 0;
    int attempt = 0;
    std::int64_t iteration = 0;
    double began = 0;  ///< when its first chunk arrived
    io::ResultsWriter::CheckpointSink sink;  ///< written by the writer thread only while it has chunks of it
    std::int64_t received = 0;               ///< bytes received so far (written or queued)
  };
  /// A chunk handed to the writer thread, and what follows once it is written.
  struct Queued {
    int source = 0;
    ChunkAck ack;
    /// The last chunk's: its upload, out of uploads_ (the worker may begin its next
    /// checkpoint before this one is written), stored once the chunk is written.
    std::unique_ptr<Upload> completes;
    std::unique_ptr<char[]> buffer;  ///< its bytes, until written
  };
  /// Acknowledges the `n` oldest chunks queued (written by now) and stores the checkpoints
  /// they complete.
  std::vector<StoredCheckpoint> settle(std::size_t n, double t);
  std::unique_ptr<char[]> take_buffer();
  /// A checkpoint streaming out to a worker that restores it.
  struct Restore {
    controller::Instruction command;  ///< the Start it follows
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
  bool fsync_ = false;
  /// Being received, by source rank; on the heap, since the writer thread holds its sink.
  std::map<int, std::unique_ptr<Upload>> uploads_;
  std::map<int, Outbox> restores_;  ///< by worker rank
  std::deque<Queued> queued_;       ///< chunks handed to the writer thread, in its order
  /// Buffers of written chunks, reused: at most as many as were ever queued at once
  /// (kCheckpointWindow per worker), so rank 0 neither grows nor faults in fresh pages.
  std::vector<std::unique_ptr<char[]>> spare_;
  WriteThread thread_;  ///< last: joined first, before the sinks and buffers it writes from go
};

}  // namespace ranktune::mpi
