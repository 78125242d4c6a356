// CheckpointStreams: rank 0's side of streamed checkpoints, saves received into buffers
// that the writer thread writes into the results file, and restores sent within the
// window, over MPI or a test's transport (mpi/checkpoint_stream.h; the protocol is in
// mpi/wire.h).
#include "mpi/checkpoint_stream.h"

#include "mpi/errors.h"

namespace ranktune::mpi {

void MpiChunkTransport::receive_bytes(int worker, const CheckpointChunk& chunk, char* into) {
  receive_chunk_bytes(world_, worker, kTagCheckpoint, chunk, into);
}

void MpiChunkTransport::acknowledge(int worker, const ChunkAck& ack) { send(world_, worker, kTagCheckpointAck, ack); }

void MpiChunkTransport::send_restore_chunk(int worker, const CheckpointChunk& chunk, std::string bytes) {
  sends_.try_emplace(worker, world_, worker, kTagRestoreChunk).first->second.send(chunk, std::move(bytes));
}

void MpiChunkTransport::release(int worker) {
  if (const auto it = sends_.find(worker); it != sends_.end()) it->second.reap();
}

void MpiChunkTransport::wait_delivered() {
  for (auto& [worker, sends] : sends_) sends.wait_delivered();
}

void CheckpointStreams::receive_chunk(int source, const CheckpointChunk& c, double t) {
  auto it = uploads_.find(source);
  if (c.offset == 0) {
    if (it != uploads_.end())
      throw MpiError("driver: rank " + std::to_string(source) + " began a checkpoint of trial " +
                     std::to_string(c.trial) + " before it finished the one of trial " +
                     std::to_string(it->second->trial) + " (protocol error)");
    if (c.total < 0) throw MpiError("driver: rank " + std::to_string(source) + " announced a checkpoint of negative size");
    it = uploads_
             .emplace(source, std::make_unique<Upload>(Upload{
                                  c.trial, c.attempt, c.iteration, t,
                                  writer_.begin_checkpoint(c.trial, c.attempt, c.iteration,
                                                           static_cast<std::uint64_t>(c.total))}))
             .first;
  } else if (it == uploads_.end() || it->second->trial != c.trial) {
    throw MpiError("driver: rank " + std::to_string(source) + " sent a checkpoint chunk of trial " +
                   std::to_string(c.trial) + " at byte " + std::to_string(c.offset) +
                   " without its beginning (protocol error)");
  }
  Upload& u = *it->second;
  // Checked here, not only by the sink on the writer thread: a sender out of step is a
  // protocol error, and its bytes must not be received into a buffer too small for them.
  if (c.offset != u.received || c.size < 0 || c.size > static_cast<std::int64_t>(kCheckpointChunkBytes) ||
      c.size > c.total - c.offset || c.last != (c.end() == c.total) || c.aborted)
    throw MpiError("driver: rank " + std::to_string(source) + " sent " + std::to_string(c.size) + " bytes at byte " +
                   std::to_string(c.offset) + (c.last ? " (last)" : "") + " of a checkpoint of trial " +
                   std::to_string(c.trial) + " of " + std::to_string(c.total) + " bytes, " +
                   std::to_string(u.received) + " of them received so far (protocol error)");
  std::unique_ptr<char[]> buffer = take_buffer();
  transport_.receive_bytes(source, c, buffer.get());
  u.received = c.end();
  // The writer thread touches only the sink and HDF5 until poll() hears it is done with the
  // chunk; the buffer stays in queued_ until then.
  io::ResultsWriter::CheckpointSink* const sink = &u.sink;
  const std::string_view bytes(buffer.get(), static_cast<std::size_t>(c.size));
  const bool sync = fsync_ && c.last;
  thread_.submit([sink, at = static_cast<std::uint64_t>(c.offset), bytes, sync] {
    sink->write(at, bytes);
    if (sync) sink->sync();
  });
  Queued q{source, ChunkAck{c.trial, c.attempt, c.end()}, nullptr, std::move(buffer)};
  if (c.last) {
    q.completes = std::move(it->second);
    uploads_.erase(it);
  }
  queued_.push_back(std::move(q));
}

std::vector<StoredCheckpoint> CheckpointStreams::poll(double t) {
  if (queued_.empty()) return {};
  return settle(thread_.take_done(), t);
}

std::vector<StoredCheckpoint> CheckpointStreams::drain(double t) {
  if (queued_.empty()) return {};
  return settle(thread_.wait_done(), t);
}

std::vector<StoredCheckpoint> CheckpointStreams::written_from(int source, double t) {
  // The writer thread runs the chunks in the order of queued_: those up to the last one of
  // `source` must be done.
  std::size_t needed = 0;
  for (std::size_t i = 0; i < queued_.size(); ++i)
    if (queued_[i].source == source) needed = i + 1;
  if (needed == 0) return {};
  return settle(thread_.wait_done(needed), t);
}

std::vector<StoredCheckpoint> CheckpointStreams::settle(std::size_t n, double t) {
  std::vector<StoredCheckpoint> stored;
  for (; n > 0; --n) {
    Queued q = std::move(queued_.front());
    queued_.pop_front();
    if (spare_.size() < 64) spare_.push_back(std::move(q.buffer));
    if (q.completes) {
      Upload& u = *q.completes;
      u.sink.finish(t);  // its row, before the ack that tells the worker it is stored
      stored.push_back({q.source, u.trial, u.attempt, u.iteration, static_cast<std::int64_t>(u.sink.size()), u.began});
    }
    transport_.acknowledge(q.source, q.ack);
  }
  return stored;
}

std::unique_ptr<char[]> CheckpointStreams::take_buffer() {
  if (spare_.empty()) return std::unique_ptr<char[]>(new char[kCheckpointChunkBytes]);  // uninitialised: filled by MPI
  std::unique_ptr<char[]> buffer = std::move(spare_.back());
  spare_.pop_back();
  return buffer;
}

CheckpointStreams::Outbox& CheckpointStreams::outbox(int worker) {
  const auto it = restores_.find(worker);
  if (it == restores_.end())
    throw MpiError("driver: rank " + std::to_string(worker) +
                   " acknowledged a restore chunk, but no restore was sent to it (protocol error)");
  return it->second;
}

std::vector<RestoreFailure> CheckpointStreams::restore(const controller::Instruction& start,
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
    std::string bytes = r.source.read(kCheckpointChunkBytes);
    chunk.size = static_cast<std::int64_t>(bytes.size());
    chunk.last = r.source.done();
    transport_.send_restore_chunk(worker, chunk, std::move(bytes));
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
      transport_.send_restore_chunk(worker, abort, {});
      box.window.sent(abort);
    }
    box.queue.clear();
  }
}

void CheckpointStreams::discard_chunk(int source, const CheckpointChunk& c) {
  if (!queued_.empty())
    throw MpiError("driver: a checkpoint chunk to discard while " + std::to_string(queued_.size()) +
                   " are still being written (drain() first)");
  if (c.size < 0 || c.size > static_cast<std::int64_t>(kCheckpointChunkBytes))
    throw MpiError("driver: rank " + std::to_string(source) + " announced a checkpoint chunk of " +
                   std::to_string(c.size) + " bytes (protocol error)");
  std::unique_ptr<char[]> buffer = take_buffer();
  transport_.receive_bytes(source, c, buffer.get());
  spare_.push_back(std::move(buffer));
  transport_.acknowledge(source, ChunkAck{c.trial, c.attempt, c.end()});
}

void CheckpointStreams::acknowledged_at_shutdown(int worker, const ChunkAck& ack) {
  outbox(worker).window.acknowledged(ack);
  transport_.release(worker);
}

void CheckpointStreams::close() {
  thread_.wait_done();  // before the sinks go: their writes, if any, end first
  queued_.clear();
  transport_.wait_delivered();
  uploads_.clear();
  restores_.clear();
}

}  // namespace ranktune::mpi
