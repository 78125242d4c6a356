// The trial log of a command trainable's attempt (train/trial_log.h): the cap that keeps its
// head, a marker and its tail, appending to the same attempt's log, a full disk named, and
// the tails of logs that messages quote.
#include "train/trial_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <utility>

#include "sys/safe_fs.h"

namespace ranktune::train {

namespace {

// The last `max_lines` lines of `s`; `cut` says that `s` starts in the middle of a line,
// which is dropped.
std::string last_lines(std::string s, int max_lines, bool cut) {
  if (cut) {  // drop the line the byte limit cut through
    const auto nl = s.find('\n');
    if (nl != std::string::npos && nl + 1 < s.size()) s.erase(0, nl + 1);
  }
  std::size_t pos = s.size();
  if (pos > 0 && s[pos - 1] == '\n') --pos;
  for (int lines = 0; pos > 0;) {
    const auto nl = s.rfind('\n', pos - 1);
    if (nl == std::string::npos) {
      pos = 0;
    } else if (++lines == max_lines) {
      pos = nl + 1;
      break;
    } else {
      pos = nl;
    }
  }
  return s.substr(pos);
}

// The cut marker has a fixed length, so that it can be rewritten in place as the count
// grows, and found again at offset max / 2 when the log is appended to.
constexpr const char* kMarkerFormat = "\n[ranktune] ---- log cut here: %20lld bytes of output dropped (max_log_mb) ----\n";
// What write() keeps in memory for tail(): a little more than tail()'s 2000 bytes.
constexpr std::size_t kRecentBytes = 4096;

std::string marker(std::int64_t dropped) {
  char b[128];
  const int n = std::snprintf(b, sizeof b, kMarkerFormat, static_cast<long long>(dropped));
  return std::string(b, static_cast<std::size_t>(n));
}

std::int64_t marker_length() {
  static const std::int64_t n = static_cast<std::int64_t>(marker(0).size());
  return n;
}

}  // namespace

std::string read_tail(const std::string& path, int max_lines, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const auto size = static_cast<std::size_t>(std::max<std::streamoff>(in.tellg(), 0));
  const std::size_t start = size > max_bytes ? size - max_bytes : 0;
  std::string s(size - start, '\0');
  in.seekg(static_cast<std::streamoff>(start));
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  s.resize(static_cast<std::size_t>(in.gcount()));
  return last_lines(std::move(s), max_lines, start > 0);
}

std::string last_meaningful_line(const std::string& tail, std::size_t max_chars) {
  std::size_t end = tail.size();
  while (end > 0) {
    const auto nl = tail.rfind('\n', end - 1);
    const std::size_t begin = nl == std::string::npos ? 0 : nl + 1;
    std::string line = tail.substr(begin, end - begin);
    end = nl == std::string::npos ? 0 : nl;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line.compare(0, kOwnLinePrefix.size(), kOwnLinePrefix) == 0) continue;
    line.erase(0, first);
    // Control characters (a progress bar's \r, colour codes) would garble the report.
    for (char& c : line)
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    if (line.size() > max_chars) line = line.substr(0, max_chars > 3 ? max_chars - 3 : 0) + "...";
    return line;
  }
  return {};
}

void TrialLog::open(int dirfd, const std::string& name, const std::string& shown, bool append,
                    std::int64_t max_bytes) {
  fd_.reset();
  path_ = shown;
  error_.clear();
  recent_.clear();
  cut_ = false;
  dropped_ = size_ = initial_size_ = 0;
  // Whole KiB, at least 4 of them, so that head, marker and tail always fit.
  max_ = max_bytes <= 0 ? 0 : std::max<std::int64_t>(4096, max_bytes / 1024 * 1024);
  sys::OpenOptions o;
  o.access = O_RDWR;  // the cap moves the tail within the file
  o.create = sys::Create::IfMissing;
  o.truncate = !append;
  o.mode = 0644;
  fd_ = sys::open_file_at(dirfd, name, o, shown);
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) throw sys::FsError(shown + ": cannot stat it", errno);
  size_ = initial_size_ = st.st_size;
  if (max_ == 0 || size_ <= max_ / 2) return;
  // A log already past its head: an earlier run cut it, and its marker says how much.
  std::string m(static_cast<std::size_t>(marker_length()), '\0');
  const ssize_t got = ::pread(fd_.get(), m.data(), m.size(), max_ / 2);
  long long dropped = 0;
  if (got == static_cast<ssize_t>(m.size()) && std::sscanf(m.c_str(), "\n[ranktune] ---- log cut here: %lld", &dropped) == 1 &&
      dropped >= 0 && m == marker(dropped)) {
    cut_ = true;
    dropped_ = dropped;
    shift_tail();
  } else {
    cut();  // written without a cap, or under another max_log_mb: cut it now
  }
}

bool TrialLog::put(const char* data, std::size_t n, std::int64_t at) noexcept {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd_.get(), data, n, at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      failed(w < 0 ? errno : ENOSPC);
      return false;
    }
    data += w;
    n -= static_cast<std::size_t>(w);
    at += w;
  }
  return true;
}

void TrialLog::failed(int error) noexcept {
  if (!error_.empty()) return;
  try {
    if (error == ENOSPC || error == EDQUOT) {
      struct statvfs fsst {};
      const unsigned long long free_bytes =
          ::fstatvfs(fd_.get(), &fsst) == 0 ? static_cast<unsigned long long>(fsst.f_bavail) * fsst.f_frsize : 0;
      error_ = "the file system of " + path_ + " is full (" + std::to_string(free_bytes) + " bytes free" +
               (error == EDQUOT ? ", or this user's quota is used up" : "") + ")";
    } else {
      error_ = "cannot write " + path_ + ": " + std::strerror(error);
    }
  } catch (...) {
    error_ = "cannot write the log";  // out of memory: say the least
  }
  fd_.reset();  // what did reach the file stays; nothing more goes there
}

void TrialLog::write_marker() noexcept {
  const std::string m = marker(dropped_);
  put(m.data(), m.size(), max_ / 2);
}

void TrialLog::cut() noexcept {
  // Everything between the head and the marker's end is dropped: it is replaced by the
  // marker, and the tail starts after it.
  const std::int64_t tail_start = max_ / 2 + marker_length();
  dropped_ += std::min(size_, tail_start) - max_ / 2;
  size_ = std::max(size_, tail_start);
  cut_ = true;
  write_marker();
  shift_tail();
}

void TrialLog::shift_tail() noexcept {
  // The tail grows up to half the cap, then its last quarter moves to just after the
  // marker: each byte is copied at most once more, and the file stays under about max_.
  const std::int64_t tail_start = max_ / 2 + marker_length();
  const std::int64_t keep = max_ / 4;
  if (!fd_ || size_ - tail_start <= 2 * keep) return;
  const std::int64_t from = size_ - keep;
  char chunk[65536];
  for (std::int64_t done = 0; done < keep;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::int64_t>(sizeof chunk, keep - done));
    const ssize_t got = ::pread(fd_.get(), chunk, n, from + done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return failed(got < 0 ? errno : EIO);
    if (!put(chunk, static_cast<std::size_t>(got), tail_start + done)) return;
    done += got;
  }
  dropped_ += from - tail_start;
  size_ = tail_start + keep;
  if (::ftruncate(fd_.get(), size_) != 0) return failed(errno);
  write_marker();
}

void TrialLog::write(std::string_view bytes) noexcept {
  try {
    recent_.append(bytes.data(), bytes.size());
    if (recent_.size() > 2 * kRecentBytes) recent_.erase(0, recent_.size() - kRecentBytes);
  } catch (...) {
  }
  while (fd_ && !bytes.empty()) {
    std::size_t n = bytes.size();
    if (max_ > 0 && !cut_) n = static_cast<std::size_t>(std::clamp<std::int64_t>(max_ / 2 - size_, 0, n));
    if (n > 0 && put(bytes.data(), n, size_)) size_ += static_cast<std::int64_t>(n);
    bytes.remove_prefix(n);
    if (max_ > 0 && !cut_ && !bytes.empty()) cut();
    else if (cut_) shift_tail();
  }
}

std::string TrialLog::tail(int max_lines, std::size_t max_bytes) const {
  const std::size_t start = recent_.size() > max_bytes ? recent_.size() - max_bytes : 0;
  return last_lines(recent_.substr(start), max_lines, start > 0);
}

}  // namespace ranktune::train
