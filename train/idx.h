#pragma once
/// IDX files (the format of MNIST and Fashion-MNIST): a big-endian header (two zero bytes, a
/// type byte, a dimension count, then each dimension as a uint32) followed by the values.
/// Gzip-compressed and plain files are both read (zlib reads plain files transparently).
/// Only unsigned-byte IDX files (type 0x08) are supported: the MNIST family uses nothing else.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ranktune::train {

/// A data file that is missing, unreadable or not what it should be. what() names the file
/// and says how to get a good copy.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One IDX file: its dimensions and its values in row-major order.
struct IdxArray {
  std::vector<std::uint32_t> dims;
  std::vector<std::uint8_t> data;  ///< size == product of dims
};

/// Reads an IDX file, gzip-compressed or plain. `hint` is appended to every error message
/// (e.g. how to install the data set). Throws DataError.
IdxArray read_idx(const std::string& path, const std::string& hint = "");

/// Writes `a` as a plain IDX file, or gzip-compressed when `gzip` (tests and tools).
/// Throws DataError.
void write_idx(const std::string& path, const IdxArray& a, bool gzip);

}  // namespace ranktune::train
