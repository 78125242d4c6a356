#include <cstdio>
#include <stdexcept>

#include "apps/commands.h"
#include "io/store.h"
#include "report/leaderboard.h"

namespace ranktune::apps {

int run_report(const ReportOptions& o) {
  const auto format = report::parse_format(o.format);
  if (!format) throw std::invalid_argument("unknown --format '" + o.format + "'; valid: table, csv, json, markdown");
  const io::ResultsFile file = io::ResultsFile::read(o.results);
  std::fputs(report::render_leaderboard(file, {o.top, *format}).c_str(), stdout);
  return 0;
}

}  // namespace ranktune::apps
