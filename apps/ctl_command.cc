// `ranktune ctl`: live control of a running experiment. The request goes into the control
// file next to the results file (io/control_file.h); the run's rank 0 carries it out and
// answers with a "control" event in the results file, which this command waits for.

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "config/stored.h"
#include "apps/commands.h"
#include "experiment/exit_codes.h"
#include "io/control_file.h"
#include "io/store.h"
#include "mpi/launch.h"
#include "controller/control.h"
#include "report/live_status.h"

namespace ranktune::apps {
namespace {

// "name=value": an integer, else a number, else a string (quotes around it optional).
std::pair<std::string, search::Value> parse_assignment(const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument("'" + text + "' is not name=value (e.g. lr=0.01, activation=tanh)");
  const std::string name = text.substr(0, eq);
  std::string v = text.substr(eq + 1);
  if (v.empty()) throw std::invalid_argument("'" + text + "' has no value");
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front())
    return {name, v.substr(1, v.size() - 2)};
  std::size_t used = 0;
  try {
    const long long i = std::stoll(v, &used);
    if (used == v.size()) return {name, static_cast<std::int64_t>(i)};
    const double d = std::stod(v, &used);
    if (used == v.size()) return {name, d};
  } catch (const std::logic_error&) {
  }
  return {name, v};
}

// A trial id or a count as typed: decimal digits that fit an int64. CLI11 reads integers
// with strtoll in base 0, which gives the largest value for any longer number (trial
// 99999999999999999999 was echoed as 9223372036854775807) and octal for a leading 0.
CLI::Validator whole_number(const std::string& what) {
  return CLI::Validator(
      [what](std::string& text) -> std::string {
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
          return "'" + text + "' is not a " + what + " (a whole number, such as 7)";
        std::int64_t value = 0;
        if (std::from_chars(text.data(), text.data() + text.size(), value).ec == std::errc::result_out_of_range)
          return "'" + text + "' is out of range: a " + what + " is at most " +
                 std::to_string(std::numeric_limits<std::int64_t>::max());
        text = std::to_string(value);  // leading zeros are decimal, not octal
        return "";
      },
      "", what);
}

std::string new_id() {
  std::random_device rd;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08x%04x", rd(), static_cast<unsigned>(::getpid()) & 0xffffu);
  return buf;
}

// `ctl status`: read only, so it works on a finished file too, and needs no control file.
int run_status(const CtlOptions& o) {
  const auto format = report::parse_format(o.format);
  if (!format) throw std::invalid_argument("unknown --format '" + o.format + "'; valid: table, markdown, json");
  const bool live = io::marked_open_for_writing(o.results) && !io::writer_died(o.results);
  const io::ResultsFile file = io::ResultsFile::read(o.results);
  const config::ExperimentConfig cfg = config::stored_config(file);
  std::fputs(report::render_status(file, cfg, *format, live).c_str(), stdout);
  return experiment::kExitOk;
}

}  // namespace

int run_ctl(const CtlOptions& o) {
  mpi::require_one_process("ranktune ctl", "send the request again");
  if (o.op == "status") return run_status(o);
  const io::ResultsFile file = io::ResultsFile::read(o.results);  // a results file, or a clear error
  using Kind = controller::ControlRequest::Kind;
  controller::ControlRequest r;
  bool known = false;
  for (const Kind k : {Kind::Stop, Kind::Set, Kind::Add, Kind::Pause, Kind::Resume, Kind::Budget, Kind::StopExperiment})
    if (o.op == controller::to_string(k)) r.kind = k, known = true;
  if (!known) throw std::logic_error("ctl: no request kind for '" + o.op + "'");
  if (r.kind == Kind::Budget && !o.time_budget_s && !o.num_samples && !o.max_t)
    throw std::invalid_argument("ctl budget: give --time-budget-s S, --num-samples N or --max-t T (one or more)");
  r.time_budget_s = o.time_budget_s;
  r.num_samples = o.num_samples;
  r.max_t = o.max_t;
  r.trial = o.trial;
  r.force = o.force;
  r.count = o.count;
  if (r.kind == controller::ControlRequest::Kind::Add && (o.count > 0) == !o.assignments.empty())
    throw std::invalid_argument("ctl add: give either a whole config (name=value for every parameter) or --count N");
  // The bound rank 0 applies to one request (controller/control.h), for a prompt answer.
  if (r.count > controller::kMaxAddCount)
    throw std::invalid_argument("ctl add --count: " + controller::check_added_trials(r.count, 0, -1));
  std::map<std::string, std::string> given;  // name -> its assignment, to name a repeat
  for (const std::string& a : o.assignments) {
    auto [name, value] = parse_assignment(a);
    if (const auto [it, fresh] = given.emplace(name, a); !fresh)
      throw std::invalid_argument("'" + name + "' is given twice (" + it->second + " and " + a +
                                  "): give each parameter once");
    r.config[name] = value;
  }
  // Checked here for a prompt answer; rank 0 checks again (the file is an open channel).
  if ((r.kind == Kind::Set || r.kind == Kind::Add) && r.count == 0) {
    const config::ExperimentConfig cfg = config::stored_config(file);
    const std::string why =
        controller::check_control_config(cfg.space, r.config, r.kind == controller::ControlRequest::Kind::Add, r.force);
    if (!why.empty()) throw std::invalid_argument(why);
  }
  if (!io::marked_open_for_writing(o.results))
    throw std::invalid_argument(o.results + ": no run is writing it, so there is nothing to control (live control " +
                                "acts on a running experiment; start or resume it with `ranktune run --resume`)");
  // Marked open, yet no writer lock on it: its writer was killed (kill -9, a lost node) and
  // nothing reads requests, so waiting for an answer is pointless. On a network file system
  // another node's lock may not be visible here (NFS mounted `nolock`): there only the wait
  // can tell, and its message says what the free lock suggests.
  const io::WriterCheck writer = io::writer_lock_state(o.results);
  if (writer == io::WriterCheck::Free && !io::on_network_file_system(o.results))
    throw std::invalid_argument(o.results + ": no run is writing it: its writer was killed (kill -9, a lost node) " +
                                "before it could close the file (its HDF5 header still says it is open, but no " +
                                "process holds its writer lock), so nothing reads requests. Resume it with `ranktune " +
                                "run CONFIG --resume`, then send the request again");
  r.id = new_id();
  io::append_control(o.results, r);  // with our uid; refused unless we own the run's control file
  if (o.wait_s <= 0) {
    std::printf("ranktune ctl: sent #%s to %s\n", r.id.c_str(), io::control_path(o.results).c_str());
    return 0;
  }
  const std::string tag = "#" + r.id + " ";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.wait_s);
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    io::ResultsFile now;
    try {
      now = io::ResultsFile::read(o.results, /*results=*/false);  // the answer is an event
    } catch (const io::StoreError&) {
      continue;  // caught mid-flush by a reader of a live file: look again
    }
    // The answer first; then, for a `pending` one, the second answer that says it took
    // effect when that came already (a changed trial now goes on within a step or two).
    std::optional<int> code;
    for (const io::EventRow& e : now.events) {
      if (e.kind != search::EventKind::Control || e.message.rfind(tag, 0) != 0) continue;
      const std::string answer = e.message.substr(tag.size());
      std::printf("ranktune ctl: %s\n", answer.c_str());
      const bool accepted = answer.rfind("applied", 0) == 0 || answer.rfind("pending", 0) == 0;
      if (!code) code = accepted ? experiment::kExitOk : experiment::kExitUsage;
    }
    if (code) return *code;
  }
  std::fprintf(stderr,
               "ranktune ctl: no answer from the run within %.0f s. Rank 0 reads %s four times a second while it "
               "runs: is the run still going, and is the file on a file system its node shares? The request (#%s) "
               "stays in the file; a run started later ignores it.%s\n",
               o.wait_s, io::control_path(o.results).c_str(), r.id.c_str(),
               io::writer_lock_state(o.results) == io::WriterCheck::Free
                   ? " No process here holds the file's writer lock: unless its file system hides locks taken on "
                     "other machines, the run was killed; resume it with `ranktune run CONFIG --resume`."
                   : "");
  return experiment::kExitNoAnswer;
}

void setup_ctl(CLI::App& app) {
  const auto ctl = std::make_shared<CtlOptions>();
  auto* ctl_cmd = app.add_subcommand(
      "ctl", "Live control of a running experiment: stop, change, pause or resume a trial, add trials, change the "
             "stopping rules, stop the experiment; and its status");
  ctl_cmd->require_subcommand(1);
  ctl_cmd->add_option("--wait", ctl->wait_s, "Seconds to wait for the run's answer (0: do not wait)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  auto* ctl_stop = ctl_cmd->add_subcommand("stop", "End a trial now (TERMINATED; checkpointed first with at_end)");
  auto* ctl_set = ctl_cmd->add_subcommand(
      "set", "Change a trial's hyperparameters; a running one checkpoints and goes on from there with them");
  auto* ctl_add = ctl_cmd->add_subcommand("add", "Add a trial with the given config (every active parameter of the space)");
  for (auto* sub : {ctl_stop, ctl_set, ctl_add}) {
    sub->add_option("results", ctl->results, "Results file of the running experiment (.h5)")->required();
    if (sub != ctl_add)
      sub->add_option("trial", ctl->trial, "Trial id")->required()->check(whole_number("trial id"))->check(CLI::PositiveNumber);
    if (sub != ctl_stop) {
      auto* values = sub->add_option("values", ctl->assignments, "name=value ... (e.g. lr=0.01 activation=tanh)");
      if (sub == ctl_set) values->required();
      sub->add_flag("--force", ctl->force, "Accept values outside the parameters' domains");
    }
  }
  ctl_add->add_option("--count", ctl->count, "Instead of a config: this many more trials from the search algorithm")
      ->check(whole_number("count"))
      ->check(CLI::PositiveNumber);
  auto* ctl_pause = ctl_cmd->add_subcommand(
      "pause", "Pause a trial: it checkpoints, stays PAUSED and its worker goes to other work, until ctl resume");
  auto* ctl_resume = ctl_cmd->add_subcommand("resume", "Put a trial that ctl pause paused back in the queue");
  for (auto* sub : {ctl_pause, ctl_resume}) {
    sub->add_option("results", ctl->results, "Results file of the running experiment (.h5)")->required();
    sub->add_option("trial", ctl->trial, "Trial id")->required()->check(whole_number("trial id"))->check(CLI::PositiveNumber);
  }
  auto* ctl_budget = ctl_cmd->add_subcommand(
      "budget", "Change the running experiment's stopping rules (kept when it is resumed)");
  ctl_budget->add_option("results", ctl->results, "Results file of the running experiment (.h5)")->required();
  ctl_budget->add_option("--time-budget-s", ctl->time_budget_s,
                         "New [stop] time_budget_s: seconds since the experiment was created (0: none)")
      ->check(CLI::NonNegativeNumber);
  ctl_budget->add_option("--num-samples", ctl->num_samples, "New num_samples: trials the search algorithm proposes")
      ->check(whole_number("number of trials"))
      ->check(CLI::PositiveNumber);
  ctl_budget->add_option("--max-t", ctl->max_t, "New [stop] max_t: iterations per trial (HyperBand refuses it)")
      ->check(whole_number("number of iterations"))
      ->check(CLI::PositiveNumber);
  auto* ctl_stop_experiment = ctl_cmd->add_subcommand(
      "stop-experiment", "Stop the experiment as SIGTERM to rank 0 does: trials pause with checkpoints, exit 4, resumable");
  ctl_stop_experiment->add_option("results", ctl->results, "Results file of the running experiment (.h5)")->required();
  auto* ctl_status = ctl_cmd->add_subcommand(
      "status", "Summary of a running or finished experiment from its results file: trials, best, workers, budget");
  ctl_status->add_option("results", ctl->results, "Results file (.h5)")->required();
  ctl_status->add_option("--format", ctl->format, "table, markdown or json")->capture_default_str();
  for (auto* sub : {ctl_stop, ctl_set, ctl_add, ctl_pause, ctl_resume, ctl_budget, ctl_stop_experiment, ctl_status}) {
    on_run(sub, [ctl, op = sub->get_name()] {
      ctl->op = op;
      return run_ctl(*ctl);
    });
  }
}

}  // namespace ranktune::apps
