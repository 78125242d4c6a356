#pragma once
// Substring assertions shared by the unit tests: error messages, rendered configs, scripts.

#include <gtest/gtest.h>

#include <string>

/// `haystack` (anything std::string can be built from) contains `needle`.
#define EXPECT_CONTAINS(haystack, needle)                                 \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)        \
      << "missing \"" << (needle) << "\" in:\n" << (haystack)
/// `haystack` does not contain `needle`.
#define EXPECT_LACKS(haystack, needle)                                    \
  EXPECT_EQ(std::string(haystack).find(needle), std::string::npos)        \
      << "unexpected \"" << (needle) << "\" in:\n" << (haystack)
