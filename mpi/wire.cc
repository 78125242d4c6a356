// The wire messages sent and received in mpi/codec.h's encoding with a matched probe, and
// the windows of checkpoint chunks in flight (mpi/wire.h: the protocol).
#include "mpi/wire.h"

#include <cstring>

#include "mpi/backoff.h"
#include "mpi/codec.h"
#include "mpi/errors.h"

namespace ranktune::mpi {

template <class T>
void send(const boost::mpi::communicator& comm, int dest, Tag tag, const T& msg) {
  // One buffer per thread, reused: a send allocates nothing once it has grown (MPI_Send
  // returns when MPI no longer needs it).
  thread_local std::vector<char> bytes;
  encode(msg, bytes);
  MPI_CHECK(MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, dest, tag, static_cast<MPI_Comm>(comm)));
}

std::optional<Incoming> try_receive(const boost::mpi::communicator& comm, int source, int tag) {
  int flag = 0;
  MPI_Message handle = MPI_MESSAGE_NULL;
  MPI_Status status;
  // A matched probe: the message found is the one received, even if another thread or a
  // later probe looks at the same source (plain probe + recv has no such guarantee).
  MPI_CHECK(MPI_Improbe(source, tag, static_cast<MPI_Comm>(comm), &flag, &handle, &status));
  if (!flag) return std::nullopt;
  int count = 0;
  MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &count));
  Incoming in;
  in.source = status.MPI_SOURCE;
  in.tag = status.MPI_TAG;
  in.bytes.resize(static_cast<std::size_t>(count));
  MPI_CHECK(MPI_Mrecv(in.bytes.data(), count, MPI_BYTE, &handle, MPI_STATUS_IGNORE));
  return in;
}

Incoming receive(const boost::mpi::communicator& comm, int source, std::chrono::microseconds max_nap, int tag) {
  Backoff backoff(std::chrono::microseconds(10), max_nap);
  for (;;) {
    if (auto in = try_receive(comm, source, tag)) return std::move(*in);
    backoff.wait();
  }
}

MpiError undecodable(const boost::mpi::communicator& comm, const Incoming& in, const std::string& why) {
  return MpiError("rank " + std::to_string(comm.rank()) + ": the message of tag " + std::to_string(in.tag) +
                  " from rank " + std::to_string(in.source) + " (" + std::to_string(in.bytes.size()) +
                  " bytes) does not decode: " + why + " (protocol error: mixed ranktune builds?)");
}

template <class T>
T unpack(const boost::mpi::communicator& comm, const Incoming& in) {
  try {
    return decode<T>(in.bytes.data(), in.bytes.size());
  } catch (const WireFormatError& e) {
    throw undecodable(comm, in, e.what());
  }
}

void receive_chunk_bytes(const boost::mpi::communicator& comm, int source, Tag header, const CheckpointChunk& chunk,
                         char* into) {
  if (chunk.aborted) return;
  if (chunk.size < 0 || chunk.size > static_cast<std::int64_t>(kCheckpointChunkBytes))
    throw MpiError("rank " + std::to_string(comm.rank()) + ": rank " + std::to_string(source) +
                   " announced a checkpoint chunk of " + std::to_string(chunk.size) + " bytes, more than the " +
                   std::to_string(kCheckpointChunkBytes) + " a chunk may hold (protocol error: mixed ranktune builds?)");
  // The sender posted the bytes right after the header, so their envelope is here or about
  // to be: a short sleeping poll, never a spin (a blocking probe spins in Open MPI).
  MPI_Message handle = MPI_MESSAGE_NULL;
  MPI_Status status;
  Backoff backoff(std::chrono::microseconds(1), std::chrono::microseconds(50));
  for (int flag = 0;;) {
    MPI_CHECK(MPI_Improbe(source, data_tag(header), static_cast<MPI_Comm>(comm), &flag, &handle, &status));
    if (flag) break;
    backoff.wait();
  }
  int count = 0;
  MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &count));
  if (count != chunk.size) {
    std::vector<char> away(static_cast<std::size_t>(count));  // received all the same: the message must go
    MPI_CHECK(MPI_Mrecv(away.data(), count, MPI_BYTE, &handle, MPI_STATUS_IGNORE));
    throw MpiError("rank " + std::to_string(comm.rank()) + ": rank " + std::to_string(source) + " sent " +
                   std::to_string(count) + " bytes after a checkpoint chunk header of " + std::to_string(chunk.size) +
                   " (protocol error: mixed ranktune builds?)");
  }
  MPI_CHECK(MPI_Mrecv(into, count, MPI_BYTE, &handle, MPI_STATUS_IGNORE));
}

void AckWindow::sent(const CheckpointChunk& chunk) {
  if (!chunk.aborted) unacked_.push_back(ChunkAck{chunk.trial, chunk.attempt, chunk.end()});
}

void AckWindow::acknowledged(const ChunkAck& ack) {
  if (unacked_.empty() || unacked_.front().trial != ack.trial || unacked_.front().attempt != ack.attempt ||
      unacked_.front().received != ack.received) {
    const std::string due = unacked_.empty() ? std::string("none was due")
                                             : "the oldest due is trial " + std::to_string(unacked_.front().trial) +
                                                   " up to byte " + std::to_string(unacked_.front().received);
    throw MpiError("rank " + std::to_string(self_) + ": rank " + std::to_string(peer_) +
                   " acknowledged a checkpoint chunk of trial " + std::to_string(ack.trial) + " up to byte " +
                   std::to_string(ack.received) + ", but " + due + " (protocol error: mixed ranktune builds?)");
  }
  unacked_.pop_front();
}

struct ChunkSends::InFlight {
  std::vector<char> header;             // encoded: MPI reads it until the send completes
  std::string owned;                    // the bytes, when the send keeps them
  MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};  // header, bytes
};

ChunkSends::ChunkSends(const boost::mpi::communicator& comm, int peer, Tag tag)
    : comm_(comm), peer_(peer), tag_(tag) {}

ChunkSends::~ChunkSends() {
  for (auto& s : sends_) {
    int done = 0;
    if (MPI_Testall(2, s->requests, &done, MPI_STATUSES_IGNORE) == MPI_SUCCESS && done) continue;
    // MPI may still read the buffers: hand the requests back and leak the buffers, since
    // freeing them could corrupt memory, and a rank that gets here is about to abort.
    for (MPI_Request& r : s->requests)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    (void)s.release();
  }
}

void ChunkSends::send(const CheckpointChunk& chunk, const char* bytes) {
  post(std::make_unique<InFlight>(), chunk, bytes);
}

void ChunkSends::send(const CheckpointChunk& chunk, std::string bytes) {
  auto s = std::make_unique<InFlight>();
  s->owned = std::move(bytes);  // before the send: a short string's bytes move with it
  const char* const at = s->owned.data();
  post(std::move(s), chunk, at);
}

void ChunkSends::post(std::unique_ptr<InFlight> s, const CheckpointChunk& chunk, const char* bytes) {
  reap();
  encode(chunk, s->header);
  MPI_CHECK(MPI_Isend(s->header.data(), static_cast<int>(s->header.size()), MPI_BYTE, peer_, tag_,
                      static_cast<MPI_Comm>(comm_), &s->requests[0]));
  // The bytes go as they lie, not encoded: MPI reads them from the sender's buffer.
  if (!chunk.aborted)
    MPI_CHECK(MPI_Isend(const_cast<char*>(bytes), static_cast<int>(chunk.size), MPI_BYTE, peer_, data_tag(tag_),
                        static_cast<MPI_Comm>(comm_), &s->requests[1]));
  sends_.push_back(std::move(s));
}

void ChunkSends::reap() {
  while (!sends_.empty()) {
    int done = 0;
    MPI_CHECK(MPI_Testall(2, sends_.front()->requests, &done, MPI_STATUSES_IGNORE));
    if (!done) return;
    sends_.pop_front();
  }
}

void ChunkSends::wait_delivered() {
  Backoff backoff(std::chrono::microseconds(10), std::chrono::microseconds(200));
  for (reap(); !sends_.empty(); reap()) backoff.wait();
}

ChunkWindow::ChunkWindow(const boost::mpi::communicator& comm, int peer, Tag tag)
    : sends_(comm, peer, tag), acks_(comm.rank(), peer) {}

void ChunkWindow::send(const CheckpointChunk& chunk, const char* bytes) {
  sends_.send(chunk, bytes);
  acks_.sent(chunk);
}

void ChunkWindow::acknowledged(const ChunkAck& ack) {
  acks_.acknowledged(ack);
  sends_.reap();
}

#define RANKTUNE_WIRE_TYPE(T)                                                       \
  template void send<T>(const boost::mpi::communicator&, int, Tag, const T&);       \
  template T unpack<T>(const boost::mpi::communicator&, const Incoming&);
RANKTUNE_WIRE_TYPE(Setup)
RANKTUNE_WIRE_TYPE(Hello)
RANKTUNE_WIRE_TYPE(Start)
RANKTUNE_WIRE_TYPE(Decision)
RANKTUNE_WIRE_TYPE(Result)
RANKTUNE_WIRE_TYPE(Ended)
RANKTUNE_WIRE_TYPE(LogTail)
RANKTUNE_WIRE_TYPE(CheckpointChunk)
RANKTUNE_WIRE_TYPE(ChunkAck)
RANKTUNE_WIRE_TYPE(Placed)
RANKTUNE_WIRE_TYPE(Notice)
RANKTUNE_WIRE_TYPE(Empty)
#undef RANKTUNE_WIRE_TYPE

}  // namespace ranktune::mpi
