// mpi/checkpoint_stream.h without MPI: rank 0's checkpoint streams driven through an
// in-process transport, against a real results file. A save of several chunks, a restore
// within the window of kCheckpointWindow (2) chunks, streams that end early, and protocol
// errors; the bytes and their CRC-32C must arrive intact.

#include "mpi/checkpoint_stream.h"

#include <unistd.h>

#include <deque>
#include <filesystem>
#include <memory>
#include <span>

#include <gtest/gtest.h>

#include "io/crc32c.h"
#include "mpi/errors.h"

namespace ranktune::mpi {
namespace {

namespace fs = std::filesystem;

// What rank 0 would have sent, kept in memory instead.
class InProcessTransport final : public ChunkTransport {
 public:
  void acknowledge(int worker, const ChunkAck& ack) override { acks.push_back({worker, ack}); }
  void send_restore_chunk(int worker, const CheckpointChunk& chunk) override { chunks[worker].push_back(chunk); }
  void release(int worker) override { ++released; }
  void wait_delivered() override { ++waits; }

  /// The restore chunks sent to `worker` and not yet taken, oldest first.
  std::deque<CheckpointChunk> take(int worker) { return std::exchange(chunks[worker], {}); }

  std::vector<std::pair<int, ChunkAck>> acks;
  std::map<int, std::deque<CheckpointChunk>> chunks;
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

ChunkAck ack_of(const CheckpointChunk& c) {
  return ChunkAck{c.trial, c.attempt, c.offset + static_cast<std::int64_t>(c.bytes.size())};
}

// A checkpoint a worker saves, cut as the worker cuts it.
std::vector<CheckpointChunk> chunks_of(search::TrialId trial, int attempt, std::int64_t iteration, const std::string& bytes) {
  std::vector<CheckpointChunk> out;
  for (std::size_t at = 0; at == 0 || at < bytes.size(); at += kCheckpointChunkBytes) {
    CheckpointChunk c{trial, attempt, iteration, static_cast<std::int64_t>(bytes.size()), static_cast<std::int64_t>(at)};
    c.bytes = bytes.substr(at, kCheckpointChunkBytes);
    c.last = at + c.bytes.size() == bytes.size();
    out.push_back(std::move(c));
  }
  return out;
}

search::Command restore_start(int worker, search::TrialId trial, int attempt, std::int64_t checkpoint) {
  search::Command c{search::Command::Kind::Start};
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

  fs::path dir_;
  std::unique_ptr<io::ResultsWriter> writer_;
  InProcessTransport transport_;
};

TEST_F(CheckpointStreamTest, AMultiChunkSaveIsStoredWithItsCrcOnceTheLastChunkIsIn) {
  const std::string bytes = pattern(2 * kCheckpointChunkBytes + 1000, 1);
  const auto chunks = chunks_of(1, 0, 7, bytes);
  ASSERT_EQ(chunks.size(), 3u);
  {
    CheckpointStreams streams(*writer_, transport_);
    EXPECT_FALSE(streams.store_chunk(3, chunks[0], 1.0));
    EXPECT_FALSE(streams.store_chunk(3, chunks[1], 1.5));
    EXPECT_TRUE(writer_->latest_checkpoints().empty());  // no row before the last chunk
    const std::optional<double> began = streams.store_chunk(3, chunks[2], 2.5);
    ASSERT_TRUE(began);
    EXPECT_DOUBLE_EQ(*began, 1.0);  // when its first chunk came
    // Every chunk acknowledged to its sender, named by its end.
    ASSERT_EQ(transport_.acks.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(transport_.acks[i].first, 3);
      EXPECT_EQ(transport_.acks[i].second.received, ack_of(chunks[i]).received);
    }
    EXPECT_EQ(writer_->latest_checkpoints(), (std::map<search::TrialId, std::int64_t>{{1, 7}}));
    EXPECT_EQ(writer_->read_checkpoint(1, 7), bytes);
  }
  writer_.reset();
  const io::ResultsFile f = io::ResultsFile::read(path());
  ASSERT_EQ(f.checkpoints.size(), 1u);
  EXPECT_EQ(f.checkpoints[0].size, bytes.size());
  EXPECT_EQ(f.checkpoints[0].crc32c, crc_of(bytes));
  EXPECT_DOUBLE_EQ(f.checkpoints[0].time, 2.5);
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
  for (std::deque<CheckpointChunk> out = transport_.take(2); !out.empty(); out = transport_.take(2)) {
    // Never more than the window unacknowledged.
    EXPECT_LE(out.size(), 2u);
    for (const CheckpointChunk& c : out) {
      ++chunks;
      EXPECT_FALSE(c.aborted);
      std::string& got = c.trial == 1 ? got_first : got_second;
      if (c.trial == 2) {
        EXPECT_EQ(got_first.size(), first.size()) << "the second restore began before the first ended";
      }
      EXPECT_EQ(c.offset, static_cast<std::int64_t>(got.size()));
      EXPECT_EQ(c.total, static_cast<std::int64_t>(c.trial == 1 ? first.size() : second.size()));
      got += c.bytes;
      EXPECT_EQ(c.last, got.size() == static_cast<std::size_t>(c.total));
    }
    // The worker acknowledges one chunk at a time: each ack lets exactly one more go.
    for (const CheckpointChunk& c : out) EXPECT_TRUE(streams.acknowledged(2, ack_of(c)).empty());
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
    EXPECT_FALSE(streams.store_chunk(6, save[0], 2.0));

    std::deque<CheckpointChunk> sent = transport_.take(5);
    ASSERT_EQ(sent.size(), 2u);
    streams.abort_restores();
    const std::deque<CheckpointChunk> aborted = transport_.take(5);
    ASSERT_EQ(aborted.size(), 1u);
    EXPECT_TRUE(aborted[0].aborted);
    EXPECT_EQ(aborted[0].trial, 1);
    EXPECT_EQ(aborted[0].attempt, 1);
    EXPECT_EQ(aborted[0].offset, static_cast<std::int64_t>(2 * kCheckpointChunkBytes));  // where it stopped
    EXPECT_TRUE(aborted[0].bytes.empty());
    // The chunks sent before are still acknowledged; nothing more goes out.
    for (const CheckpointChunk& c : sent) streams.acknowledged_at_shutdown(5, ack_of(c));
    EXPECT_TRUE(transport_.take(5).empty());
    // The save's next chunk is acknowledged (its worker waits for that) and thrown away.
    const std::size_t acks = transport_.acks.size();
    streams.discard_chunk(6, save[1]);
    ASSERT_EQ(transport_.acks.size(), acks + 1);
    EXPECT_EQ(transport_.acks.back().second.received, ack_of(save[1]).received);
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
  const auto save = chunks_of(1, 0, 2, pattern(kCheckpointChunkBytes + 10, 6));
  EXPECT_THROW(streams.store_chunk(2, save[1], 1.0), MpiError);  // without its beginning
  EXPECT_FALSE(streams.store_chunk(2, save[0], 1.0));
  EXPECT_THROW(streams.store_chunk(2, chunks_of(2, 0, 2, "x")[0], 1.0), MpiError);  // another before it ended
  EXPECT_THROW(streams.acknowledged(4, ChunkAck{1, 0, 10}), MpiError);            // no restore to rank 4
  writer_->append_checkpoint(2, 0, 5, 1.0, "abc");
  streams.restore(restore_start(3, 2, 1, 5), writer_->open_checkpoint(2, 5));
  EXPECT_THROW(streams.acknowledged(3, ChunkAck{2, 1, 2}), MpiError);  // not the end of the chunk sent
}

}  // namespace
}  // namespace ranktune::mpi
