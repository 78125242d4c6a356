// fingerprint_file (train/trainable.h). The kinds' table, make_trainable and validate are
// train/registry.cc.

#include "train/trainable.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <span>
#include <vector>

#include "io/crc32c.h"

namespace ranktune::train {

DataFile fingerprint_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TrialFailure(path + ": cannot open it to fingerprint it: " + std::strerror(errno));
  DataFile f{path, 0, 0};
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    f.crc32c = io::crc32c(std::as_bytes(std::span(buf.data(), n)), f.crc32c);
    f.bytes += n;
  }
  if (in.bad()) throw TrialFailure(path + ": read error while fingerprinting it");
  return f;
}

}  // namespace ranktune::train
