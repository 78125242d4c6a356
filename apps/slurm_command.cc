// `ranktune slurm script|submit|status`: sbatch scripts for an experiment, submission, and
// the job's state joined with the experiment's progress.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include <CLI/CLI.hpp>

#include "apps/commands.h"
#include "experiment/exit_codes.h"
#include "experiment/experiment.h"
#include "io/store.h"
#include "slurm/client.h"
#include "slurm/job_status.h"
#include "slurm/sbatch_script.h"
#include "sys/safe_fs.h"

namespace ranktune::apps {
namespace {

// Slurm clients hang for minutes against an unreachable controller; status must not.
constexpr double kQueryTimeoutS = 15;

std::string self_path() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "ranktune" : self.string();
}

std::string first_line(const std::string& text) {
  const auto nl = text.find('\n');
  return nl == std::string::npos ? text : text.substr(0, nl);
}

// RESULTS.jobid beside the results file: the last job `submit` started for it.
std::string jobid_path(const std::string& results) {
  std::string p = results;
  if (p.size() > 3 && p.compare(p.size() - 3, 3, ".h5") == 0) p.resize(p.size() - 3);
  return p + ".jobid";
}

// Writes `text` to `path` by sys::replace_file; `what` names it in the error.
void write_beside(const std::string& path, const std::string& text, mode_t mode, const std::string& what) {
  try {
    sys::replace_file(path, text, mode);
  } catch (const sys::FsError& e) {
    throw std::runtime_error("cannot write " + what + ": " + e.what());
  }
}

// The job id in RESULTS.jobid, or "" when there is none. Read without blocking on a FIFO
// planted there, and from a regular file only; another user's file is read too (reading
// decides nothing: the id is only shown, with Slurm's own view of that job).
std::string read_job_id(const std::string& path) {
  sys::OpenOptions o;
  o.access = O_RDONLY;
  o.owned = false;
  sys::UniqueFd fd;
  try {
    fd = sys::open_file(path, o);
  } catch (const sys::FsError& e) {
    if (e.error() == ENOENT) return "";
    throw std::invalid_argument(e.what());
  }
  char buf[256];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string text(buf, static_cast<std::size_t>(n));
  const auto end = text.find_first_of(" \t\r\n");
  return text.substr(0, end);
}

// The options of the three subcommands, and what each runs.
struct SlurmCommand {
  std::string config;
  std::string results;
  std::vector<std::string> sets;
  slurm::ScriptOptions options;
  bool no_resume = false;
  bool wait = false;
  std::string status_results;

  config::ExperimentConfig experiment() const {
    config::ExperimentConfig cfg = experiment::load_experiment(config, sets, results);
    return cfg;
  }

  slurm::ScriptOptions script_options() const {
    slurm::ScriptOptions o = options;
    o.resume = !no_resume;
    o.sets = sets;
    if (o.ranktune.empty()) o.ranktune = self_path();
    return o;
  }

  int run_script() const {
    std::fputs(slurm::sbatch_script(experiment(), script_options()).c_str(), stdout);
    return 0;
  }

  int run_submit() const {
    const config::ExperimentConfig cfg = experiment();
    const slurm::ScriptOptions o = script_options();
    // Without --resume the job would refuse the file anyway; say so before queueing.
    if (!o.resume) experiment::refuse_existing_results(cfg);
    const std::string text = slurm::sbatch_script(cfg, o);
    const std::string path = slurm::script_path_for(cfg.results);
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    // The script and the job id go beside the results file, often in a shared folder: each
    // replaces its name (sys::replace_file), so a link planted there is never written through.
    write_beside(path, text, 0755, "the job script");
    std::vector<std::string> argv = {"sbatch", "--parsable"};
    if (wait) argv.push_back("--wait");
    argv.push_back(path);
    // With --wait the job's whole run passes; sbatch reports the job's exit code.
    const auto r = slurm::run_command(argv, 0, /*pass_stderr=*/wait);
    const std::string id = first_line(r.out).substr(0, first_line(r.out).find(';'));  // "ID;cluster"
    if (r.status == -1) throw std::runtime_error(r.err + ". Is Slurm installed (sbatch on PATH)?");
    if (id.empty()) {
      std::fprintf(stderr, "ranktune: sbatch refused %s: %s\n", path.c_str(), first_line(r.err).c_str());
      return experiment::kExitUsage;
    }
    write_beside(jobid_path(cfg.results), id + "\n", 0644, "the job id (job " + id + " is queued)");
    std::fprintf(stderr, "ranktune: submitted %s as job %s; results: %s\n", path.c_str(), id.c_str(), cfg.results.c_str());
    std::printf("%s\n", id.c_str());
    return wait ? r.status : 0;
  }

  int run_status() const {
    const std::string results = std::filesystem::absolute(status_results).lexically_normal().string();
    slurm::JobView job;
    std::optional<slurm::Progress> progress;
    std::string metric = "metric";
    const bool have_file = std::filesystem::exists(results);
    if (have_file) {
      const io::ResultsFile file = io::ResultsFile::read(results);
      progress = slurm::progress_of(file);
      metric = file.meta.metric;
      if (const auto it = file.meta.stack.find("slurm_job_id"); it != file.meta.stack.end()) {
        job.job_id = it->second;
        job.source = "the results file's stack";
      }
    }
    // A later submit (a resubmission to resume, or a job that has not started yet) wins.
    if (const std::string id = read_job_id(jobid_path(results)); !id.empty()) {
      if (id != job.job_id) {
        if (!job.job_id.empty()) job.note = "the results file was started by job " + job.job_id;
        job.job_id = id;
        job.source = jobid_path(results) + ", written by `ranktune slurm submit`";
      }
    }
    if (!have_file && job.job_id.empty()) io::ResultsFile::read(results);  // throws the usual one-line error
    if (!job.job_id.empty()) {
      const auto r = slurm::run_command({"scontrol", "show", "job", "--oneliner", job.job_id}, kQueryTimeoutS);
      if (r.status == 0) {
        job.fields = slurm::parse_scontrol_job(r.out);
      } else {
        // Finished jobs leave scontrol after MinJobAge; sacct knows them where accounting runs.
        const auto a = slurm::run_command({"sacct", "--noheader", "--parsable2", "--allocations", "--jobs", job.job_id,
                                           "--format", "JobName,State,ExitCode,Elapsed,Timelimit,NNodes,NodeList,Restarts"},
                                          kQueryTimeoutS);
        const std::string row = first_line(a.out);
        if (a.status == 0 && !row.empty()) {
          std::vector<std::string> f(1);
          for (char c : row) {
            if (c == '|') f.emplace_back();
            else f.back() += c;
          }
          f.resize(8);
          job.fields = {{"JobName", f[0]}, {"JobState", f[1]}, {"ExitCode", f[2]}, {"RunTime", f[3]},
                        {"TimeLimit", f[4]}, {"NumNodes", f[5]}, {"NodeList", f[6]}, {"Restarts", f[7]}};
          job.note = "from sacct: the job has left the controller's memory";
        } else {
          // A finished job leaves the controller MinJobAge seconds after its end.
          const std::string ctl = r.timed_out ? "did not answer within 15 s" : first_line(r.err);
          const std::string acct = a.timed_out ? "did not answer within 15 s" : first_line(a.err);
          job.note = "scontrol: " + (ctl.empty() ? std::string("no such job") : ctl) +
                     "; sacct: " + (acct.empty() ? std::string("no such job") : acct);
        }
      }
    }
    std::fputs(slurm::render_status(job, progress, results, metric).c_str(), stdout);
    return 0;
  }
};

}  // namespace

void setup_slurm(CLI::App& app) {
  const auto state = std::make_shared<SlurmCommand>();
  SlurmCommand& s = *state;
  auto* slurm = app.add_subcommand("slurm", "Slurm: write or submit an sbatch script, or show a job's state and progress");
  slurm->require_subcommand(1);
  auto* script = slurm->add_subcommand("script", "Print an sbatch script that runs the experiment");
  auto* submit = slurm->add_subcommand("submit", "Write the script beside the results file, sbatch it, print the job id");
  for (CLI::App* c : {script, submit}) {
    c->add_option("config", s.config, "Experiment TOML file")->required();
    c->add_option("--results", s.results, "Results file (overrides [experiment] results)");
    c->add_option("--set", s.sets, "Override a config key, passed on to the job (value is TOML)");
    c->add_option("--nodes", s.options.nodes, "Nodes")->capture_default_str();
    c->add_option("--gpus-per-node", s.options.gpus_per_node, "GPUs per node (0: a CPU job); one worker per GPU")
        ->capture_default_str();
    c->add_option("--workers", s.options.workers,
                  "Worker ranks (default: nodes x GPUs per node, or 4 per node on CPUs); a multiple of ranks_per_trial");
    c->add_option("--cpus-per-worker", s.options.cpus_per_worker, "Cores per rank (--cpus-per-task)")->capture_default_str();
    c->add_option("--time", s.options.time, "Time limit in Slurm's syntax (90, 1:30:00, 2-00:00:00)");
    c->add_option("--partition", s.options.partition, "Partition");
    c->add_option("--account", s.options.account, "Account");
    c->add_option("--qos", s.options.qos, "Quality of service");
    c->add_flag("--requeue", s.options.requeue, "Requeue the job after a time-limit stop; the next run resumes");
    c->add_option("--signal-lead", s.options.signal_lead_s,
                  "Seconds of warning before the time limit (default 300, at most half of --time)");
    c->add_option("--output", s.options.output, "Job log (default: RESULTS without .h5, then -%j.out)");
    c->add_option("--job-name", s.options.job_name, "Job name (default: ranktune-EXPERIMENT)");
    c->add_option("--ranktune", s.options.ranktune, "The ranktune program the job runs (default: this one)");
    c->add_flag("--no-resume", s.no_resume, "Do not pass --resume to `ranktune run` (a fresh run only)");
  }
  s.options.ranktune.clear();  // empty: this binary
  submit->add_flag("--wait", s.wait, "Wait for the job to end (sbatch --wait) and return its exit code");
  auto* status = slurm->add_subcommand("status", "The job's Slurm state joined with the experiment's progress");
  status->add_option("results", s.status_results, "Results file (.h5)")->required();
  on_run(script, [state] { return state->run_script(); });
  on_run(submit, [state] { return state->run_submit(); });
  on_run(status, [state] { return state->run_status(); });
}

}  // namespace ranktune::apps
