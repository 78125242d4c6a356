#pragma once
/// libarchive's C API, opened on first use instead of linked, for the reason and in the way
/// of io/hdf5_api.h: only a worker that packs a command trainable's folder, and the
/// checkpoint commands, call it, yet a link made every rank load it and what Debian's build
/// needs (libxml2, ICU, OpenSSL, nettle, the compressors), about 3 ms of CPU per process.
/// Internal to io/archive.cc.

#include <archive.h>
#include <archive_entry.h>

#include <string>

/// The functions io/archive.cc calls, without their "archive_" prefix.
#define RANKTUNE_LIBARCHIVE_FUNCTIONS(X) X(entry_copy_pathname) X(entry_copy_symlink) \
  X(entry_filetype) X(entry_free) X(entry_hardlink) X(entry_mtime) X(entry_mtime_nsec) \
  X(entry_new) X(entry_pathname) X(entry_perm) X(entry_set_filetype) X(entry_set_mtime) \
  X(entry_set_perm) X(entry_set_size) X(entry_size) X(entry_size_is_set) X(entry_symlink) \
  X(error_string) X(read_data_block) X(read_free) X(read_new) X(read_next_header) X(read_open2) \
  X(read_support_format_tar) X(write_close) X(write_data) X(write_finish_entry) X(write_free) \
  X(write_header) X(write_new) X(write_open2) X(write_set_bytes_in_last_block) \
  X(write_set_bytes_per_block) X(write_set_format_pax_restricted)

namespace ranktune::io::libarchive {

struct Api {
#define RANKTUNE_LIBARCHIVE_MEMBER(name) decltype(&::archive_##name) name = nullptr;
  RANKTUNE_LIBARCHIVE_FUNCTIONS(RANKTUNE_LIBARCHIVE_MEMBER)
#undef RANKTUNE_LIBARCHIVE_MEMBER
};

/// The library, opened and bound on the first call (thread-safe). Throws ArchiveError
/// (io/archive.h) naming the library and what failed.
const Api& api();

/// Opens the library at `path` and binds it (what api() does once; for tests).
Api load(const std::string& path);

/// The library api() opens.
const char* library_path() noexcept;

/// Whether api() has opened the library in this process.
bool loaded() noexcept;

}  // namespace ranktune::io::libarchive

// Each libarchive name io/archive.cc uses is its bound pointer.
#define archive_entry_copy_pathname (::ranktune::io::libarchive::api().entry_copy_pathname)
#define archive_entry_copy_symlink (::ranktune::io::libarchive::api().entry_copy_symlink)
#define archive_entry_filetype (::ranktune::io::libarchive::api().entry_filetype)
#define archive_entry_free (::ranktune::io::libarchive::api().entry_free)
#define archive_entry_hardlink (::ranktune::io::libarchive::api().entry_hardlink)
#define archive_entry_mtime (::ranktune::io::libarchive::api().entry_mtime)
#define archive_entry_mtime_nsec (::ranktune::io::libarchive::api().entry_mtime_nsec)
#define archive_entry_new (::ranktune::io::libarchive::api().entry_new)
#define archive_entry_pathname (::ranktune::io::libarchive::api().entry_pathname)
#define archive_entry_perm (::ranktune::io::libarchive::api().entry_perm)
#define archive_entry_set_filetype (::ranktune::io::libarchive::api().entry_set_filetype)
#define archive_entry_set_mtime (::ranktune::io::libarchive::api().entry_set_mtime)
#define archive_entry_set_perm (::ranktune::io::libarchive::api().entry_set_perm)
#define archive_entry_set_size (::ranktune::io::libarchive::api().entry_set_size)
#define archive_entry_size (::ranktune::io::libarchive::api().entry_size)
#define archive_entry_size_is_set (::ranktune::io::libarchive::api().entry_size_is_set)
#define archive_entry_symlink (::ranktune::io::libarchive::api().entry_symlink)
#define archive_error_string (::ranktune::io::libarchive::api().error_string)
#define archive_read_data_block (::ranktune::io::libarchive::api().read_data_block)
#define archive_read_free (::ranktune::io::libarchive::api().read_free)
#define archive_read_new (::ranktune::io::libarchive::api().read_new)
#define archive_read_next_header (::ranktune::io::libarchive::api().read_next_header)
#define archive_read_open2 (::ranktune::io::libarchive::api().read_open2)
#define archive_read_support_format_tar (::ranktune::io::libarchive::api().read_support_format_tar)
#define archive_write_close (::ranktune::io::libarchive::api().write_close)
#define archive_write_data (::ranktune::io::libarchive::api().write_data)
#define archive_write_finish_entry (::ranktune::io::libarchive::api().write_finish_entry)
#define archive_write_free (::ranktune::io::libarchive::api().write_free)
#define archive_write_header (::ranktune::io::libarchive::api().write_header)
#define archive_write_new (::ranktune::io::libarchive::api().write_new)
#define archive_write_open2 (::ranktune::io::libarchive::api().write_open2)
#define archive_write_set_bytes_in_last_block (::ranktune::io::libarchive::api().write_set_bytes_in_last_block)
#define archive_write_set_bytes_per_block (::ranktune::io::libarchive::api().write_set_bytes_per_block)
#define archive_write_set_format_pax_restricted (::ranktune::io::libarchive::api().write_set_format_pax_restricted)
