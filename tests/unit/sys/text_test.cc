// The text of messages (sys/text.h): the name a typo meant, excerpt's quoting of long
// values, and lists of names.
#include <gtest/gtest.h>

#include "sys/text.h"

using namespace ranktune::sys;

TEST(ClosestName, FindsTyposButNotUnrelatedWords) {
  EXPECT_EQ(closest_name("num_sample", {"num_samples", "seed"}), "num_samples");
  EXPECT_EQ(closest_name("xyz", {"num_samples", "seed"}), "");
}

TEST(Excerpt, QuotesAShortPrefix) {
  EXPECT_EQ(excerpt("short"), "short");
  EXPECT_EQ(excerpt(std::string(1'000'000, 'a')), std::string(64, 'a') + "... (1000000 characters)");
}

TEST(CommaList, ListsNamesAsMessagesDo) {
  EXPECT_EQ(comma_list({}), "");
  EXPECT_EQ(comma_list({"fifo"}), "fifo");
  EXPECT_EQ(comma_list({"fifo", "asha", "pbt"}), "fifo, asha, pbt");
}
