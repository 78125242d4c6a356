// Replays the fault corpus (tests/fault/corpus/*.h5.gz: inputs that once crashed, hung or
// misbehaved in the reader, found by fuzz_results_reader) through the same calls as the
// fuzzer. Each input runs in a child process with a time limit, so one crash or hang is
// reported by name and the others still run.
//
// usage: corpus_replay CORPUS_DIR [SECONDS_PER_FILE]
// Passes when every file is refused with a one-line StoreError naming the file.

#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/fault/results_input.h"

namespace fs = std::filesystem;

namespace {

enum ChildExit { kRefused = 0, kAccepted = 10, kBadMessage = 11, kNoInput = 12 };

// gzread passes uncompressed files through unchanged, so plain inputs work too.
bool inflate_to(const fs::path& from, const fs::path& to) {
  gzFile in = gzopen(from.c_str(), "rb");
  std::FILE* out = std::fopen(to.c_str(), "wb");
  bool ok = in && out;
  char buf[1 << 16];
  int n = 0;
  while (ok && (n = gzread(in, buf, sizeof buf)) > 0) ok = std::fwrite(buf, 1, n, out) == static_cast<std::size_t>(n);
  ok = ok && n == 0;
  if (in) gzclose(in);
  if (out) ok = std::fclose(out) == 0 && ok;
  return ok;
}

int run_child(const fs::path& input, const fs::path& scratch) {
  if (!inflate_to(input, scratch)) return kNoInput;
  const std::string message = ranktune::fault::read_and_render(scratch.string());
  if (message.empty()) return kAccepted;
  if (message.find('\n') != std::string::npos || message.find(scratch.string()) == std::string::npos) {
    std::fprintf(stderr, "  message: %s\n", message.c_str());
    return kBadMessage;
  }
  std::printf("  %s\n", message.c_str());
  return kRefused;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: corpus_replay CORPUS_DIR [SECONDS_PER_FILE]\n");
    return 2;
  }
  const unsigned limit = argc > 2 ? static_cast<unsigned>(std::stoul(argv[2])) : 30;
  std::vector<fs::path> inputs;
  for (const auto& e : fs::directory_iterator(argv[1]))
    if (e.is_regular_file() && e.path().filename().string().front() != '.' && e.path().extension() != ".md")
      inputs.push_back(e.path());
  std::sort(inputs.begin(), inputs.end());
  if (inputs.empty()) {
    std::fprintf(stderr, "FAIL: no inputs in %s\n", argv[1]);
    return 1;
  }
  const fs::path scratch_dir = fs::temp_directory_path() / ("corpus_replay." + std::to_string(getpid()));
  fs::create_directories(scratch_dir);
  int failures = 0;
  for (const fs::path& input : inputs) {
    const fs::path scratch = scratch_dir / (input.extension() == ".gz" ? input.stem() : input.filename());
    std::printf("%s\n", input.filename().c_str());
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
      alarm(limit);  // SIGALRM's default action ends a hung child
      const int code = run_child(input, scratch);
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    std::string verdict;
    if (WIFSIGNALED(status))
      verdict = WTERMSIG(status) == SIGALRM ? "hung for " + std::to_string(limit) + " s"
                                            : std::string("crashed: ") + strsignal(WTERMSIG(status));
    else if (WEXITSTATUS(status) == kAccepted) verdict = "was accepted as a results file";
    else if (WEXITSTATUS(status) == kBadMessage) verdict = "gave an error that is not one line naming the file";
    else if (WEXITSTATUS(status) == kNoInput) verdict = "could not be decompressed";
    else if (WEXITSTATUS(status) != kRefused) verdict = "exited " + std::to_string(WEXITSTATUS(status));
    if (!verdict.empty()) {
      std::printf("FAIL: %s %s\n", input.filename().c_str(), verdict.c_str());
      ++failures;
    }
  }
  std::error_code ec;
  fs::remove_all(scratch_dir, ec);
  std::printf("%zu inputs, %d failed\n", inputs.size(), failures);
  return failures == 0 ? 0 : 1;
}
