#pragma once
/// A shared library loaded at run time (dlopen), for code whose libraries are too costly to
/// load in every process: the GPU plugin (train/gpu_runtime.h) carries CUDA, cuBLAS and NCCL,
/// whose loading and static constructors cost each rank about a second of start-up.
///
/// A library runs code in our process as soon as it is opened, so a path is trusted only as
/// far as the binary itself. After links are resolved, the file must be a regular file owned
/// by root or by the effective user, and neither it nor any folder above it may belong to
/// another user or be writable by group or others; above its own folder a root-owned sticky
/// folder (/tmp) is accepted, since no one else can rename what is ours there. A plugin
/// planted in a shared folder is refused, not run. The library stays mapped after
/// the handle is gone (RTLD_NODELETE): CUDA registers exit handlers that must find their
/// code at exit.

#include <stdexcept>
#include <string>

namespace ranktune::sys {

/// The library cannot be used: refused by the rules above, absent, or dlopen failed.
class LibraryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class SharedLibrary {
 public:
  /// Checks `path` under the rules above, then opens it with every symbol bound now
  /// (RTLD_NOW: a missing dependency fails here, not at a first call mid-run) and kept local.
  /// Throws LibraryError saying which rule failed or what dlerror() said.
  static SharedLibrary open(const std::string& path);

  SharedLibrary(SharedLibrary&& o) noexcept;
  SharedLibrary& operator=(SharedLibrary&& o) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  ~SharedLibrary();

  /// The address of `name`, or nullptr when the library has no such symbol.
  void* symbol(const char* name) const;
  const std::string& path() const { return path_; }

 private:
  SharedLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_ = nullptr;
  std::string path_;
};

/// The folder of the running executable (/proc/self/exe), "" if unknown.
std::string executable_directory();

}  // namespace ranktune::sys
