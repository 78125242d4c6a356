// io/archive.h and io/crc32c.h: round trips of real directory trees through libarchive,
// and refusal of damaged, truncated and hostile streams (hostile ones are written with
// libarchive directly, as an attacker's tool would).

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "io/archive.h"
#include "io/crc32c.h"
#include "train/checkpoint.h"

namespace fs = std::filesystem;
using namespace ranktune;

namespace {

std::span<const std::byte> bytes_of(std::string_view s) { return std::as_bytes(std::span(s.data(), s.size())); }

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "archive_test.XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(path_, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_directory(ec) && !it->is_symlink(ec))
        fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_file(const fs::path& p, const std::string& content, fs::perms perms = fs::perms(0644)) {
  std::ofstream(p, std::ios::binary) << content;
  fs::permissions(p, perms);
}

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// type, permission bits, size and content (or link target) of every entry, by path.
std::map<std::string, std::string> describe(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (fs::recursive_directory_iterator it(root), end; it != end; ++it) {
    const fs::path rel = fs::relative(it->path(), root);
    struct stat st {};
    EXPECT_EQ(::lstat(it->path().c_str(), &st), 0);
    std::string d = std::to_string(st.st_mode & 0777) + ":";
    if (S_ISLNK(st.st_mode)) d += "link->" + fs::read_symlink(it->path()).string();
    else if (S_ISDIR(st.st_mode)) d += "dir";
    else d += "file:" + std::to_string(st.st_mtim.tv_sec) + ":" + read_all(it->path());
    out[rel.string()] = d;
  }
  return out;
}

struct Packed {
  std::vector<std::byte> bytes;
  io::ArchiveSummary summary;
  std::size_t largest_chunk = 0;
};

Packed pack(const fs::path& dir) {
  Packed p;
  train::MemoryCheckpointWriter writer(p.bytes);
  p.summary = io::pack_directory(dir, [&](std::span<const std::byte> b) {
    p.largest_chunk = std::max(p.largest_chunk, b.size());
    writer.write(b);
  });
  return p;
}

io::ArchiveSummary unpack(std::span<const std::byte> bytes, const fs::path& dir, std::size_t piece = 0) {
  train::MemoryCheckpointReader reader(bytes);
  return io::unpack_directory(
      [&](std::span<std::byte> b) { return reader.read(piece ? b.first(std::min(piece, b.size())) : b); },
      dir);
}

// Builds a tree with subdirectories, an empty directory, empty files, binary data larger
// than one chunk, several modes, a relative link, a long name and a non-ASCII name.
void make_tree(const fs::path& src) {
  fs::create_directories(src / "model" / "shards");
  fs::create_directories(src / "empty_dir");
  write_file(src / "empty.bin", "");
  write_file(src / "model" / "empty", "", fs::perms(0600));
  write_file(src / "model" / "weights.bin", random_bytes(io::kArchiveChunk * 2 + 12345, 1));
  write_file(src / "model" / "shards" / "s0", random_bytes(513, 2), fs::perms(0755));
  write_file(src / "model" / "shards" / "s1", random_bytes(512, 3), fs::perms(0444));
  write_file(src / "meta.json", "{\"step\": 42}\n");
  write_file(src / std::string(150, 'n'), "long name");
  write_file(src / "donn\xc3\xa9""es.txt", "non-ascii name");
  fs::create_symlink("model/weights.bin", src / "latest");
  fs::create_symlink("../meta.json", src / "model" / "meta_link");
  fs::permissions(src / "model" / "shards", fs::perms(0555));
}

TEST(Crc32c, KnownValuesAndBothPathsAgree) {
  EXPECT_EQ(io::crc32c(bytes_of("123456789")), 0xE3069283u);
  EXPECT_EQ(io::crc32c_software(bytes_of("123456789")), 0xE3069283u);
  EXPECT_EQ(io::crc32c({}), 0u);
  // 32 bytes of zeros: the iSCSI test vector (RFC 3720 B.4).
  const std::string zeros(32, '\0');
  EXPECT_EQ(io::crc32c(bytes_of(zeros)), 0x8A9136AAu);
  const std::string data = random_bytes(10007, 9);
  const auto all = bytes_of(data);
  for (std::size_t n : {0u, 1u, 7u, 8u, 9u, 63u, 4096u, 10007u}) {
    EXPECT_EQ(io::crc32c(all.first(n)), io::crc32c_software(all.first(n))) << n;
    for (std::size_t cut : {std::size_t{0}, n / 3, n}) {
      EXPECT_EQ(io::crc32c(all.subspan(cut, n - cut), io::crc32c(all.first(cut))), io::crc32c(all.first(n)));
    }
  }
}

TEST(Archive, RoundTripKeepsTreeModesAndBytes) {
  TempDir tmp;
  const fs::path src = tmp.path() / "src", dst = tmp.path() / "dst";
  fs::create_directory(src);
  make_tree(src);
  const Packed p = pack(src);
  EXPECT_EQ(p.summary.stream_bytes, p.bytes.size());
  EXPECT_EQ(p.summary.crc32c, io::crc32c(p.bytes));
  EXPECT_LE(p.largest_chunk, io::kArchiveChunk);
  EXPECT_EQ(p.summary.entries, 13u);
  EXPECT_EQ(p.summary.file_bytes, io::kArchiveChunk * 2 + 12345 + 513 + 512 + 13 + 9 + 14);

  const io::ArchiveSummary u = unpack(p.bytes, dst);  // dst does not exist yet: created
  EXPECT_EQ(u.stream_bytes, p.summary.stream_bytes);
  EXPECT_EQ(u.crc32c, p.summary.crc32c);
  EXPECT_EQ(u.entries, p.summary.entries);
  EXPECT_EQ(u.file_bytes, p.summary.file_bytes);
  EXPECT_EQ(describe(dst), describe(src));
  EXPECT_EQ(fs::status(dst / "model" / "shards").permissions() & fs::perms::all, fs::perms(0555));

  // Same tree, same stream: entries are sorted, so a second pack matches byte for byte.
  EXPECT_EQ(pack(src).bytes, p.bytes);
}

TEST(Archive, StreamsThroughTinyReads) {
  TempDir tmp;
  fs::create_directory(tmp.path() / "src");
  write_file(tmp.path() / "src" / "a", random_bytes(5000, 4));
  fs::create_directory(tmp.path() / "src" / "d");
  write_file(tmp.path() / "src" / "d" / "b", "b");
  const Packed p = pack(tmp.path() / "src");
  for (std::size_t piece : {1u, 7u, 16u, 17u, 511u}) {
    const fs::path dst = tmp.path() / ("dst" + std::to_string(piece));
    unpack(p.bytes, dst, piece);
    EXPECT_EQ(describe(dst), describe(tmp.path() / "src")) << piece;
  }
}

TEST(Archive, EmptyDirectoryRoundTrips) {
  TempDir tmp;
  fs::create_directory(tmp.path() / "src");
  const Packed p = pack(tmp.path() / "src");
  EXPECT_EQ(p.summary.entries, 0u);
  fs::create_directory(tmp.path() / "dst");
  unpack(p.bytes, tmp.path() / "dst");
  EXPECT_TRUE(fs::is_empty(tmp.path() / "dst"));
}

TEST(Archive, PackRefusesWhatACheckpointCannotHold) {
  TempDir tmp;
  const fs::path src = tmp.path() / "src";
  EXPECT_THROW(pack(src), io::ArchiveError);  // missing
  fs::create_directory(src);
  fs::create_symlink("/etc/passwd", src / "abs");
  EXPECT_THROW(pack(src), io::ArchiveError);
  fs::remove(src / "abs");
  fs::create_symlink("../../x", src / "up");
  EXPECT_THROW(pack(src), io::ArchiveError);
  fs::remove(src / "up");
  ASSERT_EQ(::mkfifo((src / "fifo").c_str(), 0600), 0);
  try {
    pack(src);
    FAIL() << "a FIFO was packed";
  } catch (const io::ArchiveError& e) {
    EXPECT_NE(std::string(e.what()).find("FIFO"), std::string::npos) << e.what();
  }
}

TEST(Archive, SinkErrorsPropagate) {
  TempDir tmp;
  fs::create_directory(tmp.path() / "src");
  write_file(tmp.path() / "src" / "a", random_bytes(100, 5));
  struct DiskFull : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  EXPECT_THROW(io::pack_directory(tmp.path() / "src", [](auto) { throw DiskFull("disk full"); }), DiskFull);
}

TEST(Archive, UnpackRefusesANonEmptyTarget) {
  TempDir tmp;
  fs::create_directory(tmp.path() / "src");
  const Packed p = pack(tmp.path() / "src");
  fs::create_directory(tmp.path() / "dst");
  write_file(tmp.path() / "dst" / "keep", "mine");
  EXPECT_THROW(unpack(p.bytes, tmp.path() / "dst"), io::ArchiveError);
  EXPECT_EQ(read_all(tmp.path() / "dst" / "keep"), "mine");
}

// Every truncation and every single-byte flip (sampled) is refused and leaves dst empty.
TEST(Archive, DamagedOrTruncatedStreamsAreRefused) {
  TempDir tmp;
  const fs::path src = tmp.path() / "src", dst = tmp.path() / "dst";
  fs::create_directories(src / "d");
  write_file(src / "d" / "data", random_bytes(20000, 6));
  write_file(src / "note", "hello");
  const Packed p = pack(src);
  const std::size_t n = p.bytes.size();
  std::vector<std::size_t> cuts = {0, 1, 100, 511, 512, 1024, n / 2, n - 17, n - 16, n - 15, n - 1};
  for (std::size_t cut : cuts) {
    fs::create_directory(dst);
    EXPECT_THROW(unpack(std::span(p.bytes).first(cut), dst), io::ArchiveError) << "cut at " << cut;
    EXPECT_TRUE(fs::is_empty(dst)) << cut;
    fs::remove(dst);
  }
  std::mt19937 rng(7);
  std::vector<std::size_t> flips = {0, 156, 200, 600, 1100, n - 16, n - 9, n - 1};  // headers, data, trailer
  for (int i = 0; i < 60; ++i) flips.push_back(rng() % n);
  for (std::size_t at : flips) {
    std::vector<std::byte> bad = p.bytes;
    bad[at] ^= std::byte{0x20};
    fs::create_directory(dst);
    EXPECT_THROW(unpack(bad, dst), io::ArchiveError) << "flip at " << at;
    EXPECT_TRUE(fs::is_empty(dst)) << at;
    fs::remove(dst);
  }
  std::vector<std::byte> longer = p.bytes;
  longer.push_back(std::byte{0});
  EXPECT_THROW(unpack(longer, dst), io::ArchiveError);
  const std::string junk = "this is not an archive at all, just text that goes on for a while.";
  EXPECT_THROW(unpack(bytes_of(junk), tmp.path() / "dst2"), io::ArchiveError);
}

// A hostile stream: made with libarchive, as any tar tool would, with a valid trailer.
struct Hostile {
  struct Entry {
    std::string path;
    unsigned type = AE_IFREG;
    std::string data_or_target;
    std::string hardlink;
  };
  static std::vector<std::byte> make(const std::vector<Entry>& entries) {
    std::vector<std::byte> out;
    archive* a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    archive_write_set_bytes_in_last_block(a, 1);
    auto on_write = [](archive*, void* data, const void* buf, std::size_t n) -> la_ssize_t {
      auto* v = static_cast<std::vector<std::byte>*>(data);
      v->insert(v->end(), static_cast<const std::byte*>(buf), static_cast<const std::byte*>(buf) + n);
      return static_cast<la_ssize_t>(n);
    };
    archive_write_open2(a, &out, nullptr, on_write, nullptr, nullptr);
    for (const Entry& e : entries) {
      archive_entry* entry = archive_entry_new();
      archive_entry_copy_pathname(entry, e.path.c_str());
      archive_entry_set_filetype(entry, e.type);
      archive_entry_set_perm(entry, 0644);
      if (!e.hardlink.empty()) archive_entry_copy_hardlink(entry, e.hardlink.c_str());
      if (e.type == AE_IFLNK) archive_entry_copy_symlink(entry, e.data_or_target.c_str());
      if (e.type == AE_IFREG && e.hardlink.empty()) archive_entry_set_size(entry, static_cast<la_int64_t>(e.data_or_target.size()));
      EXPECT_GE(archive_write_header(a, entry), ARCHIVE_WARN) << archive_error_string(a);
      if (e.type == AE_IFREG && e.hardlink.empty()) archive_write_data(a, e.data_or_target.data(), e.data_or_target.size());
      archive_entry_free(entry);
    }
    archive_write_close(a);
    archive_write_free(a);
    const std::uint32_t crc = io::crc32c(out);
    const std::uint64_t length = out.size();
    const char magic[4] = {'R', 'T', 'K', '1'};
    for (char c : magic) out.push_back(static_cast<std::byte>(c));
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>(length >> (8 * i)));
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::byte>(crc >> (8 * i)));
    return out;
  }
};

TEST(Archive, HostileEntriesAreRefusedAndNothingEscapes) {
  TempDir tmp;
  const fs::path dst = tmp.path() / "box" / "dst";
  fs::create_directories(dst);
  using E = Hostile::Entry;
  const std::vector<std::pair<std::string, std::vector<E>>> cases = {
      {"dot-dot", {{"ok", AE_IFREG, "fine"}, {"../evil", AE_IFREG, "pwned"}}},
      {"dot-dot inside", {{"a/../../evil", AE_IFREG, "pwned"}}},
      {"absolute", {{(tmp.path() / "evil").string(), AE_IFREG, "pwned"}}},
      {"absolute link", {{"l", AE_IFLNK, "/etc/passwd"}}},
      {"escaping link", {{"d/l", AE_IFLNK, "../../evil"}}},
      // lexically "m/.." is the root, but m -> "." makes it the root's parent
      {"link through link", {{"m", AE_IFLNK, "."}, {"l", AE_IFLNK, "m/.."}}},
      {"write through link", {{"l", AE_IFLNK, "."}, {"l/x", AE_IFREG, "x"}}},
      {"hard link", {{"a", AE_IFREG, "a"}, {"h", AE_IFREG, "", "/etc/passwd"}}},
      {"duplicate", {{"a", AE_IFREG, "a"}, {"a", AE_IFREG, "b"}}},
      {"fifo", {{"f", AE_IFIFO, ""}}},
      {"device", {{"c", AE_IFCHR, ""}}},
  };
  for (const auto& [name, entries] : cases) {
    const std::vector<std::byte> stream = Hostile::make(entries);
    try {
      unpack(stream, dst);
      ADD_FAILURE() << name << ": accepted";
    } catch (const io::ArchiveError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(dst.string()), std::string::npos) << e.what();
    }
    EXPECT_TRUE(fs::is_empty(dst)) << name;
    EXPECT_FALSE(fs::exists(tmp.path() / "evil")) << name;
    EXPECT_FALSE(fs::exists(tmp.path() / "box" / "evil")) << name;
  }
  // The hostile writer itself is sound: a harmless stream made the same way unpacks.
  unpack(Hostile::make({{"d/a", AE_IFREG, "a"}, {"d/l", AE_IFLNK, "a"}}), dst);
  EXPECT_EQ(read_all(dst / "d" / "l"), "a");
}

}  // namespace
