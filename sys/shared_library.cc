// SharedLibrary: dlopen with the trust checks of a plugin path (sys/shared_library.h).
#include "sys/shared_library.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "sys/safe_fs.h"

namespace ranktune::sys {
namespace {

// Why `st` (of `what`, shown as `path`) may not hold code we run, or "" if it may.
std::string untrusted(const struct stat& st, const char* what, const std::string& path) {
  if (st.st_uid != 0 && st.st_uid != ::geteuid())
    return path + ": the " + what + " belongs to user " + std::to_string(st.st_uid) +
           ", neither root nor you; a library is code that runs in ranktune, so it must be yours or root's";
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return path + ": the " + what + " is writable by " + ((st.st_mode & S_IWOTH) ? "everyone" : "its group") +
           "; another user could replace the code ranktune runs (chmod go-w it)";
  return {};
}

}  // namespace

SharedLibrary SharedLibrary::open(const std::string& path) {
  // Links are resolved first, so that the checks see the file that will be mapped and every
  // real folder above it.
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) throw LibraryError(path + ": " + std::strerror(errno));
  const std::string real(resolved);
  std::free(resolved);
  struct stat st{};
  if (::stat(real.c_str(), &st) != 0) throw LibraryError(real + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw LibraryError(real + ": not a regular file");
  if (const std::string why = untrusted(st, "file", real); !why.empty()) throw LibraryError(why);
  // Its folder must be closed to others; a folder above may be sticky (/tmp), since there no
  // one else can rename what is ours.
  bool nearest = true;
  for (std::string folder = split_path(real).first;; folder = split_path(folder).first) {
    struct stat dir{};
    if (::stat(folder.c_str(), &dir) != 0) throw LibraryError(folder + ": " + std::strerror(errno));
    const bool sticky_shared = !nearest && (dir.st_mode & S_ISVTX) != 0 && dir.st_uid == 0;
    if (!sticky_shared)
      if (const std::string why = untrusted(dir, "folder", folder); !why.empty())
        throw LibraryError(why + " (it holds " + real + ")");
    nearest = false;
    if (folder == "/") break;
  }
  ::dlerror();
  void* handle = ::dlopen(real.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    const char* e = ::dlerror();
    throw LibraryError(real + ": cannot be loaded: " + (e != nullptr ? e : "dlopen failed"));
  }
  return SharedLibrary(handle, real);
}

SharedLibrary::SharedLibrary(SharedLibrary&& o) noexcept
    : handle_(std::exchange(o.handle_, nullptr)), path_(std::move(o.path_)) {}

SharedLibrary& SharedLibrary::operator=(SharedLibrary&& o) noexcept {
  if (this != &o) {
    if (handle_ != nullptr) ::dlclose(handle_);
    handle_ = std::exchange(o.handle_, nullptr);
    path_ = std::move(o.path_);
  }
  return *this;
}

SharedLibrary::~SharedLibrary() {
  if (handle_ != nullptr) ::dlclose(handle_);  // RTLD_NODELETE: the code stays mapped
}

void* SharedLibrary::symbol(const char* name) const {
  return handle_ != nullptr ? ::dlsym(handle_, name) : nullptr;
}

std::string executable_directory() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  return split_path(std::string(buf, static_cast<std::size_t>(n))).first;
}

}  // namespace ranktune::sys
