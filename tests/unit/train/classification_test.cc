// Held-out classification metrics and input casts (train/classification.h), against values
// worked out by hand.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "train/classification.h"

namespace ranktune::train {
namespace {

TEST(Classification, LossTopKAndConfusionByHand) {
  ClassificationMetrics m(3, {1, 2, 3});
  // Sample 1: label 0, logits (2, 1, 0): right at top-1.
  // Sample 2: label 2, logits (0, 3, 1): rank 1 (class 1 is larger), so right at top-2.
  // Sample 3: label 1, logits (5, 5, 5): a three-way tie goes to the lower class, so class 1
  // ranks second (class 0 is equal and before it); predicted 0.
  m.add(std::vector<float>{2, 1, 0, 0, 3, 1, 5, 5, 5}, std::vector<std::uint8_t>{0, 2, 1});
  EXPECT_EQ(m.samples(), 3);
  EXPECT_DOUBLE_EQ(m.accuracy(), 1.0 / 3);
  EXPECT_DOUBLE_EQ(m.top_k_accuracy(0), 1.0 / 3);
  EXPECT_DOUBLE_EQ(m.top_k_accuracy(1), 1.0);
  EXPECT_DOUBLE_EQ(m.top_k_accuracy(2), 1.0);
  const auto xent = [](double a, double b, double c, double y) {
    return std::log(std::exp(a) + std::exp(b) + std::exp(c)) - y;
  };
  EXPECT_NEAR(m.loss(), (xent(2, 1, 0, 2) + xent(0, 3, 1, 1) + xent(5, 5, 5, 5)) / 3, 1e-6);
  // Row = true label, column = predicted.
  EXPECT_EQ(m.confusion(), (std::vector<std::int64_t>{1, 0, 0,  //
                                                      1, 0, 0,  //
                                                      0, 1, 0}));
  // Batches add up.
  m.add(std::vector<float>{0, 0, 9}, std::vector<std::uint8_t>{2});
  EXPECT_EQ(m.samples(), 4);
  EXPECT_DOUBLE_EQ(m.accuracy(), 0.5);
  EXPECT_EQ(m.confusion()[8], 1);
}

TEST(Classification, BadInputIsRefused) {
  EXPECT_THROW(ClassificationMetrics(0, {}), std::invalid_argument);
  EXPECT_THROW(ClassificationMetrics(3, {0}), std::invalid_argument);
  ClassificationMetrics m(2, {});
  EXPECT_THROW(m.add(std::vector<float>{1, 2, 3}, std::vector<std::uint8_t>{0}), std::invalid_argument);
  EXPECT_THROW(m.add(std::vector<float>{1, 2}, std::vector<std::uint8_t>{2}), std::invalid_argument);
}

TEST(InputCast, Float16RoundsToNearestEven) {
  EXPECT_EQ(round_to_float16(1.0f), 1.0f);
  EXPECT_EQ(round_to_float16(1.0f / 3), 0.333251953125f);  // 0x3555
  EXPECT_EQ(round_to_float16(200.0f / 255), 0.784179688f);  // numpy: float16(200/255)
  EXPECT_EQ(round_to_float16(2049.0f), 2048.0f);            // a tie: to the even 2048
  EXPECT_EQ(round_to_float16(2051.0f), 2052.0f);            // a tie: to the even 2052
  EXPECT_EQ(round_to_float16(65504.0f), 65504.0f);          // the largest half
  EXPECT_TRUE(std::isinf(round_to_float16(65520.0f)));
  EXPECT_EQ(round_to_float16(65519.0f), 65504.0f);
  EXPECT_EQ(round_to_float16(std::ldexp(1.0f, -24)), std::ldexp(1.0f, -24));  // the smallest subnormal
  EXPECT_EQ(round_to_float16(std::ldexp(1.0f, -26)), 0.0f);
  EXPECT_EQ(round_to_float16(-0.1f), -0.0999755859375f);
}

// The rounding by its definition, slowly: the nearest multiple of the spacing at x's binade.
float float16_by_definition(float x) {
  if (!std::isfinite(x) || x == 0.0f) return x;
  const float a = std::fabs(x);
  if (a >= 65520.0f) return std::copysign(INFINITY, x);
  int e = 0;
  std::frexp(a, &e);
  const float step = std::ldexp(1.0f, std::max(e - 1, -14) - 10);
  return std::copysign(std::nearbyint(a / step) * step, x);
}

TEST(InputCast, Float16AgreesWithItsDefinitionEverywhere) {
  // Every pixel value of both pipelines, then a sweep of bit patterns across the range.
  for (int v = 0; v < 256; ++v) {
    EXPECT_EQ(round_to_float16(static_cast<float>(v) * (1.0f / 255.0f)),
              float16_by_definition(static_cast<float>(v) * (1.0f / 255.0f)));
    EXPECT_EQ(round_to_float16(static_cast<float>(v)), static_cast<float>(v));
  }
  for (std::uint32_t bits = 0; bits < 0x48000000u; bits += 4099) {
    const float x = std::bit_cast<float>(bits);
    ASSERT_EQ(round_to_float16(x), float16_by_definition(x)) << x;
    ASSERT_EQ(round_to_float16(-x), float16_by_definition(-x)) << -x;
  }
  EXPECT_TRUE(std::isnan(round_to_float16(NAN)));
  EXPECT_TRUE(std::isinf(round_to_float16(INFINITY)));
}

TEST(InputCast, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(round_to_bfloat16(1.0f), 1.0f);
  EXPECT_EQ(round_to_bfloat16(1.0f / 3), 0.333984375f);
  EXPECT_EQ(round_to_bfloat16(1.00390625f), 1.0f);          // 1 + 2^-8: a tie, to the even 1
  EXPECT_EQ(round_to_bfloat16(1.01171875f), 1.015625f);     // 1 + 3 * 2^-8: a tie, to the even
  EXPECT_EQ(round_to_bfloat16(255.0f), 255.0f);
  EXPECT_EQ(round_to_bfloat16(-0.1f), -0.10009765625f);
  EXPECT_EQ(parse_input_cast("bfloat16"), InputCast::Bfloat16);
  EXPECT_THROW(parse_input_cast("int8"), std::invalid_argument);
}

}  // namespace
}  // namespace ranktune::train
