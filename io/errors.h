#pragma once
/// The error types of the results store, in a header of their own: the HDF5 wrappers
/// (io/hdf5.h) throw them and need nothing else of the store.

#include <stdexcept>

namespace ranktune::io {

/// A results file that cannot be read or written. what() is one line naming the file.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The file system of a results file ran out of space (ENOSPC) or quota (EDQUOT) while it
/// was written. what(): "PATH: the file system of PATH is full (N bytes free)", then what
/// was kept.
class DiskFullError : public StoreError {
 public:
  using StoreError::StoreError;
};

/// Another program has the results file open in a way that keeps a writer out, and is not
/// a ranktune writer: an HDF5 reader (h5py.File(path, "r"), SWMR or not), an HDF5 writer, or a
/// process holding a read lock on it. what() says which process, where known, and what to do.
class FileBusyError : public StoreError {
 public:
  using StoreError::StoreError;
};

/// A results file, or the name where one would be made, that ranktune will not write: another
/// user's, writable by other users, a symbolic link (dangling or not), not a regular file, or
/// one with several hard links (README, "Threat model"). Exit code 2, as for the other files
/// beside the results file that another user could have planted: an invalid_argument, so that
/// every command maps it so and no handler of StoreError rewords it as a damaged file.
class UnsafeFileError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace ranktune::io
