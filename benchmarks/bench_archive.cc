// Checkpoint packing throughput: io::pack_directory / io::unpack_directory of a directory
// (default 256 MiB of incompressible data) to and from a stream file on disk, against GNU
// tar on the same tree and the same disk in the same run, and `dd conv=fdatasync` of the
// same byte count as the disk's own write speed. Medians of --repeat runs, alternating
// which side goes first. Also reports peak RSS, which shows that neither side of the
// stream holds the checkpoint in memory.
//
// usage: bench_archive [--mib N] [--repeat R] [--dir DIR]   (DIR: a scratch folder on the
// disk to measure, default a mktemp folder under /tmp; it is removed at the end)

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/archive.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void write_random(const fs::path& p, std::size_t bytes, std::mt19937_64& rng) {
  std::FILE* f = std::fopen(p.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot create " + p.string());
  std::vector<std::uint64_t> buf(1 << 17);
  while (bytes > 0) {
    for (auto& w : buf) w = rng();
    const std::size_t n = std::min(bytes, buf.size() * 8);
    if (std::fwrite(buf.data(), 1, n, f) != n) throw std::runtime_error("short write to " + p.string());
    bytes -= n;
  }
  std::fclose(f);
}

// A checkpoint-like tree: one large weights file (3/4), 1 MiB shards, small metadata files.
void make_tree(const fs::path& src, std::size_t mib) {
  std::mt19937_64 rng(42);
  fs::create_directories(src / "shards");
  fs::create_directories(src / "meta");
  const std::size_t big = mib * 3 / 4, shards = mib - big;
  write_random(src / "weights.bin", big << 20, rng);
  for (std::size_t i = 0; i < shards; ++i) write_random(src / "shards" / ("s" + std::to_string(i)), 1 << 20, rng);
  for (int i = 0; i < 100; ++i) write_random(src / "meta" / ("m" + std::to_string(i) + ".json"), 1000, rng);
}

void run(const std::string& command) {
  if (std::system(command.c_str()) != 0) throw std::runtime_error("failed: " + command);
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

double pack_to_file(const fs::path& src, const fs::path& out) {
  const auto start = Clock::now();
  const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + out.string());
  ranktune::io::pack_directory(src, [&](std::span<const std::byte> b) {
    if (::write(fd, b.data(), b.size()) != static_cast<ssize_t>(b.size())) throw std::runtime_error("short write");
  });
  ::close(fd);
  return seconds_since(start);
}

double unpack_from_file(const fs::path& in, const fs::path& dst) {
  const auto start = Clock::now();
  const int fd = ::open(in.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + in.string());
  ranktune::io::unpack_directory(
      [&](std::span<std::byte> b) {
        const ssize_t n = ::read(fd, b.data(), b.size());
        if (n < 0) throw std::runtime_error("read failed");
        return static_cast<std::size_t>(n);
      },
      dst);
  ::close(fd);
  return seconds_since(start);
}

double timed(const std::string& command) {
  const auto start = Clock::now();
  run(command);
  return seconds_since(start);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mib = 256;
  int repeat = 3;
  fs::path dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--mib") mib = std::stoul(argv[i + 1]);
    else if (flag == "--repeat") repeat = std::stoi(argv[i + 1]);
    else if (flag == "--dir") dir = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: bench_archive [--mib N] [--repeat R] [--dir DIR]\n");
      return 2;
    }
  }
  if (mib < 4 || repeat < 1) {
    std::fprintf(stderr, "bench_archive: --mib must be >= 4 and --repeat >= 1\n");
    return 2;
  }
  bool own_dir = dir.empty();
  if (own_dir) {
    std::string tmpl = (fs::temp_directory_path() / "bench_archive.XXXXXX").string();
    if (!mkdtemp(tmpl.data())) return 1;
    dir = tmpl;
  } else {
    fs::create_directories(dir);
  }
  try {
    const fs::path src = dir / "src", stream = dir / "ckpt.rtk", tarball = dir / "ckpt.tar";
    const fs::path out = dir / "out", tar_out = dir / "tar_out";
    make_tree(src, mib);
    std::vector<double> pack, unpack, tar_c, tar_x, dd;
    for (int r = 0; r < repeat; ++r) {
      fs::remove_all(out);
      fs::remove_all(tar_out);
      fs::create_directories(tar_out);
      const std::string tc = "tar -cf " + quoted(tarball) + " -C " + quoted(src) + " .";
      const std::string tx = "tar -xf " + quoted(tarball) + " -C " + quoted(tar_out);
      if (r % 2 == 0) {
        pack.push_back(pack_to_file(src, stream));
        tar_c.push_back(timed(tc));
        unpack.push_back(unpack_from_file(stream, out));
        tar_x.push_back(timed(tx));
      } else {
        tar_c.push_back(timed(tc));
        pack.push_back(pack_to_file(src, stream));
        tar_x.push_back(timed(tx));
        unpack.push_back(unpack_from_file(stream, out));
      }
      dd.push_back(timed("dd if=/dev/zero of=" + quoted(dir / "dd.bin") + " bs=1M count=" + std::to_string(mib) +
                         " conv=fdatasync status=none"));
      fs::remove(dir / "dd.bin");
    }
    run("cmp -s " + quoted(src / "weights.bin") + " " + quoted(out / "weights.bin"));
    const double total = static_cast<double>(mib);
    const double p = median(pack), u = median(unpack), c = median(tar_c), x = median(tar_x), d = median(dd);
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    std::printf("bench_archive: %zu MiB tree (1 file of %zu MiB, %zu of 1 MiB, 100 of 1 KB), %d runs, medians, on %s\n",
                mib, mib * 3 / 4, mib - mib * 3 / 4, repeat, dir.c_str());
    std::printf("  pack    %7.3f s  %7.0f MiB/s   tar -c %7.3f s  %7.0f MiB/s   ratio %.2f\n", p, total / p, c,
                total / c, c / p);
    std::printf("  unpack  %7.3f s  %7.0f MiB/s   tar -x %7.3f s  %7.0f MiB/s   ratio %.2f\n", u, total / u, x,
                total / x, x / u);
    std::printf("  round trip %7.3f s vs tar %7.3f s: ratio %.2f (above 1: ranktune faster)\n", p + u, c + x,
                (c + x) / (p + u));
    std::printf("  disk: dd %zu MiB conv=fdatasync %7.3f s  %7.0f MiB/s\n", mib, d, total / d);
    std::printf("  peak RSS of this process: %.1f MiB (the tree is %zu MiB)\n", usage.ru_maxrss / 1024.0, mib);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_archive: %s\n", e.what());
    if (own_dir) fs::remove_all(dir);
    return 1;
  }
  if (own_dir) fs::remove_all(dir);
  return 0;
}
