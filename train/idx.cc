// Reading and writing IDX files, plain or gzip, through zlib (train/idx.h: the format).
#include "train/idx.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

namespace ranktune::train {
namespace {

struct GzCloser {
  void operator()(gzFile f) const noexcept { gzclose(f); }
};
using GzFile = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

std::string with_hint(const std::string& msg, const std::string& hint) {
  return hint.empty() ? msg : msg + ". " + hint;
}

// Reads exactly n bytes; false on a short read (truncated file or a gzip error).
bool read_exact(gzFile f, void* dst, std::size_t n) {
  auto* p = static_cast<unsigned char*>(dst);
  while (n > 0) {
    // gzread takes an unsigned count; chunks keep huge reads inside its range.
    const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n, 1u << 30));
    const int got = gzread(f, p, chunk);
    if (got <= 0) return false;
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

std::string gz_problem(gzFile f) {
  int code = Z_OK;
  const char* msg = gzerror(f, &code);
  if (code == Z_OK || code == Z_STREAM_END) return "the file ends early (truncated)";
  if (code == Z_ERRNO) return std::strerror(errno);
  return std::string("corrupt gzip data (") + msg + ")";
}

}  // namespace

IdxArray read_idx(const std::string& path, const std::string& hint) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw DataError(with_hint(path + ": no such file", hint));
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) throw DataError(with_hint(path + ": cannot open: " + std::strerror(errno), hint));
  gzbuffer(f.get(), 1 << 20);

  unsigned char head[4];
  if (!read_exact(f.get(), head, 4))
    throw DataError(with_hint(path + ": not an IDX file: " + gz_problem(f.get()), hint));
  if (head[0] != 0 || head[1] != 0)
    throw DataError(with_hint(path + ": not an IDX file (bad magic number)", hint));
  if (head[2] != 0x08)
  {
    char type[8];
    std::snprintf(type, sizeof type, "0x%02x", head[2]);
    throw DataError(with_hint(path + ": IDX value type " + type + " is not supported (only unsigned bytes, 0x08)", hint));
  }
  const int ndim = head[3];
  if (ndim < 1 || ndim > 4)
    throw DataError(with_hint(path + ": IDX file with " + std::to_string(ndim) + " dimensions (expected 1 to 4)", hint));

  IdxArray a;
  std::uint64_t total = 1;
  for (int i = 0; i < ndim; ++i) {
    unsigned char b[4];
    if (!read_exact(f.get(), b, 4))
      throw DataError(with_hint(path + ": IDX header: " + gz_problem(f.get()), hint));
    const std::uint32_t d = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
    a.dims.push_back(d);
    total *= d;
  }
  // A corrupt header must not make us allocate terabytes: no data set of this family is
  // anywhere near 4 GiB.
  if (total > (std::uint64_t{1} << 32))
    throw DataError(with_hint(path + ": IDX header claims " + std::to_string(total) + " values (corrupt header)", hint));
  a.data.resize(total);
  if (!read_exact(f.get(), a.data.data(), a.data.size()))
    throw DataError(with_hint(path + ": IDX data: " + gz_problem(f.get()), hint));
  unsigned char extra;
  if (gzread(f.get(), &extra, 1) != 0)
    throw DataError(with_hint(path + ": has data after the " + std::to_string(total) + " values its header declares (corrupt)", hint));
  return a;
}

void write_idx(const std::string& path, const IdxArray& a, bool gzip) {
  GzFile f(gzopen(path.c_str(), gzip ? "wb6" : "wbT"));
  if (!f) throw DataError(path + ": cannot create: " + std::strerror(errno));
  std::vector<unsigned char> head = {0, 0, 0x08, static_cast<unsigned char>(a.dims.size())};
  for (std::uint32_t d : a.dims) {
    head.push_back(static_cast<unsigned char>(d >> 24));
    head.push_back(static_cast<unsigned char>(d >> 16));
    head.push_back(static_cast<unsigned char>(d >> 8));
    head.push_back(static_cast<unsigned char>(d));
  }
  bool ok = gzwrite(f.get(), head.data(), static_cast<unsigned>(head.size())) == static_cast<int>(head.size());
  if (ok && !a.data.empty())
    ok = gzwrite(f.get(), a.data.data(), static_cast<unsigned>(a.data.size())) == static_cast<int>(a.data.size());
  if (!ok || gzclose(f.release()) != Z_OK) throw DataError(path + ": write failed");
}

}  // namespace ranktune::train
