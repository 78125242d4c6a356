// mpi/checkpoint_stream.h without MPI: rank 0's checkpoint streams driven through an
// in-process transport, against a real results file. A save of several chunks written by
// the writer thread and acknowledged only once written, a restore within the window of
// kCheckpointWindow (2) chunks, streams that end early, and protocol errors; the bytes and
// their CRC-32C must arrive intact. Also the writer thread itself (mpi/write_thread.h).

#include "mpi/checkpoint_stream.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <memory>
#include <span>
#include <thread>

#include <gtest/gtest.h>

#include "io/crc32c.h"
#include "io/errors.h"
#include "mpi/errors.h"
#include "mpi/write_thread.h"

namespace ranktune::mpi {
namespace {

namespace fs = std::filesystem;

// A chunk as a worker sends it: the header, then its bytes.
struct Piece {
  CheckpointChunk header;
  std::string bytes;
};

// What rank 0 would have sent, kept in memory instead; the bytes of save chunks come from
// `incoming`, as a worker would have sent them after each header.
class InProcessTransport final : public ChunkTransport {
 public:
  void receive_bytes(int worker, const CheckpointChunk& chunk, char* into) override {
    ASSERT_FALSE(incoming[worker].empty()) << "no bytes sent after the header";
    const std::string bytes = std::move(incoming[worker].front());
    incoming[worker].pop_front();
    ASSERT_EQ(static_cast<std::int64_t>(bytes.size()), chunk.size);
    std::memcpy(into, bytes.data(), bytes.size());
  }
  void acknowledge(int worker, const ChunkAck& ack) override { acks.push_back({worker, ack}); }
  void send_restore_chunk(int worker, const CheckpointChunk& chunk, std::string bytes) override {
    EXPECT_EQ(static_cast<std::int64_t>(bytes.size()), chunk.size);
    chunks[worker].push_back({chunk, std::move(bytes)});
  }
  void release(int worker) override { ++released; }
  void wait_delivered() override { ++waits; }

  /// The restore chunks sent to `worker` and not yet taken, oldest first.
  std::deque<Piece> take(int worker) { return std::exchange(chunks[worker], {}); }

  std::map<int, std::deque<std::string>> incoming;
  std::vector<std::pair<int, ChunkAck>> acks;
  std::map<int, std::deque<Piece>> chunks;
  int released = 0;
  int waits = 0;
};

// A distinct byte at (nearly) every offset, so that a chunk in the wrong place shows.
std::string pattern(std::size_t size, unsigned seed) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + seed * 7 + i / 251) & 0xFF);
  return bytes;
}

std::uint32_t crc_of(const std::string& bytes) { return io::crc32c(std::as_bytes(std::span(bytes.data(), bytes.size()))); }

ChunkAck ack_of(const CheckpointChunk& c) { return ChunkAck{c.trial, c.attempt, c.end()}; }

// A checkpoint a worker saves, cut as the worker cuts it.
std::vector<Piece> chunks_of(search::TrialId trial, int attempt, std::int64_t iteration, const std::string& bytes) {
  std::vector<Piece> out;
  for (std::size_t at = 0; at == 0 || at < bytes.size(); at += kCheckpointChunkBytes) {
    Piece p{{trial, attempt, iteration, static_cast<std::int64_t>(bytes.size()), static_cast<std::int64_t>(at)},
            bytes.substr(at, kCheckpointChunkBytes)};
    p.header.size = static_cast<std::int64_t>(p.bytes.size());
    p.header.last = at + p.bytes.size() == bytes.size();
    out.push_back(std::move(p));
  }
  return out;
}

controller::Instruction restore_start(int worker, search::TrialId trial, int attempt, std::int64_t checkpoint) {
  controller::Instruction c{controller::Instruction::Kind::Start};
  c.worker = worker;
  c.trial = trial;
  c.attempt = attempt;
  c.restore_trial = trial;
  c.restore_checkpoint = checkpoint;
  return c;
}

class CheckpointStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("ranktune_stream_test_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    io::StoreMeta meta;
    meta.experiment = "stream";
    meta.metric = "loss";
    meta.mode = search::Mode::Min;
    io::StoreSchema schema;
    schema.metrics = {"loss"};
    writer_ = std::make_unique<io::ResultsWriter>(path(), meta, schema, std::vector<io::WorkerInfo>{});
    for (search::TrialId id = 1; id <= 2; ++id) {
      search::Trial t;
      t.id = id;
      writer_->write_trial(t);
    }
  }
  void TearDown() override {
    writer_.reset();
    fs::remove_all(dir_);
  }
  std::string path() const { return (dir_ / "s.h5").string(); }
  // Hands `piece` to the streams as the driver does: the header, then its bytes.
  void receive(CheckpointStreams& streams, int source, const Piece& piece, double t) {
    transport_.incoming[source].push_back(piece.bytes);
    streams.receive_chunk(source, piece.header, t);
  }

  fs::path dir_;
  std::unique_ptr<io::ResultsWriter> writer_;
  InProcessTransport transport_;
};

TEST_F(CheckpointStreamTest, AMultiChunkSaveIsStoredWithItsCrcOnceTheLastChunkIsWritten) {
  const std::string bytes = pattern(2 * kCheckpointChunkBytes + 1000, 1);
  const auto chunks = chunks_of(1, 0, 7, bytes);
  ASSERT_EQ(chunks.size(), 3u);
  {
    CheckpointStreams streams(*writer_, transport_);
    receive(streams, 3, chunks[0], 1.0);
    receive(streams, 3, chunks[1], 1.5);
    // Acknowledged only once written, which the main thread learns by polling: receiving
    // a chunk never acknowledges it.
    EXPECT_TRUE(transport_.acks.empty());
    const std::vector<StoredCheckpoint> early = streams.drain(2.0);
    EXPECT_TRUE(early.empty());
    ASSERT_EQ(transport_.acks.size(), 2u);
    EXPECT_TRUE(writer_->latest_checkpoints().empty());  // no row before the last chunk
    receive(streams, 3, chunks[2], 2.5);
    const std::vector<StoredCheckpoint> stored = streams.drain(3.0);
    ASSERT_EQ(stored.size(), 1u);
    EXPECT_EQ(stored[0].source, 3);
    EXPECT_EQ(stored[0].trial, 1);
    EXPECT_EQ(stored[0].iteration, 7);
    EXPECT_EQ(stored[0].total, static_cast<std::int64_t>(bytes.size()));
    EXPECT_DOUBLE_EQ(stored[0].began, 1.0);  // when its first chunk came
    // Every chunk acknowledged to its sender, in order, named by its end.
    ASSERT_EQ(transport_.acks.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(transport_.acks[i].first, 3);
      EXPECT_EQ(transport_.acks[i].second.received, ack_of(chunks[i].header).received);
    }
    EXPECT_EQ(writer_->latest_checkpoints(), (std::map<search::TrialId, std::int64_t>{{1, 7}}));
    EXPECT_EQ(writer_->read_checkpoint(1, 7), bytes);
    EXPECT_TRUE(streams.poll(4.0).empty());  // nothing twice
  }
  writer_.reset();
  const io::ResultsFile f = io::ResultsFile::read(path());
  ASSERT_EQ(f.checkpoints.size(), 1u);
  EXPECT_EQ(f.checkpoints[0].size, bytes.size());
  EXPECT_EQ(f.checkpoints[0].crc32c, crc_of(bytes));
  EXPECT_DOUBLE_EQ(f.checkpoints[0].time, 3.0);  // stored when its last chunk was written
}

TEST_F(CheckpointStreamTest, SavesOfTwoWorkersInterleavedArriveIntactAndPollingCatchesUpInOrder) {
  const std::string a = pattern(3 * kCheckpointChunkBytes + 5, 7), b = pattern(kCheckpointChunkBytes + 9, 8);
  const auto ca = chunks_of(1, 0, 2, a), cb = chunks_of(2, 0, 3, b);
  CheckpointStreams streams(*writer_, transport_, /*fsync=*/true);
  receive(streams, 4, ca[0], 1.0);
  receive(streams, 5, cb[0], 1.0);
  receive(streams, 4, ca[1], 1.0);
  receive(streams, 5, cb[1], 1.0);
  receive(streams, 4, ca[2], 1.0);
  receive(streams, 4, ca[3], 1.0);
  // poll() never waits: whatever it finds written now, the rest later, each once.
  std::vector<StoredCheckpoint> stored = streams.poll(2.0);
  for (int spins = 0; transport_.acks.size() < 6 && spins < 10000; ++spins) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (const StoredCheckpoint& c : streams.poll(2.0)) stored.push_back(c);
  }
  ASSERT_EQ(transport_.acks.size(), 6u);
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_EQ(stored[0].trial, 2);  // its last chunk was written first
  EXPECT_EQ(stored[1].trial, 1);
  // Each worker's acks in the order of its chunks.
  std::map<int, std::vector<std::int64_t>> acked;
  for (const auto& [worker, ack] : transport_.acks) acked[worker].push_back(ack.received);
  EXPECT_EQ(acked[4], (std::vector<std::int64_t>{ca[0].header.end(), ca[1].header.end(), ca[2].header.end(),
                                                 ca[3].header.end()}));
  EXPECT_EQ(acked[5], (std::vector<std::int64_t>{cb[0].header.end(), cb[1].header.end()}));
  EXPECT_EQ(writer_->read_checkpoint(1, 2), a);
  EXPECT_EQ(writer_->read_checkpoint(2, 3), b);
}

TEST_F(CheckpointStreamTest, AWorkerMayBeginItsNextCheckpointBeforeTheLastIsWritten) {
  // A worker does not wait for the acks of its last chunks: with a checkpoint at every
  // iteration, the next one begins while the writer thread still has the one before.
  CheckpointStreams streams(*writer_, transport_);
  const std::string first = pattern(1000, 11), second = pattern(2000, 12);
  receive(streams, 3, chunks_of(1, 0, 1, first)[0], 1.0);
  receive(streams, 3, chunks_of(1, 0, 2, second)[0], 1.1);
  const std::vector<StoredCheckpoint> stored = streams.drain(2.0);
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_EQ(stored[0].iteration, 1);
  EXPECT_EQ(stored[1].iteration, 2);
  EXPECT_EQ(writer_->read_checkpoint(1, 1), first);
  EXPECT_EQ(writer_->read_checkpoint(1, 2), second);
}

TEST_F(CheckpointStreamTest, WrittenFromStoresOneWorkersCheckpointBeforeItsNextMessageIsHandled) {
  const std::string a = pattern(kCheckpointChunkBytes + 3, 9), b = pattern(2 * kCheckpointChunkBytes, 10);
  const auto ca = chunks_of(1, 0, 5, a), cb = chunks_of(2, 0, 6, b);
  CheckpointStreams streams(*writer_, transport_);
  EXPECT_TRUE(streams.written_from(4, 1.0).empty());  // nothing queued: at once
  receive(streams, 5, cb[0], 1.0);
  receive(streams, 4, ca[0], 1.0);
  receive(streams, 4, ca[1], 1.0);
  // Worker 4's Ended arrives now: its checkpoint is written, stored and acknowledged first.
  const std::vector<StoredCheckpoint> stored = streams.written_from(4, 2.0);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].source, 4);
  EXPECT_EQ(stored[0].trial, 1);
  EXPECT_EQ(writer_->latest_checkpoints(), (std::map<search::TrialId, std::int64_t>{{1, 5}}));
  std::vector<std::int64_t> acked4;
  for (const auto& [worker, ack] : transport_.acks)
    if (worker == 4) acked4.push_back(ack.received);
  EXPECT_EQ(acked4, (std::vector<std::int64_t>{ca[0].header.end(), ca[1].header.end()}));
  // Worker 5's stream goes on.
  receive(streams, 5, cb[1], 3.0);
  const std::vector<StoredCheckpoint> later = streams.drain(3.0);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].trial, 2);
  EXPECT_EQ(writer_->read_checkpoint(2, 6), b);
}

TEST_F(CheckpointStreamTest, ARestoreStaysWithinTheWindowOfTwoAndArrivesIntact) {
  ASSERT_EQ(kCheckpointWindow, 2);
  const std::string first = pattern(3 * kCheckpointChunkBytes + 17, 2), second = pattern(5000, 3);
  writer_->append_checkpoint(1, 0, 4, 1.0, first);
  writer_->append_checkpoint(2, 0, 9, 1.0, second);
  CheckpointStreams streams(*writer_, transport_);
  // Two restores for worker 2: the second streams only after the first (one tag per pair).
  EXPECT_TRUE(streams.restore(restore_start(2, 1, 1, 4), writer_->open_checkpoint(1, 4)).empty());
  EXPECT_TRUE(streams.restore(restore_start(2, 2, 1, 9), writer_->open_checkpoint(2, 9)).empty());

  std::string got_first, got_second;
  int chunks = 0;
  for (std::deque<Piece> out = transport_.take(2); !out.empty(); out = transport_.take(2)) {
    // Never more than the window unacknowledged.
    EXPECT_LE(out.size(), 2u);
    for (const Piece& p : out) {
      const CheckpointChunk& c = p.header;
      ++chunks;
      EXPECT_FALSE(c.aborted);
      std::string& got = c.trial == 1 ? got_first : got_second;
      if (c.trial == 2) {
        EXPECT_EQ(got_first.size(), first.size()) << "the second restore began before the first ended";
      }
      EXPECT_EQ(c.offset, static_cast<std::int64_t>(got.size()));
      EXPECT_EQ(c.total, static_cast<std::int64_t>(c.trial == 1 ? first.size() : second.size()));
      got += p.bytes;
      EXPECT_EQ(c.last, got.size() == static_cast<std::size_t>(c.total));
    }
    // The worker acknowledges one chunk at a time: each ack lets exactly one more go.
    for (const Piece& p : out) EXPECT_TRUE(streams.acknowledged(2, ack_of(p.header)).empty());
  }
  EXPECT_EQ(chunks, 5);  // 4 of the first, 1 of the second
  EXPECT_EQ(got_first, first);
  EXPECT_EQ(crc_of(got_first), crc_of(first));
  EXPECT_EQ(got_second, second);
  EXPECT_EQ(transport_.released, 5);
  streams.close();
  EXPECT_EQ(transport_.waits, 1);
}

TEST_F(CheckpointStreamTest, AStreamEndedAtShutdownIsAbortedAndAnUnfinishedSaveLeavesNoRow) {
  const std::string bytes = pattern(3 * kCheckpointChunkBytes, 4);
  writer_->append_checkpoint(1, 0, 4, 1.0, bytes);
  {
    CheckpointStreams streams(*writer_, transport_);
    streams.restore(restore_start(5, 1, 1, 4), writer_->open_checkpoint(1, 4));
    // A save from worker 6 that the run stops in the middle of.
    const auto save = chunks_of(2, 0, 3, pattern(2 * kCheckpointChunkBytes, 5));
    receive(streams, 6, save[0], 2.0);

    std::deque<Piece> sent = transport_.take(5);
    ASSERT_EQ(sent.size(), 2u);
    streams.abort_restores();
    const std::deque<Piece> aborted = transport_.take(5);
    ASSERT_EQ(aborted.size(), 1u);
    EXPECT_TRUE(aborted[0].header.aborted);
    EXPECT_EQ(aborted[0].header.trial, 1);
    EXPECT_EQ(aborted[0].header.attempt, 1);
    EXPECT_EQ(aborted[0].header.offset, static_cast<std::int64_t>(2 * kCheckpointChunkBytes));  // where it stopped
    EXPECT_TRUE(aborted[0].bytes.empty());
    // The chunks sent before are still acknowledged; nothing more goes out.
    for (const Piece& p : sent) streams.acknowledged_at_shutdown(5, ack_of(p.header));
    EXPECT_TRUE(transport_.take(5).empty());
    // What was received before the shutdown is written and acknowledged first; the save's
    // next chunk is then received, acknowledged (its worker waits for that) and thrown away.
    EXPECT_TRUE(streams.drain(3.0).empty());
    ASSERT_EQ(transport_.acks.size(), 1u);
    transport_.incoming[6].push_back(save[1].bytes);
    streams.discard_chunk(6, save[1].header);
    EXPECT_TRUE(transport_.incoming[6].empty());  // its bytes were taken off the wire
    ASSERT_EQ(transport_.acks.size(), 2u);
    EXPECT_EQ(transport_.acks.back().second.received, ack_of(save[1].header).received);
    streams.close();
  }
  EXPECT_EQ(writer_->latest_checkpoints(), (std::map<search::TrialId, std::int64_t>{{1, 4}}));
  writer_.reset();
  const io::ResultsFile f = io::ResultsFile::read(path());
  ASSERT_EQ(f.checkpoints.size(), 1u);  // the restored one; the unfinished save has no row
  EXPECT_EQ(f.checkpoints[0].trial, 1);
}

TEST_F(CheckpointStreamTest, ChunksOutOfOrderAndStrayAcksAreProtocolErrors) {
  CheckpointStreams streams(*writer_, transport_);
  const auto save = chunks_of(1, 0, 2, pattern(2 * kCheckpointChunkBytes + 10, 6));
  EXPECT_THROW(streams.receive_chunk(2, save[1].header, 1.0), MpiError);  // without its beginning
  receive(streams, 2, save[0], 1.0);
  EXPECT_THROW(streams.receive_chunk(2, chunks_of(2, 0, 2, "x")[0].header, 1.0), MpiError);  // another before it ended
  EXPECT_THROW(streams.receive_chunk(2, save[2].header, 1.0), MpiError);  // skips a chunk
  CheckpointChunk oversized = save[1].header;
  oversized.size = static_cast<std::int64_t>(kCheckpointChunkBytes) + 1;  // more than a buffer holds
  EXPECT_THROW(streams.receive_chunk(2, oversized, 1.0), MpiError);
  EXPECT_THROW(streams.acknowledged(4, ChunkAck{1, 0, 10}), MpiError);  // no restore to rank 4
  writer_->append_checkpoint(2, 0, 5, 1.0, "abc");
  streams.restore(restore_start(3, 2, 1, 5), writer_->open_checkpoint(2, 5));
  EXPECT_THROW(streams.acknowledged(3, ChunkAck{2, 1, 2}), MpiError);  // not the end of the chunk sent
}

// ------------------------------------------------------------------ the writer thread

TEST(WriteThread, RunsJobsInOrderOffTheCallersThreadAndCountsThemOnce) {
  WriteThread writes;
  std::vector<int> order;
  std::atomic<bool> elsewhere{true};
  const auto caller = std::this_thread::get_id();
  for (int i = 0; i < 50; ++i)
    writes.submit([&order, &elsewhere, caller, i] {
      if (std::this_thread::get_id() == caller) elsewhere = false;
      order.push_back(i);
    });
  EXPECT_EQ(writes.wait_done(), 50u);
  EXPECT_EQ(writes.take_done(), 0u);
  EXPECT_EQ(writes.busy(), 0u);
  EXPECT_TRUE(elsewhere);
  std::vector<int> expected(50);
  for (int i = 0; i < 50; ++i) expected[static_cast<std::size_t>(i)] = i;
  EXPECT_EQ(order, expected);
}

TEST(WriteThread, AJobsErrorReachesTheCallerAsItsOwnTypeAndNoLaterJobRuns) {
  WriteThread writes;
  std::atomic<int> ran{0};
  writes.submit([&] { ++ran; });
  writes.submit([] { throw io::DiskFullError("the file system of /x is full"); });
  writes.submit([&] { ran += 10; });
  // The job before the error is counted first; the error comes on the next look.
  EXPECT_EQ(writes.wait_done(), 1u);
  try {
    writes.take_done();
    ADD_FAILURE() << "the job's error was not rethrown";
  } catch (const io::DiskFullError& e) {
    EXPECT_STREQ(e.what(), "the file system of /x is full");
  }
  EXPECT_THROW(writes.wait_done(), io::DiskFullError);  // and stays
  EXPECT_EQ(ran, 1);
}

TEST(WriteThread, ItsDestructorLetsTheRunningJobEndAndDropsTheQueuedOnes) {
  std::atomic<int> ran{0};
  std::atomic<bool> started{false}, release{false};
  std::thread releaser;
  {
    WriteThread writes;
    writes.submit([&] {
      started = true;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++ran;
    });
    for (int i = 0; i < 5; ++i) writes.submit([&] { ran += 100; });
    while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(writes.busy(), 6u);
    releaser = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      release = true;
    });
  }  // joins: the running job ends, the queued ones never start
  releaser.join();
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace ranktune::mpi
