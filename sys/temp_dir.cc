// TempDir and the per-run folder under $TMPDIR that holds a process's TempDirs
// (sys/temp_dir.h).
#include "sys/temp_dir.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "sys/cleanup_registry.h"
#include "sys/safe_fs.h"

namespace ranktune::sys {

namespace fs = std::filesystem;
using detail::Registry;
using detail::registry;

namespace {

std::string host_name_for_files() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "host";
  std::string h(host);
  const auto dot = h.find('.');
  if (dot != std::string::npos && dot > 0) h.resize(dot);
  for (char& c : h)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return h;
}

}  // namespace

std::string temp_base() {
  const char* base = ::getenv("TMPDIR");
  return base != nullptr && *base != '\0' ? base : "/tmp";
}

std::string temp_root() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  return r.root.empty() ? temp_base() : r.root;
}

std::string run_folder_key(const std::string& name) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a, 64 bits
  for (const unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

TempDir::TempDir(const std::string& prefix) {
  std::string tmpl = temp_root() + "/" + prefix + "XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr)
    throw std::system_error(errno, std::generic_category(), "cannot create a temporary directory " + tmpl);
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  r.temp_dirs.insert(tmpl);
  path_ = std::move(tmpl);
}

TempDir TempDir::run_folder(const std::string& key) {
  const std::string base = temp_base();
  const std::string prefix = "ranktune-" + key + "-" + host_name_for_files() + "-";
  // Folders of this experiment on this host whose process is gone: a run that was killed
  // (kill -9, the node's OOM killer) before it could remove them. Only ours, and only real
  // folders, so that another user's name in a shared /tmp is never touched.
  std::error_code ec;
  for (fs::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9)
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    std::error_code rm;
    fs::remove_all(it->path(), rm);
  }
  const std::string path = base + "/" + prefix + std::to_string(::getpid());
  try {
    make_private_directory(path, 0700);
  } catch (const FsError& e) {
    throw std::system_error(e.error() != 0 ? e.error() : EEXIST, std::generic_category(),
                            std::string(e.what()) + " (set TMPDIR to a writable folder of yours)");
  }
  TempDir dir;
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  r.temp_dirs.insert(path);
  r.root = path;
  dir.path_ = path;
  return dir;
}

TempDir& TempDir::operator=(TempDir&& o) noexcept {
  if (this != &o) {
    remove();
    path_ = std::exchange(o.path_, {});
  }
  return *this;
}

void TempDir::remove() noexcept {
  if (path_.empty()) return;
  {
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    r.temp_dirs.erase(path_);
    if (r.root == path_) r.root.clear();
  }
  std::error_code ec;  // the error overload: nothing to throw from a destructor
  fs::remove_all(path_, ec);
  path_.clear();
}

}  // namespace ranktune::sys
