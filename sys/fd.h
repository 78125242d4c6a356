#pragma once
/// One owner for a file descriptor (RAII). The one wrapper the project uses: train/, io/ and
/// slurm/ used to carry a class each.

#include <unistd.h>

#include <utility>

namespace ranktune::sys {

/// Owns one file descriptor; closes it on destruction. -1 means none.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  /// Closes it now and returns close(2)'s result (0, or -1 with errno), which reports
  /// deferred write errors (NFS, quota) that a writer must check. 0 when there is none.
  int close() noexcept { return fd_ >= 0 ? ::close(std::exchange(fd_, -1)) : 0; }

 private:
  int fd_ = -1;
};

}  // namespace ranktune::sys
