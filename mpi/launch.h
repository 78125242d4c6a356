#pragma once
/// Self-launch: `ranktune run` started by hand (no MPI launcher in the environment)
/// re-executes itself under `mpirun`, so the same command works on a laptop and in a job.

#include <sys/types.h>

#include <string>
#include <vector>

namespace ranktune::mpi {

/// True when this process was started by mpirun/mpiexec (Open MPI, MPICH/Hydra) or by a
/// PMI/PMIx launcher such as `srun --mpi=pmix`.
bool under_mpi_launcher();

/// The number of processes the launcher started, from its environment
/// (OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_STEP_NUM_TASKS of an srun step, which has a
/// SLURM_STEP_ID where the batch shell has none); 1 when none
/// says more. The single-process commands (eval, ctl) refuse more than one: each process
/// would do the whole work again.
int launcher_world_size();

/// Throws std::invalid_argument when launcher_world_size() > 1: `command` (e.g. "ranktune
/// eval") runs as one process, and each of the launcher's tasks would `repeat` (e.g. "send
/// the request again").
void require_one_process(const std::string& command, const std::string& repeat);

/// One worker per visible GPU, else one per core; at least 2.
int default_worker_count();

/// What the self-launch may assume about where mpirun will put the ranks.
struct LaunchSite {
  /// Every rank on this host: no Slurm allocation of several nodes, no PBS node file, no
  /// Open MPI default hostfile in the environment.
  bool one_host = true;
  /// The user or the site picked Open MPI's point-to-point layer: OMPI_MCA_pml, else a `pml`
  /// line in ~/.openmpi/mca-params.conf, else in /etc/openmpi/openmpi-mca-params.conf (Open
  /// MPI's own order). An exclusion such as Debian's `pml = ^ucx` picks nothing, unless it
  /// excludes ob1.
  bool pml_chosen = false;
  /// The same for the byte transfer layers (`btl`), with self and vader.
  bool btl_chosen = false;
};

/// This process's LaunchSite, from its environment and the MCA parameter files.
LaunchSite launch_site();

/// The mpirun argv that runs `args` (the ranktune arguments after the program name) on
/// `workers` workers plus the driver: oversubscribed when the ranks outnumber the cores,
/// unbound (trials start their own threads and processes). On one host, unless the user or
/// site picked them, with Open MPI's ob1 point-to-point layer and only the shared-memory
/// transports (`--mca pml ob1 --mca btl self,vader`): all traffic is shared memory there,
/// and probing the others (UCX, libfabric's cm, TCP's interfaces) cost every rank about
/// 0.2 s of MPI_Init on the 2-core VM (CHANGELOG.md, issue 16).
std::vector<std::string> mpirun_command(int workers, const std::vector<std::string>& args,
                                        const LaunchSite& site = launch_site());

/// How a self-launched job ended when rank 0 did not leave its exit code.
struct LaunchEnd {
  bool rank0_code = false;  ///< rank 0 left its exit code: the run ended as runs end
  /// Otherwise, what ended the job, for the user: "mpirun (pid P) was killed by signal
  /// SIGKILL (9), and the ranks ended with it", "rank 1 (a worker, pid P) ended first, killed
  /// by signal SIGKILL (9), and mpirun ended the rest of the job", ...
  std::string what;
};

/// Runs `args` under mpirun and waits for it. Sets Open MPI's run-as-root variables when
/// running as root. Returns rank 0's exit code (which rank 0 leaves in the file named by
/// RANKTUNE_EXIT_CODE_FILE, since mpirun reports 1 after any signal), else mpirun's (128 + N
/// when mpirun, or the rank it saw die first, was killed by signal N), and says which in
/// `end`; -1 with a message in `error` if mpirun or the run folder cannot start. The file
/// lies in this process's run folder (sys::TempDir::run_folder(run_key), under $TMPDIR),
/// removed at the end; making it removes what killed runs of the same key left. Each rank on
/// this host registers its pid there (exit_with_parent), so that the launcher, watching
/// them, can name the one that ended first.
int run_under_mpirun(int workers, const std::vector<std::string>& args, const std::string& run_key,
                     std::string& error, LaunchEnd* end = nullptr);

/// Ends this rank when its parent (mpirun, an orted, slurmstepd) dies, e.g. after kill -9 of
/// the job: a thread sleeps on a pidfd of the parent, then kills the trials
/// (sys::emergency_cleanup), removes the temporary folders and _exits. Without it a rank
/// and its trials outlive the job (Open MPI's ranks have process groups of their own, so a
/// kill of the launcher's group does not reach them). Call once, early, in every rank.
/// Under a self-launch it also registers this rank's pid for the launcher (run_under_mpirun).
void exit_with_parent();

/// The same for another process of this job (a worker watches rank 0 when both run on one
/// machine: when rank 0 dies, mpirun kills the workers with SIGKILL, which would leave their
/// trials' folders). Does nothing unless `namespace_id` is this process's
/// process_namespace_id() and `pid` is running. Until job_ending() is called.
void exit_with_process(pid_t pid, const std::string& namespace_id);

/// "BOOT_ID/pid:[INODE]": equal for two processes exactly when their pids mean the same
/// processes (one boot of one machine, one pid namespace); "" when it cannot be read.
std::string process_namespace_id();

/// The job ends normally from here on (a worker got its Shutdown): the process watched by
/// exit_with_process() may exit first without taking this one with it.
void job_ending() noexcept;

/// Rank 0 of a self-launched run: leaves `code` for run_under_mpirun. Never throws.
void report_exit_code(int code);

}  // namespace ranktune::mpi
