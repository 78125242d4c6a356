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
/// evaluation lists them. With `pareto` (a multi-objective experiment): rank is the place on
/// its leaderboard (Pareto order), and a pareto_rank column follows it.
Grid evaluation_grid(const io::ResultsFile& file, const io::Evaluation& evaluation, const ParetoView* pareto = nullptr);

/// The split of the latency: a row per (trial, checkpoint iteration, batch size) whose split
/// was measured, with p50, p90 and p99 in ms of preprocessing ("pre"), inference ("inf") and
/// postprocessing ("post"); blank where a part was not measured. No rows when none was
/// (an evaluation recorded before the split, or a script that sent none).
Grid latency_split_grid(const io::Evaluation& evaluation);

/// The grid in `format`: Table and Markdown with a title line naming the evaluation, its
/// date, device and threads, and the split grid below when it has rows; CSV bare (the main
/// grid only); JSON as one object {evaluation, created, split, device, threads, metrics:
/// [...], latency: [...], trace: [...]} holding every row as recorded (a latency row's
/// split as pre_p50_ms ... post_p99_ms, null when not measured).
std::string render_evaluation(const io::ResultsFile& file, const io::Evaluation& evaluation, Format format,
                              const ParetoView* pareto = nullptr);

/// The trace of the evaluation's timed batches: a chart per trial (at most `max_trials`,
/// in the evaluation's order), the latency of each batch in ms against its start, a line
/// per batch size. "" when the evaluation has no trace.
std::string latency_trace_chart(const io::Evaluation& evaluation, std::size_t max_trials = 6);

/// The split as stacked bars: a bar per (trial, batch size) of the median preprocessing,
/// inference and postprocessing times, each part a colour. "" when no split was measured.
std::string latency_split_chart(const io::Evaluation& evaluation);

}  // namespace ranktune::report
