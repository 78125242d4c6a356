// `ranktune slurm status`: scontrol's job fields parsed and joined with the results file's
// progress (slurm/job_status.h).
#include "slurm/job_status.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "config/config.h"

namespace ranktune::slurm {
namespace {

// scontrol keys are CamelCase words, some with ':' or '/' (e.g. "TRES", "MinCPUsNode").
bool looks_like_key(const std::string& word, std::size_t eq) {
  if (eq == 0 || eq == std::string::npos) return false;
  for (std::size_t i = 0; i < eq; ++i) {
    const auto c = static_cast<unsigned char>(word[i]);
    if (!std::isalnum(c) && c != ':' && c != '/' && c != '_') return false;
  }
  return std::isupper(static_cast<unsigned char>(word[0])) != 0;
}

std::string field(const std::map<std::string, std::string>& f, const std::string& key) {
  const auto it = f.find(key);
  return it == f.end() ? "" : it->second;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

}  // namespace

std::map<std::string, std::string> parse_scontrol_job(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string word, last;
  while (in >> word) {
    const auto eq = word.find('=');
    if (looks_like_key(word, eq)) {
      last = word.substr(0, eq);
      out[last] = word.substr(eq + 1);
    } else if (!last.empty()) {
      out[last] += " " + word;
    }
  }
  return out;
}

Progress progress_of(const io::ResultsFile& file) {
  Progress p;
  const bool minimize = file.meta.mode == search::Mode::Min;
  for (const auto& t : file.trials) {
    ++p.trials_by_status[search::to_string(t.status)];
    ++p.trials;
    if (!std::isnan(t.best) && (!p.best || (minimize ? t.best < *p.best : t.best > *p.best))) {
      p.best = t.best;
      p.best_trial = t.id;
    }
  }
  p.results = static_cast<std::int64_t>(file.results.size());
  if (!file.results.empty()) p.last_time = file.results.back().time;
  for (const auto& e : file.events) {
    // The experiment's own `end` (a trial's has its id), until a resume goes on after it:
    // a job stopped by scancel and submitted again ends as its last run did.
    if (e.trial < 1 && e.kind == search::EventKind::End) p.ended = e.message;
    if (e.trial < 1 && e.kind == search::EventKind::Resume) p.ended.clear();
    if (e.kind == search::EventKind::Slurm) {
      // One per allocation: "job ID, restart N, ...". The same job again is a Slurm requeue;
      // another job is a submission of its own (`slurm submit` again, to resume).
      const std::string id = e.message.rfind("job ", 0) == 0 ? e.message.substr(4, e.message.find(',') - 4) : e.message;
      if (std::find(p.jobs.begin(), p.jobs.end(), id) != p.jobs.end()) ++p.requeues;
      else p.jobs.push_back(id);
    }
    p.last_time = std::max(p.last_time, e.time);
  }
  if (!file.events.empty()) {
    const auto& e = file.events.back();
    p.last_event = e.kind_name() + (e.message.empty() ? "" : ": " + e.message) + " at " + fixed(e.time, 4) + " s";
  }
  // The recorded config is the file's own; a config that no longer parses (a moved command
  // trainable) only costs the planned count.
  try {
    std::vector<std::string> overrides;
    std::istringstream lines(file.meta.overrides);
    for (std::string l; std::getline(lines, l);) {
      if (!l.empty()) overrides.push_back(l);
    }
    p.planned_trials = config::parse_config(file.meta.config_text, file.path + ":/config", overrides).num_samples;
  } catch (const std::exception&) {
  }
  return p;
}

std::string render_status(const JobView& job, const std::optional<Progress>& progress, const std::string& results_path,
                          const std::string& metric) {
  std::string out;
  if (job.job_id.empty()) {
    out += "job:        none recorded (not run under Slurm, and no `ranktune slurm submit` beside the file)\n";
  } else {
    out += "job:        " + job.job_id + " (from " + job.source + ")";
    if (const auto name = field(job.fields, "JobName"); !name.empty()) out += ", name " + name;
    out += "\n";
    if (job.fields.empty()) {
      out += "state:      unknown to Slurm" + (job.note.empty() ? std::string() : " (" + job.note + ")") + "\n";
    } else {
      const auto state = field(job.fields, "JobState");
      const auto reason = field(job.fields, "Reason");
      out += "state:      " + state + (reason.empty() || reason == "None" ? "" : " (" + reason + ")") + "\n";
      out += "time:       " + field(job.fields, "RunTime") + " of " + field(job.fields, "TimeLimit");
      if (const auto start = field(job.fields, "StartTime"); !start.empty() && start != "Unknown" && state == "PENDING") {
        out += ", expected start " + start;
      }
      out += "\n";
      const auto nodes = field(job.fields, "NodeList");
      out += "nodes:      " + field(job.fields, "NumNodes") + " (" + (nodes.empty() || nodes == "(null)" ? "none yet" : nodes) +
             "), " + field(job.fields, "NumTasks") + " tasks\n";
      out += "restarts:   " + field(job.fields, "Restarts") + "\n";
      if (const auto rc = field(job.fields, "ExitCode"); !rc.empty() && state != "PENDING" && state != "RUNNING") {
        out += "exit code:  " + rc + " (ranktune's code:signal; 4:0 means stopped and resumable)\n";
      }
      if (const auto log = field(job.fields, "StdOut"); !log.empty()) out += "log:        " + log + "\n";
      if (!job.note.empty()) out += "note:       " + job.note + "\n";
    }
  }
  out += "results:    " + results_path + "\n";
  if (!progress) {
    out += "progress:   no results file yet (the job has not started ranktune)\n";
    return out;
  }
  const auto& p = *progress;
  out += "trials:     " + std::to_string(p.trials) + (p.planned_trials ? " of " + std::to_string(*p.planned_trials) : "") + " (";
  bool first = true;
  for (const char* s : {"PENDING", "RUNNING", "PAUSED", "TERMINATED", "ERROR"}) {
    const auto it = p.trials_by_status.find(s);
    if (it == p.trials_by_status.end()) continue;
    out += (first ? "" : ", ") + std::to_string(it->second) + " " + s;
    first = false;
  }
  out += ")\n";
  out += "rows:       " + std::to_string(p.results) + " results, last at " + fixed(p.last_time, 4) + " s\n";
  if (p.best) out += "best:       " + metric + " = " + fixed(*p.best, 6) + " (trial " + std::to_string(p.best_trial) + ")\n";
  if (p.jobs.size() > 1) {
    out += "jobs:       " + std::to_string(p.jobs.size()) + " (";
    for (std::size_t i = 0; i < p.jobs.size(); ++i) out += (i ? ", " : "") + p.jobs[i];
    out += "; each resumed the file)\n";
  }
  if (p.requeues > 0) out += "requeues:   " + std::to_string(p.requeues) + "\n";
  if (!p.last_event.empty()) out += "last event: " + p.last_event + "\n";
  // A run that exhausts its searcher logs no `end` event; only stops (budget, target,
  // interruption) do.
  std::int64_t open = 0;
  for (const char* st : {"PENDING", "RUNNING", "PAUSED"}) {
    if (const auto it = p.trials_by_status.find(st); it != p.trials_by_status.end()) open += it->second;
  }
  std::string state;
  if (!p.ended.empty()) state = "ended: " + p.ended;
  else if (open == 0 && p.planned_trials && p.trials >= *p.planned_trials) state = "finished: every planned trial ended";
  else state = "running, or stopped without an end event (killed?); resume it to finish";
  out += "experiment: " + state + "\n";
  return out;
}

}  // namespace ranktune::slurm
