#pragma once
/// Algorithm options: the keys of `[search]` (besides algorithm and space) and of
/// `[scheduler]` (besides kind) reach the searcher and scheduler factories as a generic map,
/// and each algorithm reads and checks its own keys with an OptionReader. So a new
/// algorithm adds its options in its own file; the config layer need not know them.

#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "search/types.h"

namespace ranktune::search {

/// Option values by key. TOML booleans arrive as Int 0/1.
using Options = std::map<std::string, Value>;

/// A bad option: `key()` names it (without the section), what() says what is wrong and
/// how to fix it. The config layer turns it into a ConfigError at the key's line.
class OptionError : public std::invalid_argument {
 public:
  OptionError(std::string key, const std::string& message)
      : std::invalid_argument(message), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

/// "a, b, c": names as error messages list them.
std::string comma_list(const std::vector<std::string>& names);

/// The closest of `candidates` to `word` by edit distance, or "" when none is close enough
/// to be a typo.
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates);

/// Reads typed options with defaults and bounds; `finish()` rejects any key not read.
class OptionReader {
 public:
  /// `owner` names the algorithm in messages ("asha").
  OptionReader(const Options& options, std::string owner);

  double number(const std::string& key, double fallback);
  std::int64_t integer(const std::string& key, std::int64_t fallback);
  std::string text(const std::string& key, const std::string& fallback,
                   const std::vector<std::string>& valid = {});
  bool flag(const std::string& key, bool fallback);
  /// The keys that start with `prefix` (e.g. "bounds."), marked as read.
  std::vector<std::string> keys_with_prefix(const std::string& prefix);
  /// Throws OptionError unless `ok`; for range checks after reading.
  void require(bool ok, const std::string& key, const std::string& message) const;
  /// Throws OptionError for the first option that no read asked for.
  void finish() const;

 private:
  const Value* find(const std::string& key);

  const Options& options_;
  std::string owner_;
  std::vector<std::string> known_;
};

}  // namespace ranktune::search
