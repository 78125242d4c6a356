// The sbatch script of an experiment, every line commented, and the job shape behind it
// (slurm/sbatch_script.h: what the job does on a time limit and a requeue).
#include "slurm/sbatch_script.h"

#include <algorithm>
#include <stdexcept>

#include "experiment/exit_codes.h"
#include "ranktune/config.h"
#include "slurm/time_limit.h"

namespace ranktune::slurm {
namespace {

constexpr int kDefaultSignalLeadS = 300;
constexpr int kCpuWorkersPerNode = 4;
// sbatch keeps the --signal time in 16 bits.
constexpr int kMaxSignalLeadS = 65535;
constexpr std::size_t kCommentColumn = 44;

// Appends "code   # comment": the script promises a comment on every line.
void line(std::string& out, const std::string& code, const std::string& comment) {
  out += code;
  out += std::string(code.size() < kCommentColumn ? kCommentColumn - code.size() : 2, ' ');
  out += "# " + comment + "\n";
}

std::string strip_h5(const std::string& results) {
  const std::string ext = ".h5";
  if (results.size() > ext.size() && results.compare(results.size() - ext.size(), ext.size(), ext) == 0) {
    return results.substr(0, results.size() - ext.size());
  }
  return results;
}

// Slurm option values end at whitespace in #SBATCH lines and cannot be quoted reliably.
void check_sbatch_value(const std::string& option, const std::string& value) {
  for (char c : value) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '#' || c == '\'' || c == '"') {
      throw std::invalid_argument(option + " '" + value +
                                  "' contains a space, quote or '#', which #SBATCH lines cannot carry; choose another value");
    }
  }
}

std::string plural(int n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

}  // namespace

std::string shell_quote(const std::string& word) {
  const bool safe = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("/._-+=:,@%").find(c) != std::string_view::npos;
  });
  if (safe) return word;
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string script_path_for(const std::string& results) { return strip_h5(results) + ".sbatch"; }

std::string output_path_for(const std::string& results) { return strip_h5(results) + "-%j.out"; }

JobShape job_shape(const config::ExperimentConfig& cfg, const ScriptOptions& o) {
  JobShape s;
  if (o.nodes < 1) throw std::invalid_argument("--nodes must be at least 1, got " + std::to_string(o.nodes));
  if (o.gpus_per_node < 0) throw std::invalid_argument("--gpus-per-node must be 0 or more");
  if (o.cpus_per_worker < 1) throw std::invalid_argument("--cpus-per-worker must be at least 1");
  if (o.workers < 0) throw std::invalid_argument("--workers must be 0 (the default) or more");
  s.nodes = o.nodes;
  s.gpus_per_node = o.gpus_per_node;
  s.cpus_per_task = o.cpus_per_worker;
  s.ranks_per_trial = std::max(1, cfg.ranks_per_trial);
  if (o.workers > 0) {
    s.workers = o.workers;
    if (s.workers % s.ranks_per_trial != 0) {
      throw std::invalid_argument("--workers " + std::to_string(s.workers) + " is not a multiple of [resources] ranks_per_trial = " +
                                  std::to_string(s.ranks_per_trial) + " in " + cfg.path +
                                  "; every trial needs a whole gang of workers");
    }
  } else {
    // One worker per GPU; on CPUs a few per node. Rounded down (GPUs) or up (CPUs) to whole gangs.
    const int base = s.gpus_per_node > 0 ? s.nodes * s.gpus_per_node : s.nodes * kCpuWorkersPerNode;
    s.workers = s.gpus_per_node > 0 ? base / s.ranks_per_trial * s.ranks_per_trial
                                    : (base + s.ranks_per_trial - 1) / s.ranks_per_trial * s.ranks_per_trial;
    if (s.workers == 0) {
      throw std::invalid_argument("[resources] ranks_per_trial = " + std::to_string(s.ranks_per_trial) + " in " + cfg.path +
                                  " needs more GPUs than --nodes " + std::to_string(s.nodes) + " x --gpus-per-node " +
                                  std::to_string(s.gpus_per_node) + "; ask for more, or set --workers");
    }
  }
  if (s.workers < s.nodes) {
    throw std::invalid_argument("--nodes " + std::to_string(s.nodes) + " is more than the " + plural(s.workers, "worker") +
                                "; every node needs at least one worker");
  }
  s.tasks = s.workers + 1;

  for (const auto& [name, value] : {std::pair<const char*, const std::string*>{"--partition", &o.partition},
                                    {"--account", &o.account}, {"--qos", &o.qos}, {"--time", &o.time},
                                    {"--output", &o.output}, {"--job-name", &o.job_name}}) {
    check_sbatch_value(name, *value);
  }
  if (!o.time.empty()) s.time_limit_s = parse_time_limit(o.time);
  if (s.time_limit_s && *s.time_limit_s < 1) throw std::invalid_argument("--time " + o.time + " is zero; give the job some time");
  if (o.signal_lead_s) {
    s.signal_lead_s = *o.signal_lead_s;
    if (s.signal_lead_s < 1 || s.signal_lead_s > kMaxSignalLeadS) {
      throw std::invalid_argument("--signal-lead " + std::to_string(s.signal_lead_s) + " is out of range; give 1 to " +
                                  std::to_string(kMaxSignalLeadS) + " seconds");
    }
    if (s.time_limit_s && s.signal_lead_s >= *s.time_limit_s) {
      throw std::invalid_argument("--signal-lead " + std::to_string(s.signal_lead_s) + " s is not shorter than --time " + o.time +
                                  " (" + std::to_string(*s.time_limit_s) + " s); the warning would come before the job starts");
    }
  } else {
    // Half the limit at most, so a short job still gets most of its time for trials.
    s.signal_lead_s = kDefaultSignalLeadS;
    if (s.time_limit_s) s.signal_lead_s = static_cast<int>(std::clamp<std::int64_t>(*s.time_limit_s / 2, 1, kDefaultSignalLeadS));
  }
  return s;
}

std::string sbatch_script(const config::ExperimentConfig& cfg, const ScriptOptions& o) {
  const JobShape s = job_shape(cfg, o);
  if (cfg.path.empty() || cfg.path[0] != '/' || cfg.results.empty() || cfg.results[0] != '/') {
    throw std::invalid_argument("the experiment and results paths must be absolute in a job script (got '" + cfg.path +
                                "' and '" + cfg.results + "')");
  }
  const std::string job_name = o.job_name.empty() ? "ranktune-" + cfg.name : o.job_name;
  check_sbatch_value("--job-name", job_name);
  const std::string output = o.output.empty() ? output_path_for(cfg.results) : o.output;
  check_sbatch_value("--output (from the results path)", output);
  const std::string lead = std::to_string(s.signal_lead_s);
  const std::string interrupted = std::to_string(experiment::kExitInterrupted);
  const int gangs = s.workers / s.ranks_per_trial;

  std::string out = "#!/bin/bash\n";
  out += "# ranktune experiment '" + cfg.name + "' as a Slurm batch job, written by `ranktune slurm script` (ranktune " +
         RANKTUNE_VERSION + ").\n";
  out += "# Submit with `sbatch " + shell_quote(script_path_for(cfg.results)) + "`; follow with `ranktune slurm status " +
         shell_quote(cfg.results) + "`.\n";
  out += "# Every line says what it does; edit freely. Exit codes are ranktune's (docs/guide/running.md, \"Exit codes\").\n";
  line(out, "#SBATCH --job-name=" + job_name, "the name squeue shows");
  line(out, "#SBATCH --nodes=" + std::to_string(s.nodes), "nodes in the allocation");
  line(out, "#SBATCH --ntasks=" + std::to_string(s.tasks),
       plural(s.workers, "worker") + " (" + plural(gangs, "concurrent trial") + " of " + plural(s.ranks_per_trial, "rank") + " each" +
           ") + 1 driver (rank 0); Slurm spreads tasks evenly, so the first node holds the extra one");
  line(out, "#SBATCH --cpus-per-task=" + std::to_string(s.cpus_per_task), "cores for each rank (--cpus-per-worker); the driver gets as many");
  if (s.gpus_per_node > 0) {
    line(out, "#SBATCH --gpus-per-node=" + std::to_string(s.gpus_per_node),
         "GPUs per node; every task sees them all and a worker binds (its index among the node's workers) mod GPUs");
  }
  if (!o.time.empty()) line(out, "#SBATCH --time=" + o.time, "time limit; ranktune stops itself shortly before it");
  if (!o.partition.empty()) line(out, "#SBATCH --partition=" + o.partition, "partition (queue)");
  if (!o.account.empty()) line(out, "#SBATCH --account=" + o.account, "account charged for the job");
  if (!o.qos.empty()) line(out, "#SBATCH --qos=" + o.qos, "quality of service");
  line(out, "#SBATCH --output=" + output, "log of this script and every rank; %j is the job id, kept across requeues");
  line(out, "#SBATCH --open-mode=append", "a requeued run appends to that log instead of truncating it");
  line(out, "#SBATCH --signal=B:USR1@" + lead,
       "SIGUSR1 to this shell " + lead + " s before the time limit (Slurm checks on a 30 s tick: it may come up to ~60 s early)");
  if (o.requeue) {
    line(out, "#SBATCH --requeue", "may be requeued: after a time-limit stop it requeues itself and the next run resumes");
  } else {
    line(out, "#SBATCH --no-requeue", "never rerun by Slurm; after a time-limit stop, resubmit this script to resume");
  }
  line(out, "set -u", "an unset variable is an error, not an empty string");
  line(out, "experiment=" + shell_quote(cfg.path), "the experiment config");
  line(out, "results=" + shell_quote(cfg.results), "the results file: the first run creates it, a resumed run continues it");
  line(out, "ranktune=" + shell_quote(o.ranktune), "the ranktune program; every node must see it at this path");
  line(out, "export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}", "OpenMP/OpenBLAS threads per rank = its cores");
  line(out, "export SLURM_PMIX_FENCE=${SLURM_PMIX_FENCE:-ring}",
       "PMIx fences as a ring across the nodes: Slurm 22.05's default tree ends MPI_Init's barrier on each node alone, "
       "so a rank can send to one still in MPI_Init and crash it (docs/guide/slurm.md)");
  line(out, "# export HDF5_USE_FILE_LOCKING=FALSE", "uncomment when the results file is on NFS (docs/guide/slurm.md: shared file systems)");
  line(out, "warned=0", "becomes 1 when the time-limit warning arrives");
  line(out, "trapped=0", "becomes 1 when a trap ran (wait then returns early)");
  line(out, "on_warning() {", "runs on the time-limit warning (SIGUSR1, see --signal above)");
  line(out, "  warned=1; trapped=1", "remember it: the requeue decision below needs it");
  line(out, "  echo \"ranktune job $SLURM_JOB_ID: time limit near; asking ranktune to stop and flush\" >&2",
       "say so in the log");
  line(out, "  scancel --signal=TERM \"$SLURM_JOB_ID\"",
       "SIGTERM to the srun tasks only: rank 0 stops gracefully and exits " + interrupted + ", workers ignore it");
  line(out, "}", "end of on_warning");
  line(out, "trap on_warning USR1", "install it");
  line(out, "trap 'trapped=1' TERM", "scancel or the time limit: the tasks get SIGTERM too; keep waiting while they flush");
  line(out, "echo \"ranktune job $SLURM_JOB_ID, restart ${SLURM_RESTART_COUNT:-0}, nodes $SLURM_JOB_NODELIST\" >&2",
       "which allocation wrote the log lines below");
  line(out, "cmd=(srun", "one task per rank, started by Slurm");
  line(out, "  --mpi=pmix", "Open MPI starts through PMIx (Debian's Open MPI has no PMI2)");
  line(out, "  --ntasks=\"$SLURM_NTASKS\"", "every task of the allocation: workers + driver");
  line(out, "  --cpus-per-task=\"${SLURM_CPUS_PER_TASK:-1}\"", "srun no longer inherits sbatch's --cpus-per-task (Slurm 22.05+)");
  line(out, "  --distribution=block", "consecutive ranks share a node: rank 0 and the first workers on the first node");
  line(out, "  \"$ranktune\" run \"$experiment\"", "ranktune: rank 0 drives the search, the other ranks run trials");
  line(out, "  --results \"$results\"", "where the results go");
  for (const auto& set : o.sets) line(out, "  --set " + shell_quote(set), "a config override");
  if (o.resume) line(out, "  --resume", "continue the results file when it exists (after a requeue), else start it");
  line(out, ")", "end of the command");
  line(out, "\"${cmd[@]}\" &", "in the background, so that the traps run while it runs");
  line(out, "pid=$!", "srun's process id");
  line(out, "rc=0", "srun's exit status: the highest exit code of the ranks");
  line(out, "while :; do", "wait for srun; a trapped signal makes wait return early");
  line(out, "  trapped=0", "the traps set it again");
  line(out, "  wait \"$pid\"; status=$?", "srun's status, or 128+signal when a trap interrupted the wait");
  line(out, "  [ \"$status\" -eq 127 ] && break", "srun was already collected: keep the status we have");
  line(out, "  rc=$status", "the latest status");
  line(out, "  [ \"$trapped\" -eq 1 ] && [ \"$status\" -gt 128 ] || break", "only a wait cut short by a trap goes round again");
  line(out, "done", "srun has ended");
  line(out, "if [ \"$rc\" -eq " + interrupted + " ] && [ \"$warned\" -eq 1 ]; then",
       "ranktune stopped (exit " + interrupted + ") because of the time-limit warning");
  if (o.requeue) {
    line(out, "  echo \"ranktune job $SLURM_JOB_ID: requeueing; the next run resumes $results\" >&2", "say so in the log");
    line(out, "  scontrol requeue \"$SLURM_JOB_ID\"", "back to the queue (Slurm holds it ~2 min); this shell ends here");
  } else {
    line(out, "  echo \"ranktune job $SLURM_JOB_ID: stopped before the time limit; sbatch this script again to resume\" >&2",
         "no --requeue: the user resubmits");
  }
  line(out, "fi", "end of the time-limit case");
  line(out, "exit \"$rc\"", "0: completed, 3: no trial succeeded, " + interrupted + ": stopped (resumable), see docs/guide/running.md");
  return out;
}

}  // namespace ranktune::slurm
