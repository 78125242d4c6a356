// The names of the event kinds (search/event_kind.h), in one table that both ways read.
#include "search/event_kind.h"

#include <array>

namespace ranktune::search {

namespace {
// In the order of EventKind.
constexpr std::array<const char*, 21> kEventNames = {
    "start",   "placement", "unpause", "pause",   "early_stop", "budget_stop", "error",     "retry",  "target", "end",
    "resume",  "warning",   "revert",  "control", "exploit",    "checkpoint",  "driver",    "live_page", "slurm", "continued",
    "warm_start"};
static_assert(kEventNames.size() == static_cast<std::size_t>(EventKind::WarmStart) + 1,
              "one name per EventKind, in its order");
}  // namespace

const char* to_string(EventKind k) {
  const auto i = static_cast<std::size_t>(k);
  return i < kEventNames.size() ? kEventNames[i] : "?";  // "?": no EventKind (a damaged message)
}

std::optional<EventKind> parse_event_kind(std::string_view name) {
  for (std::size_t i = 0; i < kEventNames.size(); ++i)
    if (name == kEventNames[i]) return static_cast<EventKind>(i);
  return std::nullopt;
}

}  // namespace ranktune::search
