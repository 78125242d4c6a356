// A worker's message pump (mpi/worker_pump.h): instructions and decisions in, replies and
// checkpoint chunks out, naps while it waits.
#include "mpi/worker_pump.h"

#include <algorithm>
#include <cstdio>
#include <span>
#include <utility>

#include "io/crc32c.h"
#include "mpi/errors.h"
#include "mpi/launch.h"
#include "mpi/trace.h"

namespace ranktune::mpi {
namespace {

using namespace std::chrono_literals;

constexpr int kDriver = 0;
/// The longest nap of a worker that waits for the decision at the end of its lease.
constexpr std::chrono::microseconds kDecisionNap{20};

}  // namespace

WorkerPump::WorkerPump(const boost::mpi::communicator& world)
    : world_(world), checkpoints_(world_, kDriver, kTagCheckpoint) {}

int WorkerPump::serve(const std::function<void(const Start&)>& run_trial) {
  for (;;) {
    // Between trials a worker naps up to 2 ms.
    Incoming in = next_message(2ms);
    switch (in.tag) {
      case kTagStart:
        run_trial(unpack<Start>(world_, in));
        break;
      case kTagDecision: break;  // a Stop for a trial that already ended here: nothing to do
      case kTagShutdown:
        trace("worker: Shutdown received");
        job_ending();  // rank 0 may now exit before us
        // The driver acknowledges chunks until every Bye is in: collect the last acks,
        // so that no send is in flight when MPI finalizes.
        while (!checkpoints_.idle()) take_ack(receive(world_, kDriver, 2ms, kTagCheckpointAck));
        send(world_, kDriver, kTagBye, Empty{});
        trace("worker: Bye sent");
        return 0;
      default:
        throw MpiError("worker " + std::to_string(world_.rank()) + ": unexpected message tag " +
                       std::to_string(in.tag));
    }
  }
}

Incoming WorkerPump::next_message(std::chrono::microseconds max_nap) {
  for (;;) {
    Incoming in = receive(world_, kDriver, max_nap);
    if (in.tag != kTagCheckpointAck) return in;
    take_ack(in);
  }
}

std::optional<Incoming> WorkerPump::poll_message() {
  while (auto in = try_receive(world_, kDriver, MPI_ANY_TAG)) {
    if (in->tag != kTagCheckpointAck) return in;
    take_ack(*in);
  }
  return std::nullopt;
}

void WorkerPump::take_ack(const Incoming& in) { checkpoints_.acknowledged(unpack<ChunkAck>(world_, in)); }

Decision WorkerPump::next_decision(const Start& start, std::int64_t iteration, std::int64_t until) {
  if (iteration < until) {
    const auto in = poll_message();
    if (!in) return Decision{start.trial, start.attempt, Decision::Continue, until, false};
    return decision_for(start, *in);
  }
  // The end of the lease: the answer is on its way (the driver takes a result within its
  // own nap and answers at once), so short naps: a 200 us nap overshot the answer by up to
  // its length on every trial. This wait lasts a round trip, a few hundred microseconds.
  Incoming in = next_message(kDecisionNap);
  trace_trial("worker: decision in", start.trial);
  return decision_for(start, in);
}

Decision WorkerPump::decision_for(const Start& start, const Incoming& in) const {
  if (in.tag != kTagDecision) {
    throw MpiError("worker " + std::to_string(world_.rank()) + ": expected a decision, got message tag " +
                   std::to_string(in.tag));
  }
  const auto d = unpack<Decision>(world_, in);
  if (d.trial != start.trial || d.attempt != start.attempt) {
    throw MpiError("worker " + std::to_string(world_.rank()) + ": decision for trial " + std::to_string(d.trial) +
                   " while running trial " + std::to_string(start.trial));
  }
  return d;
}

std::string WorkerPump::receive_checkpoint(const Start& start, std::string& problem) {
  // Held whole once, here only; each chunk's bytes are received straight into their place.
  std::string bytes(static_cast<std::size_t>(std::max<std::int64_t>(start.checkpoint_size, 0)), '\0');
  std::int64_t received = 0;
  std::uint32_t crc = 0;
  for (;;) {
    const Incoming in = receive(world_, kDriver, 200us, kTagRestoreChunk);
    const CheckpointChunk c = unpack<CheckpointChunk>(world_, in);
    if (c.trial != start.trial || c.attempt != start.attempt || c.offset != received ||
        (!c.aborted && (c.size < 0 || c.size > start.checkpoint_size - received)))
      throw MpiError("worker " + std::to_string(world_.rank()) + ": checkpoint chunk of trial " +
                     std::to_string(c.trial) + " at byte " + std::to_string(c.offset) + " (" +
                     std::to_string(c.size) + " bytes) while restoring trial " + std::to_string(start.trial) +
                     " at byte " + std::to_string(received) + " of " + std::to_string(start.checkpoint_size));
    if (c.aborted) {
      problem = "the driver stopped sending its checkpoint after " + std::to_string(received) + " of " +
                std::to_string(start.checkpoint_size) + " bytes (the run is ending)";
      return {};
    }
    char* const at = bytes.data() + received;
    receive_chunk_bytes(world_, kDriver, kTagRestoreChunk, c, at);
    crc = io::crc32c(std::as_bytes(std::span(at, static_cast<std::size_t>(c.size))), crc);
    received += c.size;
    send(world_, kDriver, kTagRestoreAck, ChunkAck{c.trial, c.attempt, received});
    if (c.last) break;
  }
  if (received != start.checkpoint_size || crc != start.checkpoint_crc32c) {
    char why[160];
    std::snprintf(why, sizeof why, "%lld bytes with CRC-32C %08x arrived, the file recorded %lld bytes with %08x",
                  static_cast<long long>(received), crc, static_cast<long long>(start.checkpoint_size),
                  start.checkpoint_crc32c);
    problem = std::string("its bytes were damaged on the way (") + why + ")";
  }
  return bytes;
}

void WorkerPump::stream_checkpoint(const Start& start, std::int64_t iteration, const train::CheckpointBytes& bytes) {
  CheckpointChunk chunk{start.trial, start.attempt, iteration, static_cast<std::int64_t>(bytes.size())};
  std::size_t offset = 0;
  do {
    while (checkpoints_.full()) take_ack(receive(world_, kDriver, 200us, kTagCheckpointAck));
    const std::size_t n = std::min(kCheckpointChunkBytes, bytes.size() - offset);
    chunk.offset = static_cast<std::int64_t>(offset);
    chunk.size = static_cast<std::int64_t>(n);
    chunk.last = offset + n == bytes.size();
    // Sent from `bytes` as they lie (no copy): they stay put until wait_delivered below.
    checkpoints_.send(chunk, reinterpret_cast<const char*>(bytes.data()) + offset);
    offset += n;
  } while (!chunk.last);
  checkpoints_.wait_delivered();
}

void WorkerPump::placed(const Placed& p) { send(world_, kDriver, kTagPlaced, p); }
void WorkerPump::result(const Result& r) { send(world_, kDriver, kTagResult, r); }
void WorkerPump::notice(const Notice& n) { send(world_, kDriver, kTagNotice, n); }
void WorkerPump::log_tail(const LogTail& t) { send(world_, kDriver, kTagLogTail, t); }
void WorkerPump::ended(const Ended& e) { send(world_, kDriver, kTagEnded, e); }

}  // namespace ranktune::mpi
