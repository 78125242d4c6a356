// The Slurm layer without Slurm: script generation, time limits, status parsing, the stack's
// Slurm entries and the GPU choice for both of Slurm's GPU layouts.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "experiment/stack.h"
#include "config/config.h"
#include "mpi/placement.h"
#include "slurm/job_status.h"
#include "slurm/sbatch_script.h"
#include "slurm/time_limit.h"
#include "tests/unit/common/expect_text.h"

namespace ranktune::slurm {
namespace {

config::ExperimentConfig experiment(int ranks_per_trial = 1) {
  config::ExperimentConfig cfg = config::parse_config(
      "[experiment]\nname = \"asha_demo\"\nmetric = \"loss\"\nmode = \"min\"\nnum_samples = 12\n"
      "results = \"/scratch/my runs/a.h5\"\n"
      "[search.space]\nx = { uniform = [0.0, 1.0] }\n[trainable]\nkind = \"synthetic\"\n",
      "/home/u/exp.toml");
  // Gangs are checked by the trainable layer; the generator only needs the size.
  cfg.ranks_per_trial = ranks_per_trial;
  return cfg;
}

std::string error_of(const ScriptOptions& o, int ranks_per_trial = 1) {
  try {
    sbatch_script(experiment(ranks_per_trial), o);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(TimeLimit, EverySbatchForm) {
  EXPECT_EQ(parse_time_limit("90"), 90 * 60);
  EXPECT_EQ(parse_time_limit("1:30"), 90);
  EXPECT_EQ(parse_time_limit("01:00:05"), 3605);
  EXPECT_EQ(parse_time_limit("2-3"), 2 * 86400 + 3 * 3600);
  EXPECT_EQ(parse_time_limit("2-3:04"), 2 * 86400 + 3 * 3600 + 4 * 60);
  EXPECT_EQ(parse_time_limit("1-00:00:30"), 86400 + 30);
  EXPECT_EQ(parse_time_limit("UNLIMITED"), std::nullopt);
  for (const char* bad : {"", "1h", "-5", "1:2:3:4", "1-2:3:4:5", "a-1", "1::2", " 5"}) {
    EXPECT_THROW(parse_time_limit(bad), std::invalid_argument) << bad;
  }
}

TEST(JobShape, OneWorkerPerGpuPlusTheDriver) {
  ScriptOptions o;
  o.nodes = 2;
  o.gpus_per_node = 4;
  const JobShape s = job_shape(experiment(), o);
  EXPECT_EQ(s.workers, 8);
  EXPECT_EQ(s.tasks, 9);
}

TEST(JobShape, GangsRoundWorkers) {
  ScriptOptions o;
  o.nodes = 1;
  o.gpus_per_node = 6;
  EXPECT_EQ(job_shape(experiment(4), o).workers, 4);  // one gang of 4 fits in 6 GPUs
  o.gpus_per_node = 0;
  EXPECT_EQ(job_shape(experiment(3), o).workers, 6);  // CPUs: 4 per node, up to whole gangs
  o.workers = 6;
  EXPECT_EQ(job_shape(experiment(3), o).tasks, 7);
  o.workers = 5;
  EXPECT_CONTAINS(error_of(o, 3), "not a multiple of [resources] ranks_per_trial = 3");
  o.workers = 0;
  o.gpus_per_node = 2;
  EXPECT_CONTAINS(error_of(o, 4), "needs more GPUs");
}

TEST(JobShape, BadOptionsSayWhatToDo) {
  ScriptOptions o;
  o.nodes = 0;
  EXPECT_CONTAINS(error_of(o), "--nodes must be at least 1");
  o = {};
  o.nodes = 3;
  o.workers = 2;
  EXPECT_CONTAINS(error_of(o), "every node needs at least one worker");
  o = {};
  o.time = "1h";
  EXPECT_CONTAINS(error_of(o), "--time '1h' is not a Slurm time limit");
  o = {};
  o.time = "2";
  o.signal_lead_s = 120;
  EXPECT_CONTAINS(error_of(o), "--signal-lead 120 s is not shorter than --time 2 (120 s)");
  o.signal_lead_s = 70000;
  EXPECT_CONTAINS(error_of(o), "out of range");
  o = {};
  o.partition = "gpu #1";
  EXPECT_CONTAINS(error_of(o), "--partition 'gpu #1' contains");
  o = {};
  o.cpus_per_worker = 0;
  EXPECT_CONTAINS(error_of(o), "--cpus-per-worker");
}

TEST(JobShape, SignalLeadDefaultsToAtMostHalfTheLimit) {
  ScriptOptions o;
  EXPECT_EQ(job_shape(experiment(), o).signal_lead_s, 300);
  o.time = "4";
  EXPECT_EQ(job_shape(experiment(), o).signal_lead_s, 120);
  o.time = "1-00:00:00";
  EXPECT_EQ(job_shape(experiment(), o).signal_lead_s, 300);
  o.signal_lead_s = 42;
  EXPECT_EQ(job_shape(experiment(), o).signal_lead_s, 42);
}

TEST(SbatchScript, AsksForWorkersPlusDriverAndLaunchesWithSrun) {
  ScriptOptions o;
  o.nodes = 2;
  o.gpus_per_node = 4;
  o.cpus_per_worker = 8;
  o.time = "02:00:00";
  o.partition = "gpu";
  o.account = "proj1";
  o.qos = "high";
  o.signal_lead_s = 240;
  o.ranktune = "/opt/ranktune/bin/ranktune";
  o.sets = {"experiment.num_samples=100"};
  o.output = "/scratch/logs/a-%j.out";  // the default would come from a path with a space
  const std::string s = sbatch_script(experiment(), o);
  EXPECT_EQ(s.rfind("#!/bin/bash\n", 0), 0u);
  for (const char* want :
       {"#SBATCH --job-name=ranktune-asha", "#SBATCH --nodes=2 ", "#SBATCH --ntasks=9 ", "8 workers", "+ 1 driver (rank 0)",
        "#SBATCH --cpus-per-task=8 ", "#SBATCH --gpus-per-node=4 ", "#SBATCH --time=02:00:00 ", "#SBATCH --partition=gpu ",
        "#SBATCH --account=proj1 ", "#SBATCH --qos=high ", "#SBATCH --open-mode=append ", "#SBATCH --signal=B:USR1@240 ",
        "#SBATCH --no-requeue ", "srun", "--mpi=pmix", "--cpus-per-task=\"${SLURM_CPUS_PER_TASK:-1}\"",
        "\"$ranktune\" run \"$experiment\"", "ranktune=/opt/ranktune/bin/ranktune ", "experiment=/home/u/exp.toml ",
        "results='/scratch/my runs/a.h5' ", "--set experiment.num_samples=100 ", "  --resume ", "#SBATCH --output=/scratch/logs/a-%j.out "}) {
    EXPECT_CONTAINS(s, want);
  }
  EXPECT_LACKS(s, "scontrol requeue");
  // MPI_Init's closing barrier must span the nodes (multinode.slurm_pmix_barrier checks it on
  // a real cluster); a fence algorithm the user or site chose is kept.
  EXPECT_CONTAINS(s, "\nexport SLURM_PMIX_FENCE=${SLURM_PMIX_FENCE:-ring} ");
}

TEST(SbatchScript, OutputPathWithSpacesIsRefused) {
  // "/scratch/my runs/" cannot go into an #SBATCH line; the default --output comes from it.
  ScriptOptions o;
  o.output.clear();
  EXPECT_CONTAINS(error_of(o), "--output (from the results path)");
  o.output = "/scratch/logs/a-%j.out";
  EXPECT_CONTAINS(sbatch_script(experiment(), o), "#SBATCH --output=/scratch/logs/a-%j.out ");
}

config::ExperimentConfig plain_experiment() {
  config::ExperimentConfig cfg = experiment();
  cfg.results = "/scratch/runs/a.h5";
  return cfg;
}

TEST(SbatchScript, RequeueAfterTheWarningOnlyWhenAsked) {
  ScriptOptions o;
  o.requeue = true;
  const std::string s = sbatch_script(plain_experiment(), o);
  EXPECT_CONTAINS(s, "#SBATCH --requeue ");
  EXPECT_CONTAINS(s, "scontrol requeue \"$SLURM_JOB_ID\"");
  EXPECT_CONTAINS(s, "if [ \"$rc\" -eq 4 ] && [ \"$warned\" -eq 1 ]; then");
  EXPECT_CONTAINS(s, "trap on_warning USR1");
  EXPECT_CONTAINS(s, "scancel --signal=TERM \"$SLURM_JOB_ID\"");
  EXPECT_CONTAINS(s, "#SBATCH --output=/scratch/runs/a-%j.out ");
  o.resume = false;
  EXPECT_LACKS(sbatch_script(plain_experiment(), o), "--resume");
}

TEST(SbatchScript, EveryLineIsCommented) {
  ScriptOptions o;
  o.requeue = true;
  o.gpus_per_node = 2;
  o.time = "10";
  std::istringstream in(sbatch_script(plain_experiment(), o));
  int n = 0;
  for (std::string line; std::getline(in, line); ++n) {
    if (n == 0) continue;  // #!/bin/bash
    const bool comment_line = line.rfind("# ", 0) == 0;
    const bool trailing = line.find("  # ") != std::string::npos;
    EXPECT_TRUE(comment_line || trailing) << "line " << n + 1 << " has no comment: " << line;
  }
  EXPECT_GT(n, 40);
}

TEST(SbatchScript, IsValidBash) {
  ScriptOptions o;
  o.requeue = true;
  o.sets = {"search.space.x = { choice = ['a b', \"it's\"] }"};
  const auto path = std::filesystem::temp_directory_path() / ("slurm_test_" + std::to_string(::getpid()) + ".sh");
  std::ofstream(path) << sbatch_script(plain_experiment(), o);
  const int rc = std::system(("bash -n " + path.string()).c_str());
  std::filesystem::remove(path);
  EXPECT_EQ(rc, 0);
}

TEST(SbatchScript, ShellQuote) {
  EXPECT_EQ(shell_quote("/a/b-c_d.h5"), "/a/b-c_d.h5");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("$HOME"), "'$HOME'");
  EXPECT_EQ(script_path_for("/r/q.h5"), "/r/q.sbatch");
  EXPECT_EQ(output_path_for("/r/q.hdf5"), "/r/q.hdf5-%j.out");
}

TEST(JobStatus, ParsesScontrolOneLiner) {
  const auto f = parse_scontrol_job(
      "JobId=42 JobName=ranktune-q UserId=root(0) JobState=PENDING Reason=BeginTime Dependency=(null) "
      "Requeue=1 Restarts=1 RunTime=00:00:00 TimeLimit=00:01:00 NodeList=(null) NumNodes=1 NumTasks=5 "
      "Comment=two words here StdOut=/tmp/q-42.out\n");
  EXPECT_EQ(f.at("JobId"), "42");
  EXPECT_EQ(f.at("JobState"), "PENDING");
  EXPECT_EQ(f.at("Restarts"), "1");
  EXPECT_EQ(f.at("Comment"), "two words here");
  EXPECT_EQ(f.at("StdOut"), "/tmp/q-42.out");
  JobView job{"42", "the results file's stack", f, ""};
  Progress p;
  p.trials = 3;
  p.trials_by_status = {{"TERMINATED", 2}, {"PENDING", 1}};
  p.planned_trials = 12;
  p.best = 0.5;
  p.best_trial = 2;
  p.requeues = 1;
  const std::string out = render_status(job, p, "/tmp/q.h5", "loss");
  EXPECT_CONTAINS(out, "job:        42 (from the results file's stack), name ranktune-q");
  EXPECT_CONTAINS(out, "state:      PENDING (BeginTime)");
  EXPECT_CONTAINS(out, "restarts:   1");
  EXPECT_CONTAINS(out, "trials:     3 of 12 (1 PENDING, 2 TERMINATED)");
  EXPECT_CONTAINS(out, "best:       loss = 0.5 (trial 2)");
  EXPECT_CONTAINS(out, "requeues:   1");
  EXPECT_CONTAINS(render_status(JobView{"7", "x", {}, "Invalid job id specified"}, std::nullopt, "/tmp/q.h5", "loss"),
             "no results file yet");
}

// A file's progress from its events (issue 27 item 6): a job stopped by scancel ("end:
// interrupted"), then submitted again as a new job that resumed and finished, is finished,
// not interrupted, and was never requeued; a Slurm requeue runs the same job id again.
io::ResultsFile file_with_events(const std::vector<std::pair<std::string, std::string>>& events) {
  io::ResultsFile f;
  f.path = "/tmp/q.h5";
  f.meta.mode = search::Mode::Min;
  f.meta.config_text =
      "[experiment]\nname = \"q\"\nmetric = \"loss\"\nmode = \"min\"\nnum_samples = 2\n"
      "[search.space]\nx = { uniform = [0.0, 1.0] }\n[trainable]\nkind = \"synthetic\"\n";
  for (int id = 1; id <= 2; ++id) {
    search::Trial t;
    t.id = id;
    t.status = search::TrialStatus::Terminated;
    t.best = id;
    f.trials.push_back(t);
  }
  double time = 0;
  for (const auto& [kind, message] : events) f.events.push_back({time += 1, -1, -1, search::parse_event_kind(kind).value(), message});
  return f;
}

TEST(JobStatus, AResumeSupersedesAnEarlierEnd) {
  const io::ResultsFile f = file_with_events({{"slurm", "job 41, restart 0, nodes n1, launched by srun"},
                                              {"end", "interrupted"},
                                              {"slurm", "job 57, restart 0, nodes n1, launched by srun"},
                                              {"resume", "the previous run stopped, or was killed"}});
  const Progress p = progress_of(f);
  EXPECT_EQ(p.ended, "");
  EXPECT_EQ(p.requeues, 0);  // a second job, not the first one requeued
  const std::string out = render_status(JobView{"57", "x", {}, ""}, p, f.path, "loss");
  EXPECT_CONTAINS(out, "experiment: finished: every planned trial ended");
  EXPECT_LACKS(out, "interrupted");
  EXPECT_LACKS(out, "requeues:");
  EXPECT_CONTAINS(out, "jobs:       2 (41, 57; each resumed the file)");
  // Stopped again after the resume: that end stands.
  io::ResultsFile again = f;
  again.events.push_back({9, -1, -1, search::EventKind::End, "interrupted"});
  EXPECT_EQ(progress_of(again).ended, "interrupted");
  // A trial's own `end` (a paused trial the scheduler never resumed) is not the experiment's.
  io::ResultsFile trial_end = f;
  trial_end.events.push_back({9, 2, 1, search::EventKind::End, "paused, and not resumed by the scheduler"});
  EXPECT_EQ(progress_of(trial_end).ended, "");
}

TEST(JobStatus, ARequeueRunsTheSameJobAgain) {
  const Progress p = progress_of(file_with_events({{"slurm", "job 42, restart 0, nodes n1, launched by srun"},
                                                   {"end", "interrupted"},
                                                   {"slurm", "job 42, restart 1, nodes n2, launched by srun"},
                                                   {"resume", "the previous run stopped, or was killed; Slurm restart 1"},
                                                   {"slurm", "job 42, restart 2, nodes n1, launched by srun"},
                                                   {"resume", "the previous run stopped, or was killed; Slurm restart 2"}}));
  EXPECT_EQ(p.requeues, 2);
  EXPECT_EQ(p.jobs, std::vector<std::string>{"42"});
  EXPECT_EQ(p.ended, "");
}

TEST(Stack, SlurmEntriesUnderSrunAndUnderMpirun) {
  EXPECT_TRUE(experiment::slurm_stack_entries({}).empty());
  EXPECT_EQ(experiment::slurm_event_message({}), "");
  std::map<std::string, std::string> env = {{"SLURM_JOB_ID", "42"},        {"SLURM_JOB_NODELIST", "n[1-2]"},
                                            {"SLURM_NNODES", "2"},         {"SLURM_NTASKS", "9"},
                                            {"SLURM_GPUS_PER_NODE", "4"}, {"SLURM_GPUS_ON_NODE", "4"},
                                            {"SLURM_STEP_ID", "0"}};
  auto s = experiment::slurm_stack_entries(env);
  EXPECT_EQ(s.at("slurm_job_id"), "42");
  EXPECT_EQ(s.at("slurm_restart_count"), "0");
  EXPECT_EQ(s.at("slurm_gpus_per_node"), "4");
  EXPECT_EQ(s.at("slurm_launch"), "srun");
  EXPECT_EQ(experiment::slurm_event_message(env), "job 42, restart 0, nodes n[1-2], 4 GPUs per node, launched by srun");
  // mpirun inside sbatch: the batch shell's environment, no step; a requeued run.
  env.erase("SLURM_STEP_ID");
  env.erase("SLURM_GPUS_PER_NODE");
  env["SLURM_GPUS_ON_NODE"] = "2";
  env["SLURM_RESTART_COUNT"] = "3";
  s = experiment::slurm_stack_entries(env);
  EXPECT_EQ(s.at("slurm_launch"), "mpirun in job");
  EXPECT_EQ(s.at("slurm_restart_count"), "3");
  EXPECT_EQ(s.at("slurm_gpus_per_node"), "2");
  env.erase("SLURM_GPUS_ON_NODE");
  EXPECT_EQ(experiment::slurm_stack_entries(env).at("slurm_gpus_per_node"), "0");
}

// srun --mpi=pmix over several nodes without SLURM_PMIX_FENCE=ring is warned about (the
// barrier ending MPI_Init is then per node: docs/guide/multinode.md); nothing else is.
TEST(Stack, PmixFenceWarningOnlyForMultiNodePmixStepsWithoutTheRing) {
  const std::map<std::string, std::string> step = {
      {"SLURM_JOB_ID", "42"}, {"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_NODES", "3"}, {"PMIX_NAMESPACE", "slurm.pmix.42.0"}};
  const std::string w = experiment::pmix_fence_warning(step);
  EXPECT_CONTAINS(w, "srun --mpi=pmix started this step on 3 nodes without SLURM_PMIX_FENCE=ring");
  EXPECT_CONTAINS(w, "Export SLURM_PMIX_FENCE=ring before srun");
  EXPECT_CONTAINS(w, "PMIxCollFence=ring");
  auto with = [&](const char* key, const char* value) {
    auto env = step;
    if (value) env[key] = value; else env.erase(key);
    return experiment::pmix_fence_warning(env);
  };
  EXPECT_EQ(with("SLURM_PMIX_FENCE", "ring"), "");
  EXPECT_NE(with("SLURM_PMIX_FENCE", "tree"), "");          // the tree is the one that fails
  EXPECT_EQ(with("SLURM_STEP_NUM_NODES", "1"), "");          // one node: its own fence is the barrier
  EXPECT_EQ(with("SLURM_STEP_ID", nullptr), "");             // mpirun inside the job
  EXPECT_EQ(with("PMIX_NAMESPACE", "prterun-host-1234@1"), "");  // not Slurm's PMIx
  EXPECT_EQ(with("PMIX_NAMESPACE", nullptr), "");            // srun --mpi=pmi2 or none
  EXPECT_EQ(experiment::pmix_fence_warning({}), "");
}

// --gpus-per-task=1: Slurm narrows CUDA_VISIBLE_DEVICES to one GPU per task, so the runtime
// reports 1 device and every worker binds its index 0, whatever its node-local index.
TEST(GpuChoice, GpusPerTaskLayout) {
  for (int local = 0; local < 4; ++local) {
    const std::map<std::string, std::string> env = {{"CUDA_VISIBLE_DEVICES", std::to_string(3 - local)},
                                                    {"SLURM_GPUS_PER_TASK", "1"}};
    const auto c = mpi::choose_gpu(env, local, 4, 1);
    EXPECT_EQ(c.device, 0);
    EXPECT_EQ(c.visible_id, std::to_string(3 - local));
    EXPECT_EQ(c.layout, "per-task");
    EXPECT_FALSE(c.shared);
  }
}

// --gpus-per-node=4: every task sees the node's 4 GPUs; the node-local worker index picks one.
TEST(GpuChoice, GpusPerNodeLayout) {
  const std::map<std::string, std::string> env = {{"CUDA_VISIBLE_DEVICES", "4,5,6,7"}, {"SLURM_GPUS_PER_NODE", "4"}};
  for (int local = 0; local < 4; ++local) {
    const auto c = mpi::choose_gpu(env, local, 4, 4);
    EXPECT_EQ(c.device, local);
    EXPECT_EQ(c.visible_id, std::to_string(4 + local));
    EXPECT_EQ(c.layout, "per-node");
    EXPECT_FALSE(c.shared);
  }
  // A fifth worker on the node shares GPU 0 and says so.
  const auto fifth = mpi::choose_gpu(env, 4, 5, 4);
  EXPECT_EQ(fifth.device, 0);
  EXPECT_TRUE(fifth.shared);
  // No variable (mpirun on a workstation): the runtime index is the id.
  EXPECT_EQ(mpi::choose_gpu({}, 1, 2, 2).visible_id, "1");
  // No device: CPU mode.
  const auto cpu = mpi::choose_gpu(env, 0, 4, 0);
  EXPECT_EQ(cpu.device, -1);
  EXPECT_EQ(cpu.layout, "cpu");
}

}  // namespace
}  // namespace ranktune::slurm
