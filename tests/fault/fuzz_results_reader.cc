// libFuzzer target: arbitrary bytes as a results file (built with -DRANKTUNE_FUZZ=ON and
// clang; see tests/fault/README.md). HDF5 opens files by name, so each input is written to
// a per-process file in /dev/shm (tmpfs: no disk I/O per execution).

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "tests/fault/results_input.h"

namespace {

std::string input_path() {
  const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  return std::string(dir) + "/ranktune-fuzz-" + std::to_string(getpid()) + ".h5";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = input_path();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) std::abort();
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  // Any exception other than StoreError escapes and is reported as a crash.
  ranktune::fault::read_and_render(path);
  return 0;
}
