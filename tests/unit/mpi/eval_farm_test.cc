// The pure parts of a parallel `ranktune eval` (mpi/eval_farm.h): an evaluation crosses
// between ranks with every bit of its figures and the types of its manifest's numbers, damaged
// bytes are refused, and rank 0's turns never let a timed phase share its node.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "mpi/codec.h"
#include "mpi/eval_farm.h"

using namespace ranktune;
using namespace ranktune::mpi;

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

eval::LeaderEvaluation sample() {
  eval::LeaderEvaluation e;
  e.path = "cuda:1";
  e.threads = 3;
  e.metrics["test_accuracy"] = 0.1 + 0.2;  // not a short decimal
  e.metrics["test_loss"] = std::numeric_limits<double>::quiet_NaN();
  e.metrics["zero"] = -0.0;
  e.metrics["tiny"] = std::numeric_limits<double>::denorm_min();
  e.samples = 10000;
  e.latency.push_back({1, 20, 1e-4, 9e-5, 1.1e-4, 3e-4, 4e-4, 10000.5});
  e.latency.push_back({128, 21, 2e-3, 1.9e-3, 2.2e-3, 3e-3, 5e-3, 64000.25});
  e.latency[1].pre = {1e-4, 2e-4, 3e-4};
  e.latency[1].inference = {1.5e-3, 1.6e-3, 1.7e-3};  // post stays NaN: not measured
  e.latency[1].trace = {{0, 0.0, 2e-3, 1e-4, 1.5e-3, 4e-4}, {20, 0.05, 5e-3, 2e-4, 4.5e-3, 3e-4}};
  e.confusion = {5, 1, 0, 4};
  e.classes = 2;
  e.seconds = 1.25;
  e.manifest = {{"trial", 7}, {"big", std::uint64_t{1} << 63}, {"negative", -3}, {"lr", 0.1},
                {"name", "trial \xc3\xa9"}, {"none", nullptr}, {"list", {1, 2.5, "x"}}};
  return e;
}

TEST(EvalFarmCodec, AnEvaluationCrossesBitForBit) {
  const eval::LeaderEvaluation in = sample();
  const eval::LeaderEvaluation out = decode_evaluation(encode_evaluation(in));
  EXPECT_EQ(out.path, in.path);
  EXPECT_EQ(out.threads, in.threads);
  EXPECT_EQ(out.samples, in.samples);
  EXPECT_TRUE(same_bits(out.seconds, in.seconds));
  ASSERT_EQ(out.metrics.size(), in.metrics.size());
  for (const auto& [name, value] : in.metrics) EXPECT_TRUE(same_bits(out.metrics.at(name), value)) << name;
  ASSERT_EQ(out.latency.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const eval::LatencyStats &a = in.latency[i], &b = out.latency[i];
    EXPECT_EQ(b.batch_size, a.batch_size);
    EXPECT_EQ(b.batches, a.batches);
    for (auto field : {&eval::LatencyStats::mean_s, &eval::LatencyStats::p50_s, &eval::LatencyStats::p90_s,
                       &eval::LatencyStats::p99_s, &eval::LatencyStats::max_s, &eval::LatencyStats::samples_per_s})
      EXPECT_TRUE(same_bits(b.*field, a.*field));
  }
  // The split, the trace and the confusion matrix (issue 31's later fields) cross too.
  for (std::size_t i = 0; i < 2; ++i) {
    const eval::LatencyStats &a = in.latency[i], &b = out.latency[i];
    for (auto part : {&eval::LatencyStats::pre, &eval::LatencyStats::inference, &eval::LatencyStats::post})
      for (auto q : {&eval::LatencyPart::p50_s, &eval::LatencyPart::p90_s, &eval::LatencyPart::p99_s})
        EXPECT_TRUE(same_bits((b.*part).*q, (a.*part).*q));
    ASSERT_EQ(b.trace.size(), a.trace.size());
    for (std::size_t k = 0; k < a.trace.size(); ++k) {
      EXPECT_EQ(b.trace[k].batch, a.trace[k].batch);
      for (auto f : {&eval::BatchTime::start_s, &eval::BatchTime::total_s, &eval::BatchTime::pre_s,
                     &eval::BatchTime::inference_s, &eval::BatchTime::post_s})
        EXPECT_TRUE(same_bits(b.trace[k].*f, a.trace[k].*f));
    }
  }
  EXPECT_EQ(out.confusion, in.confusion);
  EXPECT_EQ(out.classes, 2);
  EXPECT_EQ(out.manifest, in.manifest);
  // The types of numbers too: an integer stays one (its text in the record is "7", not "7.0").
  EXPECT_TRUE(out.manifest["trial"].is_number_integer());
  EXPECT_TRUE(out.manifest["big"].is_number_unsigned());
  EXPECT_TRUE(out.manifest["lr"].is_number_float());
  EXPECT_EQ(out.manifest.dump(), in.manifest.dump());
  // Not a text form, which has no NaN (nlohmann writes null).
  eval::LeaderEvaluation odd;
  odd.manifest = {{"nan", std::numeric_limits<double>::quiet_NaN()}};
  const nlohmann::json back = decode_evaluation(encode_evaluation(odd)).manifest;
  EXPECT_TRUE(back["nan"].is_number_float() && std::isnan(back["nan"].get<double>())) << back.dump();
}

TEST(EvalFarmCodec, DamagedBytesAreRefused) {
  const std::vector<char> bytes = encode_evaluation(sample());
  for (std::size_t cut : {std::size_t{0}, std::size_t{5}, bytes.size() / 2, bytes.size() - 1}) {
    const std::vector<char> short_bytes(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
    EXPECT_THROW(decode_evaluation(short_bytes), WireFormatError) << cut;
  }
  std::vector<char> longer = bytes;
  longer.push_back('x');
  EXPECT_THROW(decode_evaluation(longer), WireFormatError);
  // A latency count that the bytes cannot hold is refused before anything is allocated.
  eval::LeaderEvaluation none;
  std::vector<char> huge = encode_evaluation(none);
  // The latency count, before the confusion cells' count, the classes and the (1-byte CBOR)
  // manifest with its length.
  const std::size_t at = huge.size() - 3 * sizeof(std::uint64_t) - sizeof(int) - 1;
  const std::uint64_t count = std::uint64_t{1} << 60;
  std::memcpy(huge.data() + at, &count, sizeof count);
  try {
    decode_evaluation(huge);
    FAIL() << "a huge latency count was taken";
  } catch (const WireFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("too many latencies"), std::string::npos) << e.what();
  }
}

TEST(EvalFarmTurns, ComputeTurnsShareTheNode) {
  NodeTurns node;
  node.ask(1, false);
  node.ask(2, false);
  EXPECT_EQ(node.grant(), (std::vector<int>{1, 2}));
  EXPECT_TRUE(node.grant().empty());
}

TEST(EvalFarmTurns, ATimingTurnWaitsForComputeAndHoldsBackLaterRequests) {
  NodeTurns node;
  node.ask(1, false);
  EXPECT_EQ(node.grant(), std::vector<int>{1});
  node.ask(2, true);   // must wait for 1
  node.ask(3, false);  // must not overtake 2
  EXPECT_TRUE(node.grant().empty());
  node.give_back(1);
  EXPECT_EQ(node.grant(), std::vector<int>{2});  // alone now; 3 still waits
  node.ask(1, true);
  EXPECT_TRUE(node.grant().empty());
  node.give_back(2);
  EXPECT_EQ(node.grant(), std::vector<int>{3});  // first come: 3 before the second timing
  node.give_back(3);
  EXPECT_EQ(node.grant(), std::vector<int>{1});
  node.ask(2, false);
  EXPECT_TRUE(node.grant().empty());  // nothing beside a timing turn
  node.give_back(1);
  EXPECT_EQ(node.grant(), std::vector<int>{2});
}

TEST(EvalFarmTurns, GivingBackNothingChangesNothing) {
  NodeTurns node;
  node.give_back(4);  // a Done of a worker that held no turn
  node.ask(1, true);
  EXPECT_EQ(node.grant(), std::vector<int>{1});
  node.give_back(4);
  node.ask(2, false);
  EXPECT_TRUE(node.grant().empty());  // 1 still times
  node.give_back(1);
  node.give_back(1);  // twice: the second is nothing
  EXPECT_EQ(node.grant(), std::vector<int>{2});
}

}  // namespace
