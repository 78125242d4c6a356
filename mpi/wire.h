#pragma once
/// Every message that crosses MPI between the driver (rank 0) and the workers, in one
/// place. Each is a struct with a serialize() function, encoded by mpi/codec.h and sent as
/// one MPI_BYTE message, so the receiver can use a matched probe (MPI_Improbe + MPI_Mrecv)
/// on any source without a second size message. (The Setup alone is broadcast, with
/// Boost.MPI's serialization of the same function.) The one exception is a checkpoint
/// chunk's bytes: they follow their encoded header raw (on the data tag of the header's
/// tag, see data_tag), sent from and received into the buffers that hold them, so that
/// megabytes are not copied into and out of messages.
///
/// Protocol (wire version kWireVersion; the handshake refuses a mismatch):
///   driver -> all : Setup (broadcast)           worker -> driver : Hello
///   driver -> w   : Start                        w -> driver      : Result (then waits)
///   driver -> w   : Decision (Continue | Stop)   w -> driver      : Ended (done | failed)
///   driver -> w   : Shutdown                     w -> driver      : Bye
///                                                w -> driver      : Placed
///                                                w -> driver      : LogTail (after a failed Stop)
///                                                w -> driver      : Notice (any time before Bye)
///   driver -> w   : ChunkAck (kTagCheckpointAck) w -> driver      : CheckpointChunk (kTagCheckpoint),
///                                                                    its bytes (kTagCheckpointData)
///   driver -> w   : CheckpointChunk (kTagRestoreChunk), its bytes (kTagRestoreData)
///                                                w -> driver      : ChunkAck (kTagRestoreAck)
/// Checkpoints stream in chunks of at most kCheckpointChunkBytes, so that rank 0 never
/// holds a whole checkpoint (they may be hundreds of MiB) and stays responsive to the
/// other workers between two chunks:
///   - Save (worker -> driver): a checkpoint is a sequence of CheckpointChunks, in order,
///     the last one flagged `last` (one chunk for a small checkpoint), each followed by its
///     raw bytes. The driver receives the bytes into a buffer that its writer thread writes
///     to their place in the results file (mpi/checkpoint_stream.h), and acknowledges the
///     chunk with a ChunkAck once written; the row exists only after the last chunk. A sender has at
///     most kCheckpointWindow chunks unacknowledged (ChunkWindow), which bounds what rank 0
///     may be sent but not yet have written, whatever the MPI transport buffers. The worker
///     does not wait for the acks of its last chunks: it collects them later, so a small
///     checkpoint costs no round trip.
///   - Restore (driver -> worker): Start carries checkpoint_size and checkpoint_crc32c,
///     and the checkpoint follows on kTagRestoreChunk, read from the file chunk by chunk,
///     each chunk acknowledged on kTagRestoreAck (the same window). Every gang member gets
///     its own stream. The worker checks the CRC-32C of what arrived; a mismatch fails the
///     attempt. A stream the driver gives up (it shuts down) ends with an `aborted` chunk,
///     which is not acknowledged.
///   - Chunks of one stream never interleave with another stream's on the same tag and
///     pair of ranks (the driver queues the restores of one worker), and MPI keeps their
///     order, so a chunk always continues the stream before it.
/// Gangs: the driver sends the same Start to every member; the members build their own
/// communicator (mpi/gang.h) and only the leader sends Result, Checkpoint, Placed and Ended,
/// and reads Decisions during the trial, which it passes on over the gang's communicator.
/// A Stop or Pause also goes to every member, which finds it stale once the trial is over.
/// Leases: Start and Continue say up to which iteration the worker may run without waiting
/// (controller::Instruction::until). After the Result of that iteration it waits for the Decision;
/// before it, it only checks between steps for a Stop, without blocking. A worker is free
/// as soon as the driver sends it a Stop; it carries out its messages in order.

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/mpi/communicator.hpp>
#include <boost/serialization/map.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/utility.hpp>
#include <boost/serialization/vector.hpp>

#include "mpi/errors.h"
#include "search/event_kind.h"
#include "search/metrics.h"
#include "search/types.h"

namespace ranktune::mpi {

inline constexpr int kWireVersion = 12;

/// Largest piece of a checkpoint in one message, both ways (bytes). Large enough that the
/// per-message cost (packing, a round trip for the ack) is small next to the copy and the
/// disk write; small enough that rank 0 holds a few of them at a time.
inline constexpr std::size_t kCheckpointChunkBytes = std::size_t{4} << 20;
/// Chunks a sender may have unacknowledged per stream: 2 keeps one chunk in flight while the
/// receiver writes (or restores) the previous one. Rank 0 therefore holds at most
/// kCheckpointWindow x kCheckpointChunkBytes per worker of incoming checkpoint bytes, and
/// as much in outgoing restore buffers.
inline constexpr int kCheckpointWindow = 2;

enum Tag : int {
  kTagHello = 1,
  kTagStart = 2,
  kTagDecision = 3,
  kTagResult = 4,
  kTagEnded = 5,
  kTagShutdown = 6,
  kTagBye = 7,
  kTagCheckpoint = 8,
  kTagPlaced = 9,
  kTagCheckpointAck = 10,
  kTagRestoreChunk = 11,
  kTagRestoreAck = 12,
  kTagLogTail = 13,
  kTagNotice = 14,
  kTagCheckpointData = 15,  ///< the raw bytes of the kTagCheckpoint header before them
  kTagRestoreData = 16,     ///< the raw bytes of the kTagRestoreChunk header before them
};

/// The tag on which the raw bytes of a chunk header sent on `header` follow.
constexpr Tag data_tag(Tag header) { return header == kTagRestoreChunk ? kTagRestoreData : kTagCheckpointData; }

/// Broadcast once by the driver: the experiment as the driver read it.
struct Setup {
  int wire_version = kWireVersion;
  std::string config_text;
  std::string config_path;
  std::vector<std::string> overrides;
  std::string log_dir;  ///< where command trials write their output
  /// Rank 0's pid, and the machine and pid namespace it is valid in
  /// (process_namespace_id()): a worker that shares them watches rank 0 and ends with it.
  std::int64_t driver_pid = 0;
  std::string driver_namespace;

  template <class Ar> void serialize(Ar& ar, unsigned) {
    ar & wire_version & config_text & config_path & overrides & log_dir & driver_pid & driver_namespace;
  }
};

/// A worker introduces itself: where it runs and what device it bound.
struct Hello {
  int wire_version = kWireVersion;
  std::string host;
  int local_index = 0;
  std::string device;       ///< "cpu" or "cuda:N"
  std::string device_name;  ///< GPU name, or the CPU model

  template <class Ar> void serialize(Ar& ar, unsigned) {
    ar & wire_version & host & local_index & device & device_name;
  }
};

struct Start {
  std::int64_t trial = 0;
  int attempt = 0;
  search::Config config;
  std::int64_t until = 1;  ///< lease: run up to this iteration before waiting for a decision
  std::int64_t iterations = 0;  ///< iterations already run: the first result is iterations + 1
  /// Restore: the checkpoint follows in CheckpointChunks on kTagRestoreChunk, this many
  /// bytes in all, with this CRC-32C. restore = false: a fresh start.
  bool restore = false;
  std::int64_t checkpoint_size = 0;
  std::uint32_t checkpoint_crc32c = 0;
  /// The trial's gang: world ranks, leader first. Every member gets the same Start; only
  /// the leader talks to the driver during the trial. Empty or one rank: no gang.
  std::vector<int> gang;
  /// Why this run of the attempt starts (controller::Instruction::cause): "start" for a fresh
  /// attempt, else "resume", "exploit ...", ...; a command's log is appended to then.
  std::string cause;

  template <class Ar> void serialize(Ar& ar, unsigned) {
    ar & trial & attempt & config & until & iterations & restore & checkpoint_size & checkpoint_crc32c & gang &
        cause;
  }
};

/// Sent once per attempt by the trial's leader after setup: how the trial computes, for
/// the results file ("placement" events).
struct Placed {
  std::int64_t trial = 0;
  int attempt = 0;
  std::string path;        ///< "cpu" or "cuda:N"
  int threads = 1;         ///< compute threads per rank
  std::string collective;  ///< the gang's collective ("mpi", "nccl"); empty alone

  template <class Ar> void serialize(Ar& ar, unsigned) { ar & trial & attempt & path & threads & collective; }
};

struct Decision {
  enum Kind : int { Continue = 0, Stop = 1, Pause = 2 };
  std::int64_t trial = 0;
  int attempt = 0;
  int kind = Continue;
  std::int64_t until = 0;  ///< Continue: the new lease
  bool save = false;       ///< Continue: send a Checkpoint of the current state first
  /// Stop: the driver failed the attempt on the result just sent (a non-finite metric); the
  /// leader answers with its LogTail once the trainable has stopped.
  bool failed = false;

  template <class Ar> void serialize(Ar& ar, unsigned) { ar & trial & attempt & kind & until & save & failed; }
};

/// The last lines of an attempt's output, after a Stop with `failed`: the failure was the
/// driver's to see, the output is the worker's.
struct LogTail {
  std::int64_t trial = 0;
  int attempt = 0;
  std::string log_tail;

  template <class Ar> void serialize(Ar& ar, unsigned) { ar & trial & attempt & log_tail; }
};

/// The header of one piece of a checkpoint; its `size` bytes follow in a message of their
/// own (data_tag), raw. Worker -> driver: the trial's saved state after `iteration` (on a
/// Continue with save, and on Pause). Driver -> worker: the checkpoint that the Start of
/// (trial, attempt) restores (`iteration` is the one it was taken at).
struct CheckpointChunk {
  std::int64_t trial = 0;
  int attempt = 0;
  std::int64_t iteration = 0;
  std::int64_t total = 0;   ///< bytes of the whole checkpoint
  std::int64_t offset = 0;  ///< where its bytes start in it; chunks come in order from 0
  std::int64_t size = 0;    ///< its bytes, at most kCheckpointChunkBytes
  bool last = false;        ///< the final chunk: offset + size == total
  bool aborted = false;     ///< driver -> worker only: the stream ends here, incomplete; no bytes follow

  /// Where its bytes end in the checkpoint: what its ChunkAck says.
  std::int64_t end() const { return offset + size; }

  template <class Ar> void serialize(Ar& ar, unsigned) {
    ar & trial & attempt & iteration & total & offset & size & last & aborted;
  }
};

/// A CheckpointChunk arrived (worker -> driver: and is written to the file). `received` is
/// the chunk's end (offset + size), which names it within its stream.
struct ChunkAck {
  std::int64_t trial = 0;
  int attempt = 0;
  std::int64_t received = 0;

  template <class Ar> void serialize(Ar& ar, unsigned) { ar & trial & attempt & received; }
};

struct Result {
  std::int64_t trial = 0;
  int attempt = 0;
  std::int64_t iteration = 0;  ///< 1-based within the attempt
  search::Metrics metrics;

  template <class Ar> void serialize(Ar& ar, unsigned) { ar & trial & attempt & iteration & metrics; }
};

/// The trial's attempt ended without being stopped: it finished by itself, or it failed.
struct Ended {
  std::int64_t trial = 0;
  int attempt = 0;
  bool failed = false;
  std::string reason;
  std::string log_tail;

  template <class Ar> void serialize(Ar& ar, unsigned) {
    ar & trial & attempt & failed & reason & log_tail;
  }
};

/// Something about an attempt that the results file should record as an event, e.g. a
/// "warning" that its program had to be killed with SIGKILL. Sent by any gang member, also
/// for an attempt that the driver already stopped (the event records it all the same).
struct Notice {
  std::int64_t trial = 0;
  int attempt = 0;
  search::EventKind kind = search::EventKind::Warning;
  std::string message;

  template <class Ar> void serialize(Ar& ar, unsigned) { ar & trial & attempt & kind & message; }
};

/// Shutdown and Bye carry nothing.
struct Empty {
  template <class Ar> void serialize(Ar&, unsigned) {}
};

/// Packs `msg` and sends it to `dest` with `tag` (a standard-mode send: the messages are
/// small and the receiver always drains them, so eager delivery applies).
template <class T>
void send(const boost::mpi::communicator& comm, int dest, Tag tag, const T& msg);

/// A received, still encoded message.
struct Incoming {
  int source = -1;
  int tag = -1;
  std::vector<char> bytes;
};

/// Receives one message if any is waiting (MPI_Improbe + MPI_Mrecv); never blocks. With a
/// `tag`, only a message of that tag: the others stay queued, in order.
std::optional<Incoming> try_receive(const boost::mpi::communicator& comm, int source = MPI_ANY_SOURCE,
                                    int tag = MPI_ANY_TAG);

/// Waits for one message without spinning: polls with a sleeping backoff that starts at
/// 10 us and doubles up to `max_nap` (see backoff.h for why).
Incoming receive(const boost::mpi::communicator& comm, int source, std::chrono::microseconds max_nap,
                 int tag = MPI_ANY_TAG);

/// Unpacks a message received by try_receive or receive.
template <class T>
T unpack(const boost::mpi::communicator& comm, const Incoming& in);

/// The error of a message `in`, received on `comm`, whose bytes do not decode (`why`): a
/// protocol error, for unpack and for the other users of the encoding (mpi/eval_farm.cc).
MpiError undecodable(const boost::mpi::communicator& comm, const Incoming& in, const std::string& why);

/// Receives the raw bytes that follow the chunk header `chunk` just received from `source`
/// on `header` (kTagCheckpoint or kTagRestoreChunk) straight into `into` (chunk.size
/// bytes; nothing for an aborted chunk). The bytes were sent right after the header, so
/// this waits only for them to arrive. Throws MpiError when their size is not the header's.
void receive_chunk_bytes(const boost::mpi::communicator& comm, int source, Tag header, const CheckpointChunk& chunk,
                         char* into);

/// The acknowledgements one sender of checkpoint chunks waits for from one receiver, in
/// order, at most kCheckpointWindow (full()). A sender waits for acks (or, on rank 0, goes
/// on with other work) while the window is full, so a receiver is never sent more than the
/// window, eagerly buffered or not. Pure bookkeeping: ChunkSends does the sending.
class AckWindow {
 public:
  /// `self` and `peer` name the two ranks in the error of a wrong acknowledgement.
  AckWindow(int self, int peer) : self_(self), peer_(peer) {}

  bool full() const { return static_cast<int>(unacked_.size()) >= kCheckpointWindow; }
  /// Nothing unacknowledged.
  bool idle() const { return unacked_.empty(); }
  /// `chunk` went out; it counts against the window until acknowledged. An `aborted` chunk
  /// is never acknowledged, so it does not count.
  void sent(const CheckpointChunk& chunk);
  /// The oldest unacknowledged chunk arrived. Throws MpiError when `ack` names another.
  void acknowledged(const ChunkAck& ack);

 private:
  int self_;
  int peer_;
  std::deque<ChunkAck> unacked_;  ///< the ack each unacknowledged chunk is due
};

/// Non-blocking sends of checkpoint chunks to one receiver on one tag: each encoded header,
/// and each chunk's bytes that it owns, are kept until MPI is done with them.
class ChunkSends {
 public:
  ChunkSends(const boost::mpi::communicator& comm, int peer, Tag tag);
  /// Never throws. Sends still in flight here mean that an error is unwinding the rank
  /// (which then aborts MPI): their buffers are leaked rather than freed under MPI.
  ~ChunkSends();
  ChunkSends(const ChunkSends&) = delete;
  ChunkSends& operator=(const ChunkSends&) = delete;

  /// Sends `chunk` and its chunk.size bytes at `bytes` without blocking; `bytes` must stay
  /// as they are until the send is reaped (wait_delivered).
  void send(const CheckpointChunk& chunk, const char* bytes);
  /// The same with bytes that the send keeps until MPI is done with them.
  void send(const CheckpointChunk& chunk, std::string bytes);
  /// Completes the sends that MPI is done with, oldest first.
  void reap();
  /// Waits, with a sleeping backoff, until MPI no longer needs any buffer (every send has
  /// been delivered). A sender that goes off computing calls it, because with a
  /// rendezvous protocol the receiver's MPI_Mrecv could otherwise wait on this rank.
  void wait_delivered();

 private:
  struct InFlight;
  void post(std::unique_ptr<InFlight> s, const CheckpointChunk& chunk, const char* bytes);

  const boost::mpi::communicator& comm_;
  int peer_;
  Tag tag_;
  std::deque<std::unique_ptr<InFlight>> sends_;  ///< not yet completed, oldest first
};

/// The checkpoint chunks that one sender has in flight to one receiver on one tag: their
/// non-blocking sends (ChunkSends) and the acknowledgements they are due (AckWindow).
class ChunkWindow {
 public:
  ChunkWindow(const boost::mpi::communicator& comm, int peer, Tag tag);

  bool full() const { return acks_.full(); }
  /// Nothing unacknowledged.
  bool idle() const { return acks_.idle(); }
  /// Sends `chunk` and its bytes without blocking (ChunkSends::send: `bytes` stay valid
  /// until wait_delivered); it counts against the window until acknowledged.
  void send(const CheckpointChunk& chunk, const char* bytes);
  /// The oldest unacknowledged chunk arrived. Throws MpiError when `ack` names another.
  void acknowledged(const ChunkAck& ack);
  /// See ChunkSends::wait_delivered.
  void wait_delivered() { sends_.wait_delivered(); }

 private:
  ChunkSends sends_;
  AckWindow acks_;
};

}  // namespace ranktune::mpi
