#pragma once
/// Held-out evaluations (io/evaluations.h) as tables for people: one row per evaluated
/// trial with its held-out metrics and its latency at each batch size. Pure: no I/O.

#include <string>

#include "io/evaluations.h"
#include "io/store.h"
#include "report/grid.h"
#include "report/leaderboard.h"

namespace ranktune::report {

/// Rows: rank (on the leaderboard), trial_id, iteration (of the checkpoint evaluated), the
/// experiment metric at that checkpoint (blank when unknown), each held-out metric, then
/// per batch size B: "bB p50_ms", "bB p99_ms" and "bB samples/s". Trials in the order the
/// evaluation lists them.
Grid evaluation_grid(const io::ResultsFile& file, const io::Evaluation& evaluation);

/// The grid in `format`: Table and Markdown with a title line naming the evaluation, its
/// date, device and threads; CSV bare; JSON as one object {evaluation, created, split,
/// device, threads, metrics: [...], latency: [...]} holding every row as recorded.
std::string render_evaluation(const io::ResultsFile& file, const io::Evaluation& evaluation, Format format);

}  // namespace ranktune::report
