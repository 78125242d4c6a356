#pragma once
// Substring assertions shared by the unit tests: error messages, rendered configs, scripts.

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

/// `haystack` (anything std::string can be built from) contains `needle`.
#define EXPECT_CONTAINS(haystack, needle)                                 \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)        \
      << "missing \"" << (needle) << "\" in:\n" << (haystack)
/// `haystack` does not contain `needle`.
#define EXPECT_LACKS(haystack, needle)                                    \
  EXPECT_EQ(std::string(haystack).find(needle), std::string::npos)        \
      << "unexpected \"" << (needle) << "\" in:\n" << (haystack)

/// How many times `what` occurs in `text` (overlaps counted).
inline std::size_t count_in(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// The message of the `Error` that `f()` throws (std::invalid_argument unless named), or
/// "(no error)" when it throws none: for EXPECT_CONTAINS on an error's text.
template <class Error = std::invalid_argument, class F>
std::string error_message_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
