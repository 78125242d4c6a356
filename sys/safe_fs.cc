// open_file, open_file_at and make_private_directory: files and folders opened so another
// user cannot redirect them (sys/safe_fs.h: the rules and why).
#include "sys/safe_fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ranktune::sys {
namespace {

[[noreturn]] void fail(const std::string& what, int error) {
  throw FsError(error ? what + ": " + std::strerror(error) : what, error);
}

const char* kind_of(mode_t m) {
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISDIR(m)) return "a folder";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
  return "not a regular file";
}

// Checks an opened file's kind, owner, mode and link count; `created` skips the owner and
// mode checks (we just made it, O_EXCL).
void check_opened(int fd, const OpenOptions& o, bool created, const std::string& shown) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(shown + ": cannot stat it", errno);
  if (!S_ISREG(st.st_mode))
    fail(shown + " is " + kind_of(st.st_mode) + ", not a regular file: remove it (ranktune writes only regular "
                 "files it owns)", 0);
  if (created) return;
  if (o.owned && st.st_uid != ::geteuid())
    fail(shown + " belongs to uid " + std::to_string(st.st_uid) + ", not to this user (uid " +
             std::to_string(::geteuid()) + "): another user may have planted it; remove it or use another "
             "results path", 0);
  if (st.st_nlink != 1)
    fail(shown + " has " + std::to_string(st.st_nlink) + " hard links: ranktune will not write through a link; "
                 "remove it", 0);
  if (o.forbidden_bits && (st.st_mode & o.forbidden_bits)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    fail(shown + " has mode " + mode + ", which lets other users change it: another user may have planted it, or "
                 "changed it; if it is yours, chmod go-w it, else remove it", 0);
  }
}

// `path` without trailing slashes ("/" stays): "dir/" would make open(2) follow a link named dir.
std::string without_trailing_slashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace

std::pair<std::string, std::string> split_path(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const auto slash = p.rfind('/');
  if (slash == std::string::npos) return {".", p};
  return {slash == 0 ? "/" : p.substr(0, slash), p.substr(slash + 1)};
}

UniqueFd open_file_at(int dirfd, const std::string& name, const OpenOptions& o, const std::string& shown) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    fail(shown + ": not a file name", 0);
  const int base = o.access | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (o.append ? O_APPEND : 0);
  bool created = false;
  UniqueFd fd;
  if (o.create != Create::Never) {
    fd.reset(::openat(dirfd, name.c_str(), base | O_CREAT | O_EXCL, o.mode));
    if (fd) created = true;
    else if (errno != EEXIST || o.create == Create::Exclusive) fail("cannot create " + shown, errno);
  }
  if (!fd) {
    fd.reset(::openat(dirfd, name.c_str(), base));
    if (!fd) {
      const int e = errno;
      if (e == ELOOP)
        fail(shown + " is a symbolic link: ranktune will not write through a link (another user may have "
                     "planted it); remove it", 0);
      fail("cannot open " + shown, e);
    }
  }
  check_opened(fd.get(), o, created, shown);
  // A regular file: blocking I/O from here on.
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) fail(shown + ": fcntl", errno);
  if (o.truncate && !created && ::ftruncate(fd.get(), 0) != 0) fail("cannot truncate " + shown, errno);
  return fd;
}

UniqueFd open_directory(const std::string& given) {
  const std::string path = without_trailing_slashes(given);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    const int e = errno;
    struct stat st {};
    if ((e == ELOOP || e == ENOTDIR) && ::lstat(path.c_str(), &st) == 0)
      fail(path + " is " + std::string(kind_of(st.st_mode)) + ", not a folder: remove it", 0);
    fail("cannot open the folder " + path, e);
  }
  return fd;
}

UniqueFd open_file(const std::string& path, const OpenOptions& o) {
  const auto [dir, name] = split_path(path);
  UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d) fail("cannot open the folder " + dir, errno);
  return open_file_at(d.get(), name, o, path);
}

UniqueFd make_private_directory(const std::string& given, mode_t mode) {
  UniqueFd fd = make_own_directory(given, mode);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail(without_trailing_slashes(given) + ": cannot stat it", errno);
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    fail("the folder " + without_trailing_slashes(given) + " is writable by other users: chmod go-w it, or remove it", 0);
  return fd;
}

}  // namespace ranktune::sys

namespace ranktune::sys {

void replace_file(const std::string& path, const std::string& bytes, mode_t mode) {
  const auto [dir, name] = split_path(path);
  UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d) fail("cannot open the folder " + dir, errno);
  replace_file_at(d.get(), name, bytes, path, mode);
}

void replace_file_at(int dirfd, const std::string& name, const std::string& bytes, const std::string& shown,
                     mode_t mode) {
  const std::string dir = split_path(shown).first;
  // A fresh name of ours (O_EXCL, no link followed), filled, then renamed over the file:
  // a reader sees the old file or the new one, and a name another user planted is refused.
  const std::string tmp = "." + name + ".tmp." + std::to_string(::getpid());
  ::unlinkat(dirfd, tmp.c_str(), 0);  // ours, from a run of this process id that died
  {
    OpenOptions o{O_WRONLY, false, false, Create::Exclusive};
    o.mode = mode;
    UniqueFd fd = open_file_at(dirfd, tmp, o, dir + "/" + tmp);
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int e = errno;
        ::unlinkat(dirfd, tmp.c_str(), 0);
        fail("cannot write " + dir + "/" + tmp + " (disk full?)", e);
      }
      done += static_cast<std::size_t>(n);
    }
    if (fd.close() != 0) {  // NFS and quotas report a failed write here
      const int e = errno;
      ::unlinkat(dirfd, tmp.c_str(), 0);
      fail("cannot write " + dir + "/" + tmp, e);
    }
  }
  if (::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0) {
    const int e = errno;
    ::unlinkat(dirfd, tmp.c_str(), 0);
    if (e == EISDIR) fail("cannot write " + shown + ": it is a folder; remove it or choose another name", 0);
    fail("cannot replace " + shown, e);
  }
}

UniqueFd make_own_directory(const std::string& given, mode_t mode) {
  const std::string path = without_trailing_slashes(given);
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) fail("cannot make the folder " + path, errno);
  UniqueFd fd = open_directory(path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail(path + ": cannot stat it", errno);
  if (st.st_uid != ::geteuid())
    fail("the folder " + path + " belongs to uid " + std::to_string(st.st_uid) + ", not to this user (uid " +
             std::to_string(::geteuid()) + "): another user may have made it; remove it or write elsewhere",
         0);
  return fd;
}

}  // namespace ranktune::sys
