#pragma once
/// Checkpoint streams: how a trainable saves and restores its state without knowing where the
/// bytes go (memory, the wire to rank 0, a blob in the results file, a directory on disk).
/// A checkpoint is an opaque byte stream written once from the start and read once from the
/// start; only the trainable that wrote it knows its layout.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace ranktune::train {

/// A checkpoint that does not parse: wrong trainable, truncated, or corrupt.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Sink of a checkpoint. Implementations may forward chunks as they arrive, so a writer never
/// needs the whole checkpoint in memory.
class CheckpointWriter {
 public:
  virtual ~CheckpointWriter() = default;
  virtual void write(std::span<const std::byte> bytes) = 0;

  /// Writes a trivially copyable value (or array of them) in host byte order: checkpoints
  /// are restored on the same kind of machine that wrote them.
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void put(const T& value) {
    write(std::as_bytes(std::span<const T, 1>(&value, 1)));
  }
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void put_array(std::span<const T> values) {
    put<std::uint64_t>(values.size());
    write(std::as_bytes(values));
  }
};

/// Source of a checkpoint.
class CheckpointReader {
 public:
  virtual ~CheckpointReader() = default;
  /// Copies up to bytes.size() bytes; returns how many, 0 at the end.
  virtual std::size_t read(std::span<std::byte> bytes) = 0;

  /// Reads exactly bytes.size() bytes. Throws CheckpointError at a premature end.
  void read_exact(std::span<std::byte> bytes) {
    while (!bytes.empty()) {
      const std::size_t n = read(bytes);
      if (n == 0) throw CheckpointError("checkpoint is truncated");
      bytes = bytes.subspan(n);
    }
  }
  template <class T>
    requires std::is_trivially_copyable_v<T>
  T get() {
    T value;
    read_exact(std::as_writable_bytes(std::span<T, 1>(&value, 1)));
    return value;
  }
  /// Reads an array that put_array wrote into `out`, whose size must match: a checkpoint of
  /// another model shape is refused rather than silently reinterpreted.
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void get_array(std::span<T> out) {
    const auto n = get<std::uint64_t>();
    if (n != out.size())
      throw CheckpointError("checkpoint array has " + std::to_string(n) + " elements, expected " +
                            std::to_string(out.size()));
    read_exact(std::as_writable_bytes(out));
  }
};

/// A checkpoint held in memory.
using CheckpointBytes = std::vector<std::byte>;

class MemoryCheckpointWriter : public CheckpointWriter {
 public:
  explicit MemoryCheckpointWriter(CheckpointBytes& out) : out_(out) {}
  void write(std::span<const std::byte> bytes) override { out_.insert(out_.end(), bytes.begin(), bytes.end()); }

 private:
  CheckpointBytes& out_;
};

class MemoryCheckpointReader : public CheckpointReader {
 public:
  explicit MemoryCheckpointReader(std::span<const std::byte> in) : in_(in) {}
  std::size_t read(std::span<std::byte> bytes) override {
    const std::size_t n = std::min(bytes.size(), in_.size() - pos_);
    if (n > 0) std::memcpy(bytes.data(), in_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  /// Bytes not read yet; a restore that leaves some behind read a different checkpoint.
  std::size_t remaining() const { return in_.size() - pos_; }

 private:
  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
};

/// Every trainable's checkpoint starts with a tag naming its format, so restoring the
/// checkpoint of one trainable into another fails with a clear message.
inline void put_tag(CheckpointWriter& out, const char (&tag)[9]) {
  out.write(std::as_bytes(std::span<const char>(tag, 8)));
}
inline void expect_tag(CheckpointReader& in, const char (&tag)[9]) {
  char got[8];
  in.read_exact(std::as_writable_bytes(std::span<char>(got, 8)));
  if (std::memcmp(got, tag, 8) != 0)
    throw CheckpointError("checkpoint is not a '" + std::string(tag, 8) + "' checkpoint");
}

}  // namespace ranktune::train
