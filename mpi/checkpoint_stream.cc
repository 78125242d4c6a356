#include "mpi/checkpoint_stream.h"

#include "mpi/errors.h"

namespace ranktune::mpi {

void MpiChunkTransport::acknowledge(int worker, const ChunkAck& ack) { send(world_, worker, kTagCheckpointAck, ack); }

void MpiChunkTransport::send_restore_chunk(int worker, const CheckpointChunk& chunk) {
  sends_.try_emplace(worker, world_, worker, kTagRestoreChunk).first->second.send(chunk);
}

void MpiChunkTransport::release(int worker) {
  if (const auto it = sends_.find(worker); it != sends_.end()) it->second.reap();
}

void MpiChunkTransport::wait_delivered() {
  for (auto& [worker, sends] : sends_) sends.wait_delivered();
}

std::optional<double> CheckpointStreams::store_chunk(int source, const CheckpointChunk& c, double t) {
  auto it = uploads_.find(source);
  if (c.offset == 0) {
    if (it != uploads_.end())
      throw MpiError("driver: rank " + std::to_string(source) + " began a checkpoint of trial " +
                     std::to_string(c.trial) + " before it finished the one of trial " +
                     std::to_string(it->second.trial) + " (protocol error)");
    if (c.total < 0) throw MpiError("driver: rank " + std::to_string(source) + " announced a checkpoint of negative size");
    it = uploads_
             .emplace(source, Upload{c.trial, t, writer_.begin_checkpoint(c.trial, c.attempt, c.iteration,
                                                                         static_cast<std::uint64_t>(c.total))})
             .first;
  } else if (it == uploads_.end() || it->second.trial != c.trial) {
    throw MpiError("driver: rank " + std::to_string(source) + " sent a checkpoint chunk of trial " +
                   std::to_string(c.trial) + " at byte " + std::to_string(c.offset) +
                   " without its beginning (protocol error)");
  }
  it->second.sink.write(static_cast<std::uint64_t>(c.offset), c.bytes);
  transport_.acknowledge(source, ChunkAck{c.trial, c.attempt, c.offset + static_cast<std::int64_t>(c.bytes.size())});
  if (!c.last) return std::nullopt;
  it->second.sink.finish(t);
  const double began = it->second.began;
  uploads_.erase(it);
  return began;
}

CheckpointStreams::Outbox& CheckpointStreams::outbox(int worker) {
  const auto it = restores_.find(worker);
  if (it == restores_.end())
    throw MpiError("driver: rank " + std::to_string(worker) +
                   " acknowledged a restore chunk, but no restore was sent to it (protocol error)");
  return it->second;
}

std::vector<RestoreFailure> CheckpointStreams::restore(const search::Command& start,
                                                       io::ResultsWriter::CheckpointSource source) {
  restores_.try_emplace(start.worker, start.worker).first->second.queue.push_back(Restore{start, std::move(source)});
  return pump(start.worker);
}

std::vector<RestoreFailure> CheckpointStreams::acknowledged(int worker, const ChunkAck& ack) {
  outbox(worker).window.acknowledged(ack);
  transport_.release(worker);
  return pump(worker);
}

std::vector<RestoreFailure> CheckpointStreams::pump(int worker) {
  // The failures go back to the caller: failing an attempt may queue new restores, for
  // this worker too.
  std::vector<RestoreFailure> failed;
  Outbox& box = outbox(worker);
  while (!box.queue.empty() && !box.window.full()) {
    Restore& r = box.queue.front();
    CheckpointChunk chunk{r.command.trial, r.command.attempt, r.command.restore_checkpoint,
                          static_cast<std::int64_t>(r.source.size()), static_cast<std::int64_t>(r.source.position())};
    chunk.bytes = r.source.read(kCheckpointChunkBytes);
    chunk.last = r.source.done();
    transport_.send_restore_chunk(worker, chunk);
    box.window.sent(chunk);
    if (!chunk.last) continue;
    try {
      r.source.verify();
    } catch (const io::StoreError& e) {
      failed.push_back({r.command, e.what()});
    }
    box.queue.pop_front();
  }
  return failed;
}

void CheckpointStreams::abort_restores() {
  for (auto& [worker, box] : restores_) {
    for (Restore& r : box.queue) {
      CheckpointChunk abort{r.command.trial, r.command.attempt, r.command.restore_checkpoint,
                            static_cast<std::int64_t>(r.source.size()), static_cast<std::int64_t>(r.source.position())};
      abort.aborted = true;
      transport_.send_restore_chunk(worker, abort);
      box.window.sent(abort);
    }
    box.queue.clear();
  }
}

void CheckpointStreams::discard_chunk(int source, const CheckpointChunk& c) {
  transport_.acknowledge(source, ChunkAck{c.trial, c.attempt, c.offset + static_cast<std::int64_t>(c.bytes.size())});
}

void CheckpointStreams::acknowledged_at_shutdown(int worker, const ChunkAck& ack) {
  outbox(worker).window.acknowledged(ack);
  transport_.release(worker);
}

void CheckpointStreams::close() {
  transport_.wait_delivered();
  uploads_.clear();
  restores_.clear();
}

}  // namespace ranktune::mpi
