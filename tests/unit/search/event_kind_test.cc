// The names of the event kinds (search/event_kind.h): the ones results files hold, both ways.

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/schema.h"
#include "search/event_kind.h"

namespace ranktune::search {
namespace {

// Every kind in the order of the enum, by the name that every results file since the first
// holds in /events.kind (docs/guide/results-file.md): a renamed one would leave old files'
// events unread by the reports, resume and `ctl`. ("budget_stop" is new in issue 29,
// "warm_start" in issue 32.)
const std::vector<std::string> kWritten = {"start",   "placement",  "unpause", "pause",     "early_stop", "budget_stop",
                                           "error",   "retry",      "target",  "end",       "resume",
                                           "warning", "revert",     "control", "exploit",   "checkpoint",
                                           "driver",  "live_page",  "slurm",   "continued", "warm_start"};

TEST(EventKind, EachKindHasTheNameFilesHold) {
  for (std::size_t i = 0; i < kWritten.size(); ++i) {
    const auto k = static_cast<EventKind>(i);
    EXPECT_EQ(to_string(k), kWritten[i]);
    EXPECT_EQ(parse_event_kind(kWritten[i]), k) << kWritten[i];
  }
  EXPECT_EQ(static_cast<std::size_t>(EventKind::WarmStart) + 1, kWritten.size()) << "a kind without a name here";
}

TEST(EventKind, NamesAreDistinctAndFitTheColumn) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i <= static_cast<std::size_t>(EventKind::WarmStart); ++i) {
    const std::string name = to_string(static_cast<EventKind>(i));
    EXPECT_TRUE(seen.insert(name).second) << name;
    EXPECT_LE(name.size(), io::kEventKindLen) << name;
  }
}

TEST(EventKind, OtherNamesAreNoKind) {
  EXPECT_EQ(parse_event_kind(""), std::nullopt);
  EXPECT_EQ(parse_event_kind("Start"), std::nullopt);
  EXPECT_EQ(parse_event_kind("hibernate"), std::nullopt);
  EXPECT_STREQ(to_string(static_cast<EventKind>(200)), "?");  // a damaged wire message
}

}  // namespace
}  // namespace ranktune::search
