#pragma once
// One untrusted results file through everything `ranktune report` does with it: the
// reader, then every leaderboard format. Shared by the libFuzzer target and the corpus
// replay test, so a crash the fuzzer found is replayed through the same calls.

#include <string>

#include "io/store.h"
#include "report/leaderboard.h"

namespace ranktune::fault {

/// Reads `path` and renders it. Returns "" when the file was accepted, else the
/// StoreError's message. Any other exception, or a crash, is a bug.
inline std::string read_and_render(const std::string& path) {
  try {
    const io::ResultsFile file = io::ResultsFile::read(path);
    for (auto format : {report::Format::Table, report::Format::Csv, report::Format::Json,
                        report::Format::Markdown})
      report::render_leaderboard(file, {0, format});
    return "";
  } catch (const io::StoreError& e) {
    return e.what();
  }
}

}  // namespace ranktune::fault
