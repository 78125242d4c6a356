// Text for messages: excerpt, comma_list and closest_name (sys/text.h).
#include "sys/text.h"

#include <algorithm>

namespace ranktune::sys {

std::string excerpt(const std::string& s, std::size_t max) {
  if (s.size() <= max) return s;
  return s.substr(0, max) + "... (" + std::to_string(s.size()) + " characters)";
}

std::string comma_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string closest_name(const std::string& word, const std::vector<std::string>& candidates) {
  const std::size_t threshold = std::max<std::size_t>(2, word.size() / 3);
  std::string best;
  std::size_t best_distance = threshold + 1;
  std::vector<std::size_t> prev, cur;
  for (const auto& cand : candidates) {
    // Levenshtein distance, two rows.
    prev.resize(cand.size() + 1);
    cur.resize(cand.size() + 1);
    for (std::size_t j = 0; j <= cand.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= word.size(); ++i) {
      cur[0] = i;
      for (std::size_t j = 1; j <= cand.size(); ++j)
        cur[j] = std::min(
            {prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (word[i - 1] == cand[j - 1] ? 0 : 1)});
      std::swap(prev, cur);
    }
    const std::size_t d = prev[cand.size()];
    // Replacing most of a short word is not a typo.
    if (d < best_distance && d < std::max(word.size(), cand.size())) {
      best = cand;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace ranktune::sys
