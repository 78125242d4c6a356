#pragma once
// One untrusted results file through everything `ranktune report` does with it: the
// reader, every leaderboard format, its held-out evaluations in every format, and the
// HTML page. Shared by the libFuzzer target and the corpus
// replay test, so a crash the fuzzer found is replayed through the same calls.

#include <string>

#include "io/evaluations.h"
#include "io/store.h"
#include "report/evaluations.h"
#include "report/html.h"
#include "report/leaderboard.h"

namespace ranktune::fault {

/// Reads `path` and renders it. Returns "" when the file was accepted, else the
/// StoreError's message. Any other exception, or a crash, is a bug.
inline std::string read_and_render(const std::string& path) {
  try {
    const io::ResultsFile file = io::ResultsFile::read(path);
    constexpr report::Format kFormats[] = {report::Format::Table, report::Format::Csv, report::Format::Json,
                                           report::Format::Markdown};
    for (auto format : kFormats) report::render_leaderboard(file, {0, format});
    const std::vector<io::Evaluation> evaluations = io::read_evaluations(path);
    for (const io::Evaluation& e : evaluations)
      for (auto format : kFormats) report::render_evaluation(file, e, format);
    report::render_html(file, evaluations, 0);
    return "";
  } catch (const io::StoreError& e) {
    return e.what();
  }
}

}  // namespace ranktune::fault
