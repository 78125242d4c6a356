#pragma once
/// `ranktune report RESULTS.h5 --trial T`: one trial whole. Its status and how it ended, its
/// config, its metric history (with a sparkline of the experiment metric when the output is
/// a terminal), its events, checkpoints, failure and log tail. Pure: results file in, text out.

#include <string>

#include "io/store.h"
#include "report/leaderboard.h"

namespace ranktune::report {

/// `utf8_sparkline`: draw the metric's history as a line of block characters (for a TTY).
/// Table and Markdown are for people; JSON is one object {trial, status, ..., config,
/// history: [{attempt, iteration, time, metrics: {...}}], events, checkpoints, error,
/// log_tail}; CSV is the history, a row per result. Throws std::invalid_argument for a
/// trial the file does not have.
std::string render_trial(const io::ResultsFile& file, search::TrialId id, Format format, bool utf8_sparkline);

/// The values as a line of the eight block characters U+2581..U+2588, lowest to highest,
/// at most `width` of them (longer series are averaged into `width` buckets); NaN is a
/// space. For people: nothing parses it.
std::string sparkline(const std::vector<double>& values, std::size_t width = 60);

}  // namespace ranktune::report
