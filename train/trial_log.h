#pragma once
/// The log of a command trainable's attempt (train/command.h): the worker copies the
/// program's stdout and stderr into <log_dir>/trial_<id>_attempt_<k>.log (`_rank_<r>` added
/// for gang member r) through a TrialLog, capped, appended to when the same attempt goes on,
/// a full disk named; and the tails that error messages and the results file quote.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sys/fd.h"

namespace ranktune::train {

/// ranktune's own lines in a trial log start with this (separators, the cut marker), so that
/// they are told apart from the program's output (last_meaningful_line skips them).
inline constexpr std::string_view kOwnLinePrefix = "[ranktune] ";

/// The last `max_lines` lines of the file at `path`, at most `max_bytes` bytes of it; "" when
/// it cannot be read.
std::string read_tail(const std::string& path, int max_lines = 20, std::size_t max_bytes = 2000);

/// The last line of a log tail that says something: blank lines and ranktune's own lines
/// ("[ranktune] ...": separators, cut markers) are skipped. For a Python program that died
/// of an exception it is the exception ("RuntimeError: size mismatch ..."). At most
/// `max_chars` characters (cut with "..."); "" when there is none.
std::string last_meaningful_line(const std::string& tail, std::size_t max_chars = 200);

/// The log of one trial attempt. The worker writes it from the pipe that the program's stdout
/// and stderr go to, so that it can cap it and name a full disk (a program that wrote the
/// file itself would just die of a failed print). Opened inside the private logs folder
/// with sys::open_file_at: no link, a regular file of ours with one link. Past `max_bytes`
/// it keeps the first half, a marker line that says how many bytes were dropped there, and
/// the last quarter to half of the output. Writes never throw: the first failure is kept in
/// error(), and later output still reaches the in-memory tail.
class TrialLog {
 public:
  /// Opens (or creates) `name` in the folder open at `dirfd`; `shown` is its path for
  /// messages. `append` keeps what the file holds (the same attempt goes on), else it is
  /// emptied. `max_bytes` 0: no cap. Throws sys::FsError.
  void open(int dirfd, const std::string& name, const std::string& shown, bool append, std::int64_t max_bytes);
  bool is_open() const { return static_cast<bool>(fd_); }
  /// Bytes the file held when opened (0 unless appending to an existing log).
  std::int64_t initial_size() const { return initial_size_; }
  /// Appends program output, or a line of ranktune's. Never throws.
  void write(std::string_view bytes) noexcept;
  /// The last lines written since open(), kept in memory (so a full disk keeps them).
  std::string tail(int max_lines = 20, std::size_t max_bytes = 2000) const;
  /// The first write failure, said for users: "the file system of PATH is full (N bytes
  /// free)", or "cannot write PATH: ..."; "" when none.
  const std::string& error() const { return error_; }
  /// Output bytes dropped by the cap so far.
  std::int64_t dropped() const { return dropped_; }
  void close() noexcept { fd_.reset(); }

 private:
  bool put(const char* data, std::size_t n, std::int64_t at) noexcept;
  void cut() noexcept;
  void shift_tail() noexcept;
  void write_marker() noexcept;
  void failed(int error) noexcept;

  sys::UniqueFd fd_;
  std::string path_;
  std::int64_t max_ = 0;         ///< 0: no cap
  std::int64_t size_ = 0;        ///< the file's size: where the next byte goes
  std::int64_t initial_size_ = 0;
  bool cut_ = false;             ///< the marker is at offset max_ / 2
  std::int64_t dropped_ = 0;
  std::string recent_;           ///< the last few KiB written since open()
  std::string error_;
};

}  // namespace ranktune::train
