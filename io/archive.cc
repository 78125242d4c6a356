// pack_directory and unpack_directory: a directory as a libarchive tar stream with a CRC-32C
// trailer, and back, with every refusal (io/archive.h: the layout and the rules).
#include "io/archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "io/crc32c.h"
#include "sys/fd.h"

namespace ranktune::io {
namespace {

namespace fs = std::filesystem;

constexpr char kTrailerMagic[4] = {'R', 'T', 'K', '1'};
constexpr std::size_t kTrailerSize = 16;

struct WriteArchive {
  void operator()(archive* a) const noexcept { archive_write_free(a); }
};
struct ReadArchive {
  void operator()(archive* a) const noexcept { archive_read_free(a); }
};
struct EntryFree {
  void operator()(archive_entry* e) const noexcept { archive_entry_free(e); }
};

std::string errno_text(int err) { return std::generic_category().message(err); }

void put_le(std::byte* out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<std::byte>(v >> (8 * i));
}
std::uint64_t get_le(const std::byte* in, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(in[i]) << (8 * i);
  return v;
}

std::string archive_text(archive* a) {
  const char* s = archive_error_string(a);
  return s ? s : "unknown libarchive error";
}

// Lexically resolves `target` (a link's target) against `parent` (the link's directory,
// relative to the root): false when it climbs above the root. Physical resolution is
// checked again after the links exist, since ".." after a link to "." climbs further
// than the text suggests.
bool stays_inside(const fs::path& parent, std::string_view target) {
  if (target.empty() || target.front() == '/') return false;
  std::vector<std::string> stack;
  for (const fs::path& part : parent)
    if (!part.empty() && part != ".") stack.push_back(part.string());
  std::size_t start = 0;
  while (start <= target.size()) {
    std::size_t end = target.find('/', start);
    if (end == std::string_view::npos) end = target.size();
    std::string_view part = target.substr(start, end - start);
    if (part == "..") {
      if (stack.empty()) return false;
      stack.pop_back();
    } else if (!part.empty() && part != ".") {
      stack.emplace_back(part);
    }
    start = end + 1;
  }
  return true;
}

// ------------------------------------------------------------------------ packing

struct PackState {
  const ByteSink* sink = nullptr;
  std::uint32_t crc = 0;
  std::uint64_t bytes = 0;
  std::exception_ptr error;  // a sink's exception, rethrown once libarchive has returned
};

// libarchive is C: an exception must not unwind through it, so it is parked and rethrown.
la_ssize_t on_write(archive*, void* data, const void* buffer, std::size_t size) {
  auto* state = static_cast<PackState*>(data);
  try {
    std::span<const std::byte> bytes(static_cast<const std::byte*>(buffer), size);
    state->crc = crc32c(bytes, state->crc);
    state->bytes += size;
    (*state->sink)(bytes);
    return static_cast<la_ssize_t>(size);
  } catch (...) {
    state->error = std::current_exception();
    return -1;
  }
}

class Packer {
 public:
  Packer(const fs::path& root, const ByteSink& sink) : root_(root) { state_.sink = &sink; }

  ArchiveSummary run() {
    std::error_code ec;
    if (!fs::is_directory(fs::symlink_status(root_, ec)))
      throw ArchiveError(root_.string() + ": not a directory; nothing to pack");
    a_.reset(archive_write_new());
    if (!a_) throw std::bad_alloc();
    // pax: no limits on name length or file size; blocks of one chunk so the sink sees
    // large writes; no padding of the last block, so the trailer follows the tar directly.
    check(archive_write_set_format_pax_restricted(a_.get()), "set the tar format");
    check(archive_write_set_bytes_per_block(a_.get(), static_cast<int>(kArchiveChunk)), "set the block size");
    check(archive_write_set_bytes_in_last_block(a_.get(), 1), "set the block size");
    check(archive_write_open2(a_.get(), &state_, nullptr, on_write, nullptr, nullptr), "start the archive");
    buffer_.resize(kArchiveChunk);
    add_children(fs::path());
    check(archive_write_close(a_.get()), "finish the archive");

    std::array<std::byte, kTrailerSize> trailer{};
    std::memcpy(trailer.data(), kTrailerMagic, 4);
    put_le(trailer.data() + 4, state_.bytes, 8);
    put_le(trailer.data() + 12, state_.crc, 4);
    (*state_.sink)(trailer);
    summary_.stream_bytes = state_.bytes + kTrailerSize;
    summary_.crc32c = crc32c(trailer, state_.crc);
    return summary_;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    if (state_.error) std::rethrow_exception(state_.error);
    throw ArchiveError(root_.string() + ": " + what);
  }
  void check(int status, const char* doing) {
    if (status < ARCHIVE_WARN) fail(std::string("cannot ") + doing + ": " + archive_text(a_.get()));
  }

  void add_children(const fs::path& rel) {
    std::vector<fs::path> names;
    std::error_code ec;
    for (fs::directory_iterator it(root_ / rel, ec), end; !ec && it != end; it.increment(ec))
      names.push_back(it->path().filename());
    if (ec) fail("cannot list '" + (root_ / rel).string() + "': " + ec.message());
    std::sort(names.begin(), names.end());
    for (const fs::path& name : names) add(rel / name);
  }

  void add(const fs::path& rel) {
    const fs::path full = root_ / rel;
    struct stat st {};
    if (::lstat(full.c_str(), &st) != 0) fail("cannot stat '" + rel.string() + "': " + errno_text(errno));
    std::unique_ptr<archive_entry, EntryFree> entry(archive_entry_new());
    if (!entry) throw std::bad_alloc();
    archive_entry_copy_pathname(entry.get(), rel.c_str());
    archive_entry_set_perm(entry.get(), st.st_mode & 07777);
    archive_entry_set_mtime(entry.get(), st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    ++summary_.entries;
    if (S_ISDIR(st.st_mode)) {
      archive_entry_set_filetype(entry.get(), AE_IFDIR);
      check(archive_write_header(a_.get(), entry.get()), "write a header");
      add_children(rel);
    } else if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<std::size_t>(st.st_size) + 1, '\0');
      const ssize_t n = ::readlink(full.c_str(), target.data(), target.size());
      if (n < 0 || static_cast<std::size_t>(n) >= target.size())
        fail("cannot read link '" + rel.string() + "': " + errno_text(errno));
      target.resize(static_cast<std::size_t>(n));
      if (!stays_inside(rel.parent_path(), target))
        fail("link '" + rel.string() + "' -> '" + target +
             "' points outside the directory; copy the file it points to instead");
      archive_entry_set_filetype(entry.get(), AE_IFLNK);
      archive_entry_copy_symlink(entry.get(), target.c_str());
      check(archive_write_header(a_.get(), entry.get()), "write a header");
    } else if (S_ISREG(st.st_mode)) {
      add_file(rel, entry.get());
    } else {
      fail(rel.string() + ": is a device, FIFO or socket, which a checkpoint cannot hold");
    }
  }

  void add_file(const fs::path& rel, archive_entry* entry) {
    sys::UniqueFd fd(::open((root_ / rel).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0)
      fail("cannot read '" + rel.string() + "': " + errno_text(errno));
    if (!S_ISREG(st.st_mode)) fail(rel.string() + ": changed type while packing");
    archive_entry_set_filetype(entry, AE_IFREG);
    archive_entry_set_size(entry, st.st_size);
    check(archive_write_header(a_.get(), entry), "write a header");
    // The header promised st_size bytes: a file that shrinks now would be padded with
    // zeros by libarchive, so that is an error; growth past it is not read.
    auto left = static_cast<std::uint64_t>(st.st_size);
    while (left > 0) {
      const ssize_t n = ::read(fd.get(), buffer_.data(), std::min<std::uint64_t>(left, buffer_.size()));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("cannot read '" + rel.string() + "': " + errno_text(errno));
      if (n == 0) fail(rel.string() + ": shrank while packing; pack it again when it is complete");
      if (archive_write_data(a_.get(), buffer_.data(), static_cast<std::size_t>(n)) != n)
        fail("cannot write '" + rel.string() + "': " + archive_text(a_.get()));
      left -= static_cast<std::uint64_t>(n);
    }
    summary_.file_bytes += static_cast<std::uint64_t>(st.st_size);
    check(archive_write_finish_entry(a_.get()), "finish an entry");
  }

  fs::path root_;
  PackState state_;
  std::unique_ptr<archive, WriteArchive> a_;
  std::vector<std::byte> buffer_;
  ArchiveSummary summary_;
};

// ------------------------------------------------------------------------ unpacking

// Feeds libarchive everything but the last kTrailerSize bytes of the stream, which are held
// back (the end is unknown until the source returns 0) and checked as the trailer.
struct UnpackState {
  const ByteSource* source = nullptr;
  std::vector<std::byte> buffer;
  std::array<std::byte, kTrailerSize> held{};
  std::size_t held_size = 0;
  bool at_end = false;
  std::uint32_t crc = 0;       // of the bytes passed on
  std::uint64_t passed = 0;    // bytes passed on
  std::exception_ptr error;

  std::span<const std::byte> next() {
    std::memcpy(buffer.data(), held.data(), held_size);
    std::size_t have = held_size;
    while (!at_end && have <= kTrailerSize) {
      const std::size_t want = buffer.size() - have;
      const std::size_t n = (*source)(std::span<std::byte>(buffer.data() + have, want));
      if (n > want) throw ArchiveError("the byte source returned more than it was asked for");
      if (n == 0) at_end = true;
      have += n;
    }
    const std::size_t pass = have > kTrailerSize ? have - kTrailerSize : 0;
    held_size = have - pass;
    std::memcpy(held.data(), buffer.data() + pass, held_size);
    std::span<const std::byte> out(buffer.data(), pass);
    crc = crc32c(out, crc);
    passed += pass;
    return out;
  }
};

la_ssize_t on_read(archive*, void* data, const void** out) {
  auto* state = static_cast<UnpackState*>(data);
  try {
    std::span<const std::byte> bytes = state->next();
    *out = bytes.data();
    return static_cast<la_ssize_t>(bytes.size());
  } catch (...) {
    state->error = std::current_exception();
    return -1;
  }
}

class Unpacker {
 public:
  Unpacker(const ByteSource& source, const fs::path& dir) : root_(dir) {
    state_.source = &source;
    state_.buffer.resize(kArchiveChunk + kTrailerSize);
  }

  ArchiveSummary run() {
    prepare_root();
    try {
      extract();
    } catch (...) {
      empty_root();
      throw;
    }
    return summary_;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    if (state_.error) std::rethrow_exception(state_.error);
    throw ArchiveError(root_.string() + ": cannot unpack the checkpoint: " + what);
  }
  [[noreturn]] void refuse(const std::string& entry, const std::string& why) {
    fail("entry '" + entry + "' " + why);
  }

  void prepare_root() {
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(root_, ec);
    if (!fs::exists(st)) {
      if (!fs::create_directories(root_, ec) && ec)
        throw ArchiveError(root_.string() + ": cannot create the directory: " + ec.message());
    } else if (!fs::is_directory(st)) {
      throw ArchiveError(root_.string() + ": not a directory; give an empty directory to unpack into");
    } else if (!fs::is_empty(root_, ec) || ec) {
      throw ArchiveError(root_.string() + ": not empty; give an empty directory to unpack into");
    }
  }

  // Leaves the root as it was found: empty. Read-only directories are opened up first.
  void empty_root() noexcept {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_directory(ec) && !it->is_symlink(ec))
        fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
    for (fs::directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec))
      fs::remove_all(it->path(), ec);
  }

  // The entry's path relative to the root, after refusing anything that could leave it.
  fs::path checked_path(const char* raw) {
    if (!raw || !*raw) fail("an entry has no name");
    std::string_view name(raw);
    if (name.front() == '/') refuse(raw, "has an absolute path");
    fs::path rel;
    std::size_t start = 0;
    while (start <= name.size()) {
      std::size_t end = name.find('/', start);
      if (end == std::string_view::npos) end = name.size();
      std::string_view part = name.substr(start, end - start);
      if (part == "..") refuse(raw, "has a '..' component");
      if (!part.empty() && part != ".") rel /= std::string(part);
      start = end + 1;
    }
    return rel;
  }

  // Creates the missing parents of `rel` as real directories; a file or link in the way
  // is refused, so nothing is ever written through a link.
  void make_parents(const fs::path& rel, const char* raw) {
    fs::path dir = root_;
    for (const fs::path& part : rel.parent_path()) {
      dir /= part;
      struct stat st {};
      if (::lstat(dir.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode)) refuse(raw, "lies below '" + part.string() + "', which is not a directory");
        continue;
      }
      if (::mkdir(dir.c_str(), 0700) != 0) refuse(raw, "cannot be created: " + errno_text(errno));
    }
  }

  void extract() {
    a_.reset(archive_read_new());
    if (!a_) throw std::bad_alloc();
    // Tar only, no decompression filters: the stream is ours, and anything else is damage.
    if (archive_read_support_format_tar(a_.get()) != ARCHIVE_OK ||
        archive_read_open2(a_.get(), &state_, nullptr, on_read, nullptr, nullptr) != ARCHIVE_OK)
      fail("damaged or not a checkpoint archive: " + archive_text(a_.get()));

    std::set<fs::path> seen;
    std::vector<std::pair<fs::path, std::string>> links;
    struct DirAttrs {
      mode_t mode;
      time_t mtime;
      long mtime_nsec;
    };
    std::map<fs::path, DirAttrs, std::greater<>> dirs;  // children before their parents
    for (;;) {
      archive_entry* entry = nullptr;
      const int status = archive_read_next_header(a_.get(), &entry);
      if (status == ARCHIVE_EOF) break;
      if (status < ARCHIVE_WARN) fail("damaged or truncated: " + archive_text(a_.get()));
      const char* raw = archive_entry_pathname(entry);
      const fs::path rel = checked_path(raw);
      if (rel.empty()) continue;  // "./": the root itself
      if (!seen.insert(rel).second) refuse(raw, "appears twice");
      ++summary_.entries;
      if (archive_entry_hardlink(entry)) refuse(raw, "is a hard link, which a checkpoint cannot hold");
      make_parents(rel, raw);
      const fs::path full = root_ / rel;
      switch (archive_entry_filetype(entry)) {
        case AE_IFDIR: {
          struct stat st {};
          if (::lstat(full.c_str(), &st) == 0 ? !S_ISDIR(st.st_mode) : ::mkdir(full.c_str(), 0700) != 0)
            refuse(raw, "cannot be created as a directory");
          dirs[rel] = {static_cast<mode_t>(archive_entry_perm(entry) & 0777), archive_entry_mtime(entry),
                       archive_entry_mtime_nsec(entry)};
          break;
        }
        case AE_IFREG:
          extract_file(entry, full, raw);
          break;
        case AE_IFLNK: {
          const char* target = archive_entry_symlink(entry);
          if (!target || !stays_inside(rel.parent_path(), target))
            refuse(raw, std::string("is a link to '") + (target ? target : "") + "', outside the directory");
          links.emplace_back(rel, target);
          break;
        }
        default:
          refuse(raw, "is a device, FIFO or socket, which a checkpoint cannot hold");
      }
    }
    // Drain what libarchive did not ask for (the padding after the end-of-archive blocks),
    // so the checksum covers every byte and anything after the trailer shows up as damage.
    while (!state_.next().empty()) {
    }
    check_trailer();

    // Links last: until now no path could lead through one.
    for (const auto& [rel, target] : links) {
      const fs::path full = root_ / rel;
      if (::symlink(target.c_str(), full.c_str()) != 0)
        refuse(rel.string(), "cannot be created as a link: " + errno_text(errno));
    }
    const fs::path real_root = fs::canonical(root_);
    for (const auto& [rel, target] : links) {
      std::error_code ec;
      const fs::path real = fs::weakly_canonical(root_ / rel, ec);
      const auto [r, _] = std::mismatch(real_root.begin(), real_root.end(), real.begin(), real.end());
      if (ec || r != real_root.end())
        refuse(rel.string(), "is a link to '" + target + "', which resolves outside the directory");
    }
    // Directory modes last, deepest first: a read-only directory must not block its children.
    for (const auto& [rel, attrs] : dirs) {
      const fs::path full = root_ / rel;
      const timespec times[2] = {{0, UTIME_OMIT}, {attrs.mtime, attrs.mtime_nsec}};
      if (::chmod(full.c_str(), attrs.mode) != 0 ||
          ::utimensat(AT_FDCWD, full.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0)
        refuse(rel.string(), "cannot get its mode: " + errno_text(errno));
    }
    summary_.stream_bytes = state_.passed + kTrailerSize;
    summary_.crc32c = crc32c(state_.held, state_.crc);
  }

  void extract_file(archive_entry* entry, const fs::path& full, const char* raw) {
    sys::UniqueFd fd(::open(full.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd.get() < 0) refuse(raw, "cannot be created: " + errno_text(errno));
    std::uint64_t written = 0;
    for (;;) {
      const void* block = nullptr;
      std::size_t size = 0;
      la_int64_t offset = 0;
      const int status = archive_read_data_block(a_.get(), &block, &size, &offset);
      if (status == ARCHIVE_EOF) break;
      if (status < ARCHIVE_WARN || offset < 0) fail("damaged or truncated in '" + std::string(raw) + "': " + archive_text(a_.get()));
      const auto* p = static_cast<const char*>(block);
      while (size > 0) {
        const ssize_t n = ::pwrite(fd.get(), p, size, offset);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) refuse(raw, "cannot be written: " + errno_text(errno));
        p += n;
        size -= static_cast<std::size_t>(n);
        offset += n;
        written += static_cast<std::uint64_t>(n);
      }
    }
    const la_int64_t size = archive_entry_size(entry);
    if (archive_entry_size_is_set(entry) && size >= 0) {
      if (::ftruncate(fd.get(), size) != 0) refuse(raw, "cannot be sized: " + errno_text(errno));
      summary_.file_bytes += static_cast<std::uint64_t>(size);
    } else {
      summary_.file_bytes += written;
    }
    const timespec times[2] = {{0, UTIME_OMIT}, {archive_entry_mtime(entry), archive_entry_mtime_nsec(entry)}};
    if (::fchmod(fd.get(), archive_entry_perm(entry) & 0777) != 0 || ::futimens(fd.get(), times) != 0 ||
        fd.close() != 0)
      refuse(raw, "cannot be completed: " + errno_text(errno));
  }

  void check_trailer() {
    const std::byte* t = state_.held.data();
    if (state_.held_size != kTrailerSize || std::memcmp(t, kTrailerMagic, 4) != 0)
      fail("the stream is truncated or has extra bytes (no checksum trailer at its end)");
    const std::uint64_t length = get_le(t + 4, 8);
    const auto crc = static_cast<std::uint32_t>(get_le(t + 12, 4));
    if (length != state_.passed)
      fail("the stream holds " + std::to_string(state_.passed) + " archive bytes, but its trailer says " +
           std::to_string(length));
    if (crc != state_.crc) fail("checksum mismatch: the stream is corrupted");
  }

  fs::path root_;
  UnpackState state_;
  std::unique_ptr<archive, ReadArchive> a_;
  ArchiveSummary summary_;
};

}  // namespace

bool is_directory_archive(std::span<const std::byte> stream) {
  if (stream.size() < kTrailerSize) return false;
  const std::byte* t = stream.data() + stream.size() - kTrailerSize;
  return std::memcmp(t, kTrailerMagic, sizeof kTrailerMagic) == 0 && get_le(t + 4, 8) == stream.size() - kTrailerSize;
}

ArchiveSummary pack_directory(const fs::path& dir, const ByteSink& sink) {
  return Packer(dir, sink).run();
}

ArchiveSummary unpack_directory(const ByteSource& source, const fs::path& dir) {
  return Unpacker(source, dir).run();
}

}  // namespace ranktune::io
