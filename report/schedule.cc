// A PBT trial's hyperparameter schedule rebuilt from its "exploit" events, and its text
// form (report/schedule.h).
#include "report/schedule.h"

#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "io/json.h"
#include "report/grid.h"

namespace ranktune::report {

std::vector<ScheduleSegment> trial_schedule(const io::ResultsFile& file, search::TrialId trial) {
  const search::Trial* found = file.trial(trial);
  if (found == nullptr)
    throw std::invalid_argument("no trial " + std::to_string(trial) + " in " + file.path + " (it has " +
                                std::to_string(file.trials.size()) + " trials)");
  std::vector<ScheduleSegment> schedule;
  for (const io::EventRow& e : file.events) {
    if (e.trial != trial || e.kind != search::EventKind::Exploit) continue;
    nlohmann::json lineage;
    try {
      lineage = nlohmann::json::parse(e.message);
      ScheduleSegment s;
      s.from_iteration = lineage.at("iteration").get<std::int64_t>();
      s.config = io::config_from_json(lineage.at("after"));
      s.donor = lineage.at("donor").get<search::TrialId>();
      s.donor_iteration = lineage.at("donor_iteration").get<std::int64_t>();
      // The config before the first exploit is the trial's first one.
      if (schedule.empty()) schedule.push_back({0, io::config_from_json(lineage.at("before")), 0, 0});
      schedule.push_back(std::move(s));
    } catch (const nlohmann::json::exception& x) {
      throw std::invalid_argument(file.path + ": exploit event of trial " + std::to_string(trial) + " at time " +
                                  std::to_string(e.time) + " holds no lineage JSON (" + x.what() +
                                  "): was the file written by ranktune?");
    } catch (const std::invalid_argument& x) {  // a config in it that is not one (io::config_from_json)
      throw std::invalid_argument(file.path + ": exploit event of trial " + std::to_string(trial) + " at time " +
                                  std::to_string(e.time) + ": " + x.what() + ": was the file written by ranktune?");
    }
  }
  if (schedule.empty()) schedule.push_back({0, found->config, 0, 0});
  return schedule;
}

std::string render_schedule(const std::vector<ScheduleSegment>& schedule, std::int64_t last_iteration) {
  std::ostringstream out;
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    const ScheduleSegment& s = schedule[i];
    const std::int64_t end = i + 1 < schedule.size() ? schedule[i + 1].from_iteration : last_iteration;
    out << "iterations " << s.from_iteration + 1 << "-" << end << ":";
    for (const auto& [name, value] : s.config) out << ' ' << one_line(name) << '=' << one_line(search::to_string(value));
    if (s.donor != 0) out << " (from trial " << s.donor << " at iteration " << s.donor_iteration << ")";
    out << '\n';
  }
  return out.str();
}

}  // namespace ranktune::report
