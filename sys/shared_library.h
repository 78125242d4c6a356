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

#include <atomic>
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

  /// For a library the binary was built against, at the path fixed when it was configured
  /// (io/hdf5_api.h): trusted as far as a linked library is, so without the owner checks
  /// above (the dynamic linker makes none, and a site's HDF5 may belong to its `spack` user
  /// or sit in a group-writable /shared/apps); the path comes from the build, never from the
  /// environment. If a library of its SONAME (the last part of `path`) is mapped already (a
  /// program that links HDF5 itself), that one is returned, so that a process never holds
  /// two copies of one library. Throws LibraryError with what dlerror() said.
  static SharedLibrary open_system(const std::string& path);

  SharedLibrary(SharedLibrary&& o) noexcept;
  SharedLibrary& operator=(SharedLibrary&& o) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  ~SharedLibrary();

  /// The address of `name`, or nullptr when the library has no such symbol.
  void* symbol(const char* name) const;

  /// Sets `pointer` (to a function or to a global) to the address of `name`. Throws
  /// LibraryError "PATH has no symbol NAME" when the library has none.
  template <class T>
  void bind(T*& pointer, const char* name) const {
    void* address = symbol(name);
    if (address == nullptr) throw LibraryError(path_ + " has no symbol " + name);
    pointer = reinterpret_cast<T*>(address);
  }
  const std::string& path() const { return path_; }

 private:
  SharedLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_ = nullptr;
  std::string path_;
};

/// A library's table of bound functions (io/hdf5_api.h, io/archive_api.h, train/blas.h), made
/// by `Load` on the first get() and the same afterwards. Thread-safe, as a function-local
/// static is; a Load that throws is tried again by the next get().
template <class Api, Api (*Load)()>
class LoadedOnce {
 public:
  static const Api& get() {
    static const Api api = [] {
      Api a = Load();
      loaded_.store(true, std::memory_order_release);
      return a;
    }();
    return api;
  }
  /// Whether get() has made the table in this process.
  static bool loaded() noexcept { return loaded_.load(std::memory_order_acquire); }

 private:
  static inline std::atomic<bool> loaded_{false};
};

/// The folder of the running executable (/proc/self/exe), "" if unknown.
std::string executable_directory();

}  // namespace ranktune::sys
