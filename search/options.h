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

/// Upper bounds of the counts a config sets (configs/README.md, "Limits"): far above any
/// real use, and low enough that no product of them overflows and no loop over them runs for
/// hours (a huge n_ei_candidates made rank 0 spin; a reduction_factor just above 1 made
/// millions of rungs).
inline constexpr std::int64_t kMaxTrials = 1'000'000'000;      ///< trials of an experiment
inline constexpr std::int64_t kMaxIterations = 1'000'000'000;  ///< iterations of a trial
inline constexpr std::int64_t kMaxRungs = 64;         ///< rungs and brackets of ASHA, HyperBand
inline constexpr std::int64_t kMaxCandidates = 10'000;  ///< n_ei_candidates of tpe and bohb
inline constexpr std::int64_t kMaxRepeat = 10'000;      ///< [search] repeat
inline constexpr double kMaxSeconds = 1e9;  ///< any duration (about 31 years): no overflow in clocks

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

/// One option as an algorithm runs with it: the value given, or its default.
struct ResolvedOption {
  std::string key;
  Value value;
  bool flag = false;  ///< a boolean (held as Int 0/1, as TOML booleans arrive)
};

/// While one is alive, every OptionReader on this thread notes here each key it reads and
/// the value it uses, given or default, in the order first read. So the defaults that
/// `ranktune check` prints come from the one place that sets them, each algorithm's reader
/// (its fallbacks sit in the constructors and factories, often computed from the space or
/// max_t, and threading a sink through all of them would touch every algorithm for a print).
/// Nests: an inner log hides the outer one while it lives.
class OptionLog {
 public:
  OptionLog();
  ~OptionLog();
  OptionLog(const OptionLog&) = delete;
  OptionLog& operator=(const OptionLog&) = delete;
  const std::vector<ResolvedOption>& options() const { return options_; }
  /// Notes one key (OptionReader calls it).
  void note(const std::string& key, const Value& value, bool flag);

 private:
  std::vector<ResolvedOption> options_;
  OptionLog* outer_;
};

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
  /// Throws OptionError unless `value <= max`, naming the limit.
  void at_most(const std::string& key, std::int64_t value, std::int64_t max) const;
  /// integer() for a count that must be in [1, max] (n_startup, n_candidates): throws
  /// OptionError below 1 and, as at_most() does, above `max`.
  std::int64_t positive_integer(const std::string& key, std::int64_t fallback, std::int64_t max);
  /// Throws OptionError for the first option that no read asked for.
  void finish() const;

 private:
  const Value* find(const std::string& key);

  const Options& options_;
  std::string owner_;
  std::vector<std::string> known_;
};

}  // namespace ranktune::search
