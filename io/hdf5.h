#pragma once
/// RAII handles and checked calls for the HDF5 C API. Internal to io/: other layers read
/// and write results files through io/store.h only.

#include <hdf5.h>

#include <cstddef>
#include <string>
#include <utility>

#include "io/errors.h"

namespace ranktune::io::h5 {

/// A failed HDF5 call (thrown by H5_CHECK). While reading, it means the file is damaged
/// rather than of the wrong kind: the reader says so.
class CallError : public StoreError {
 public:
  explicit CallError(const std::string& what, int sys_errno = 0) : StoreError(what), sys_errno_(sys_errno) {}
  /// The errno of the failed system call below HDF5 (its low-level I/O frames say
  /// "errno = N"), 0 when none failed: ENOSPC tells a full disk from a damaged file.
  int sys_errno() const noexcept { return sys_errno_; }

 private:
  int sys_errno_ = 0;
};

/// Owns one HDF5 identifier and closes it with `Close`. Move-only; the destructor never
/// throws (a failed close is ignored: there is nothing useful left to do with it).
template <herr_t (*Close)(hid_t)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) noexcept : id_(id) {}
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  hid_t get() const noexcept { return id_; }
  explicit operator bool() const noexcept { return id_ >= 0; }
  /// Closes the identifier now (if any); the handle becomes empty.
  void reset() noexcept {
    if (id_ >= 0) Close(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

using File = Handle<H5Fclose>;
using Group = Handle<H5Gclose>;
using Dataset = Handle<H5Dclose>;
using Dataspace = Handle<H5Sclose>;
using Datatype = Handle<H5Tclose>;  ///< never wrap a predefined type (H5T_NATIVE_*)
using PropList = Handle<H5Pclose>;
using Attribute = Handle<H5Aclose>;

/// Silences HDF5's automatic error-stack printing on the calling thread (thread-safe builds
/// keep one error stack per thread) while it lives, so a corrupt file never spews traces to
/// stderr: every entry point of the store holds one (`const h5::Quiet quiet;`) and turns
/// HDF5's errors into StoreError instead. Like HighFive's SilenceHDF5, it saves the handler
/// it found and puts it back when it goes, so a program that prints HDF5's errors itself
/// (or nests two store calls) keeps its setting. Cheap; not copyable.
/// One thing stays quiet for good: HDF5's report at exit of objects it could not close
/// ("HDF5: infinite loop closing library"), which follows a damaged file whose close failed
/// and which the store has already reported as a StoreError.
class Quiet {
 public:
  Quiet() noexcept;
  ~Quiet() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  Quiet(const Quiet&) = delete;
  Quiet& operator=(const Quiet&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

/// The most specific message on the calling thread's HDF5 error stack, "" when empty.
std::string last_error();

/// The errno that a failed system call reported on the calling thread's HDF5 error stack
/// ("errno = N" in a low-level I/O frame), 0 when there is none.
int last_errno();

/// Throws CallError "FILE:LINE: FUNCTION failed: <HDF5's most specific message>".
/// `expr` is the failed call's source text; only the function name is kept.
[[noreturn]] void fail(const char* expr, const char* file, int line);

/// Returns `result` (an hid_t, herr_t or htri_t) when it is non-negative, else fail()s.
template <class T>
T check(T result, const char* expr, const char* file, int line) {
  if (result < 0) fail(expr, file, line);
  return result;
}

/// A fixed-length, NUL-padded C string type `size` bytes wide (size >= 1).
Datatype string_type(std::size_t size);

}  // namespace ranktune::io::h5

/// Evaluates an HDF5 call and throws io::h5::CallError with file:line when it returns < 0.
#define H5_CHECK(call) ::ranktune::io::h5::check((call), #call, __FILE__, __LINE__)
