#pragma once
/// Pieces of the results-file store shared by its translation units (store.cc and
/// evaluations.cc). Internal to io/: other layers go through io/store.h and
/// io/evaluations.h.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "io/hdf5.h"
#include "sys/fd.h"

namespace ranktune::io::detail {

/// Runs `f`, prefixing any StoreError it throws with `context` and keeping its type.
template <class F>
auto with_context(const std::string& context, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const h5::CallError& e) {
    throw h5::CallError(context + e.what(), e.sys_errno());
  } catch (const DiskFullError& e) {
    throw DiskFullError(context + e.what());
  } catch (const StoreError& e) {
    throw StoreError(context + e.what());
  }
}

/// Now, as ISO-8601 UTC ("2026-11-29T17:20:41Z").
std::string iso8601_utc_now();

/// A fixed-length string attribute `name` on `loc`.
void write_string_attr(hid_t loc, const char* name, std::string_view text);
/// A text as a string attribute, or as a scalar string dataset `name` when it is larger than
/// kMaxTextAttribute (object headers hold attributes of at most 64 KiB).
void write_text(hid_t loc, const char* name, std::string_view text);
void write_int_attr(hid_t loc, const char* name, int value);
/// The string attribute `name`, or nullopt when there is none. Throws StoreError when it is
/// not a fixed-length string of plausible size.
std::optional<std::string> read_string_attr(hid_t loc, const char* name);
/// What write_text() wrote: the attribute, else the dataset, else nullopt.
std::optional<std::string> read_text(hid_t loc, const char* name);
/// A scalar integer attribute. Throws StoreError (also when it is missing).
long long read_int_attr(hid_t loc, const char* name);

/// The file consistency flags of a version 2/3 superblock (non-zero while a writer holds
/// the file, or after its writer died), or nullopt when the first bytes are not one.
std::optional<unsigned> superblock_flags(const std::string& path);
/// Clears the status flags that a writer killed while it held the file leaves in the
/// superblock, with HDF5's own tool: `--increment` also moves the end-of-allocation mark past
/// the data the writer flushed, which a bare flag reset would cut off. Returns why not, or "".
/// Only for a file whose WriterLock the caller holds: never clear a live writer's flags.
std::string mend_status_flags(const std::string& path);
/// Throws StoreError unless the object `name` (relative to `loc`; "." for `loc` itself) has
/// a version 2 object header. HDF5 1.10.8 reads past buffers and crashes on damaged
/// metadata in the old format (version 1, no checksums); ranktune writes version 2 only,
/// whose checksums stop damage before HDF5 decodes it, so every object a reader opens is
/// checked first.
void require_checksummed(hid_t loc, const char* name);
/// Opens a results file read-only (SWMR_READ first, so a running writer does not stop it),
/// with few metadata retries. Throws StoreError with a one-line reason.
h5::File open_for_reading(const std::string& path, std::uintmax_t file_size);

/// Held by a writer for as long as it has the file open: an open-file-description lock
/// (fcntl F_OFD_SETLK) on the results file, which the kernel releases when the process ends,
/// kill -9 included. HDF5's own flock() does not keep a second writer out of a file in SWMR
/// mode, and the ranks of a SIGKILLed mpirun go on running (rank 0 writing) for about a
/// second: a resume started then would mend and write the file under the old writer (the
/// kill loop test saw live checkpoints fail their CRC, lost rows and a lost searcher state).
/// Without fcntl locks (ENOLCK, EOPNOTSUPP on some network file systems) it goes unlocked.
class WriterLock {
 public:
  WriterLock() = default;
  /// Throws StoreError when another process holds the lock.
  explicit WriterLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CLOEXEC)) {
    if (!fd_) throw StoreError(std::string("cannot open it to lock it: ") + std::strerror(errno));
    struct flock whole {};  // l_start = l_len = 0: the whole file
    whole.l_type = F_WRLCK;
    whole.l_whence = SEEK_SET;
    if (::fcntl(fd_.get(), F_OFD_SETLK, &whole) == 0) return;
    const int err = errno;
    fd_.reset();
    if (err == EAGAIN || err == EACCES)
      throw StoreError("another process is writing it (a run still going, or rank 0 of a killed mpirun that "
                       "has not exited yet): wait until that process has ended, then resume");
  }
  /// The locked file, open for writing (-1 when not locked): ResultsWriter reserves disk
  /// space through it.
  int fd() const noexcept { return fd_.get(); }

 private:
  sys::UniqueFd fd_;  ///< the lock goes with it
};

}  // namespace ranktune::io::detail
