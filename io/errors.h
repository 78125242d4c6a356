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

}  // namespace ranktune::io
