#pragma once
/// A directory packed into one byte stream, and back: how a command trainable's
/// RANKTUNE_CHECKPOINT_DIR travels to rank 0 and into the results file.
///
/// Stream layout: a POSIX pax tar archive written by libarchive (uncompressed: checkpoints
/// are mostly incompressible floats), then a 16-byte trailer
///   "RTK1" | tar length (uint64 LE) | CRC-32C of the tar bytes (uint32 LE)
/// The checksum is computed while the bytes stream past, so neither side ever holds the
/// whole archive: memory stays at one chunk (1 MiB) however large the directory is.
///
/// Entries are directories, regular files (permission bits and mtime kept) and symbolic
/// links whose target stays inside the directory. Unpacking refuses absolute paths, `..`
/// components, hard links, devices, FIFOs, links that resolve outside the directory,
/// duplicate entries, a damaged or truncated stream and a checksum mismatch; after a
/// refusal the target directory is left empty again.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <stdexcept>

namespace ranktune::io {

/// A directory that cannot be packed, or a stream that cannot be unpacked. what() is one
/// line saying what was wrong, where (the path or entry) and, where it helps, what to do.
class ArchiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Receives the stream in order, in chunks of at most kArchiveChunk bytes. It may throw:
/// the exception propagates out of pack_directory unchanged. (A train::CheckpointWriter
/// adapts as `[&](auto b) { writer.write(b); }`.)
using ByteSink = std::function<void(std::span<const std::byte>)>;
/// Fills up to `bytes.size()` bytes and returns how many, 0 at the end of the stream
/// (a train::CheckpointReader adapts as `[&](auto b) { return reader.read(b); }`).
using ByteSource = std::function<std::size_t(std::span<std::byte>)>;

/// Largest chunk handed to a ByteSink or asked of a ByteSource, in bytes.
inline constexpr std::size_t kArchiveChunk = 1u << 20;

/// What a pack or unpack moved.
struct ArchiveSummary {
  std::uint64_t stream_bytes = 0;  ///< the whole stream, trailer included
  std::uint32_t crc32c = 0;        ///< CRC-32C of the whole stream, trailer included
  std::uint64_t entries = 0;       ///< directories, files and links (not the root itself)
  std::uint64_t file_bytes = 0;    ///< sum of the regular files' sizes
};

/// Packs the contents of directory `dir` (not `dir` itself) into `sink`. Entries are
/// written in sorted order, so the same tree gives the same entry sequence. Throws
/// ArchiveError for a missing directory, an unreadable file, or a device/FIFO/socket.
ArchiveSummary pack_directory(const std::filesystem::path& dir, const ByteSink& sink);

/// Whether `stream` ends with a pack_directory trailer whose length matches the bytes
/// before it: how a stored checkpoint of a command trainable (a directory) is told from a
/// built-in trainable's bytes. Checks the shape only; unpack_directory verifies the rest.
bool is_directory_archive(std::span<const std::byte> stream);

/// Unpacks a pack_directory stream from `source` into `dir`, which must be empty or not
/// exist yet (it is created). Reads `source` to its end, so bytes after the trailer are
/// refused too. Throws ArchiveError and empties `dir` again on any refusal.
ArchiveSummary unpack_directory(const ByteSource& source, const std::filesystem::path& dir);

}  // namespace ranktune::io
