// The wire's encoding (mpi/codec.h): every message type survives a round trip through it,
// and bytes that are not a whole message of the type expected are refused with why, never
// read past their end or taken for a huge allocation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "mpi/codec.h"
#include "mpi/wire.h"

using namespace ranktune;
using namespace ranktune::mpi;

namespace {

template <class T>
T round_trip(const T& msg) {
  std::vector<char> bytes;
  encode(msg, bytes);
  return decode<T>(bytes.data(), bytes.size());
}

std::string refusal(const std::vector<char>& bytes) {
  try {
    (void)decode<Start>(bytes.data(), bytes.size());
  } catch (const WireFormatError& e) {
    return e.what();
  }
  return "";
}

Start a_start() {
  Start s;
  s.trial = 1234567890123;
  s.attempt = 3;
  s.config = {{"lr", 1e-3}, {"layers", std::int64_t{4}}, {"act", std::string("relu")}, {"nan", NAN}};
  s.until = 64;
  s.iterations = 12;
  s.restore = true;
  s.checkpoint_size = std::int64_t{5} << 32;
  s.checkpoint_crc32c = 0xdeadbeef;
  s.gang = {1, 5, 9};
  s.cause = "exploit of trial 7 at its iteration 12";
  return s;
}

}  // namespace

TEST(Codec, StartSurvivesWithEveryFieldAndTheConfigsTypes) {
  const Start s = a_start();
  const Start back = round_trip(s);
  EXPECT_EQ(back.trial, s.trial);
  EXPECT_EQ(back.attempt, s.attempt);
  ASSERT_EQ(back.config.size(), 4u);
  EXPECT_EQ(std::get<double>(back.config.at("lr")), 1e-3);
  EXPECT_EQ(std::get<std::int64_t>(back.config.at("layers")), 4) << "an integer stays an integer";
  EXPECT_EQ(std::get<std::string>(back.config.at("act")), "relu");
  EXPECT_TRUE(std::isnan(std::get<double>(back.config.at("nan"))));
  EXPECT_EQ(back.until, s.until);
  EXPECT_EQ(back.iterations, s.iterations);
  EXPECT_EQ(back.restore, s.restore);
  EXPECT_EQ(back.checkpoint_size, s.checkpoint_size);
  EXPECT_EQ(back.checkpoint_crc32c, s.checkpoint_crc32c);
  EXPECT_EQ(back.gang, s.gang);
  EXPECT_EQ(back.cause, s.cause);
}

TEST(Codec, EveryOtherMessageSurvives) {
  const Result r = round_trip(Result{7, 1, 42, {{"loss", 0.5}, {"acc", -INFINITY}}});
  EXPECT_EQ(r.trial, 7);
  EXPECT_EQ(r.iteration, 42);
  EXPECT_EQ(r.metrics, (search::Metrics{{"loss", 0.5}, {"acc", -INFINITY}}));
  const Decision d = round_trip(Decision{7, 1, Decision::Pause, 80, true, true});
  EXPECT_EQ(d.kind, Decision::Pause);
  EXPECT_EQ(d.until, 80);
  EXPECT_TRUE(d.save && d.failed);
  const Ended e = round_trip(Ended{7, 1, true, "exit 3", std::string(100000, 'x')});
  EXPECT_TRUE(e.failed);
  EXPECT_EQ(e.reason, "exit 3");
  EXPECT_EQ(e.log_tail.size(), 100000u);
  const Placed p = round_trip(Placed{7, 1, "cuda:3", 8, "nccl"});
  EXPECT_EQ(p.path, "cuda:3");
  EXPECT_EQ(p.threads, 8);
  EXPECT_EQ(p.collective, "nccl");
  const Hello h = round_trip(Hello{kWireVersion, "node7", 2, "cpu", "AMD EPYC"});
  EXPECT_EQ(h.wire_version, kWireVersion);
  EXPECT_EQ(h.host, "node7");
  EXPECT_EQ(h.device_name, "AMD EPYC");
  const CheckpointChunk c = round_trip(CheckpointChunk{7, 1, 12, 1 << 30, 4 << 20, 4 << 20, false, true});
  EXPECT_EQ(c.total, 1 << 30);
  EXPECT_EQ(c.offset, 4 << 20);
  EXPECT_TRUE(c.aborted);
  EXPECT_FALSE(c.last);
  EXPECT_EQ(round_trip(ChunkAck{7, 1, 123}).received, 123);
  EXPECT_EQ(round_trip(LogTail{7, 1, "tail"}).log_tail, "tail");
  const Notice n = round_trip(Notice{7, 1, search::EventKind::Warning, "killed with SIGKILL"});
  EXPECT_EQ(n.kind, search::EventKind::Warning);
  EXPECT_EQ(n.message, "killed with SIGKILL");
  std::vector<char> empty;
  encode(Empty{}, empty);
  EXPECT_TRUE(empty.empty());
}

TEST(Codec, EveryCutOfAMessageIsRefused) {
  std::vector<char> bytes;
  encode(a_start(), bytes);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    const std::vector<char> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_NE(refusal(cut), "") << "a Start cut at byte " << n << " of " << bytes.size() << " decoded";
  }
  std::vector<char> longer = bytes;
  longer.push_back('\0');
  EXPECT_NE(refusal(longer).find("1 bytes follow the end of the message"), std::string::npos) << refusal(longer);
}

TEST(Codec, HugeCountsBadFlagsAndBadAlternativesAreRefused) {
  std::vector<char> bytes;
  encode(a_start(), bytes);
  // The config's count follows trial (8 bytes) and attempt (4): announce 2^60 entries.
  std::vector<char> huge = bytes;
  const std::uint64_t n = std::uint64_t{1} << 60;
  std::memcpy(huge.data() + 12, &n, sizeof n);
  EXPECT_NE(refusal(huge).find("announces"), std::string::npos) << refusal(huge);

  // A flag that is neither 0 nor 1: Decision's last byte is `failed`.
  std::vector<char> d;
  encode(Decision{1, 0, Decision::Stop}, d);
  d.back() = 7;
  try {
    (void)decode<Decision>(d.data(), d.size());
    ADD_FAILURE() << "a flag of 7 decoded";
  } catch (const WireFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("neither 0 nor 1"), std::string::npos) << e.what();
  }

  // A config value whose alternative index is past the variant's: the first entry's key is
  // "act" (8-byte count + 3 bytes after the map's count), then the index.
  std::vector<char> bad = bytes;
  bad[12 + 8 + 8 + 3] = 9;
  EXPECT_NE(refusal(bad).find("alternative 9"), std::string::npos) << refusal(bad);
}
