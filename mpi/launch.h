#pragma once
/// Self-launch: `ranktune run` started by hand (no MPI launcher in the environment)
/// re-executes itself under `mpirun`, so the same command works on a laptop and in a job.

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

/// The mpirun argv that runs `args` (the ranktune arguments after the program name) on
/// `workers` workers plus the driver: oversubscribed when the ranks outnumber the cores,
/// unbound (trials start their own threads and processes).
std::vector<std::string> mpirun_command(int workers, const std::vector<std::string>& args);

/// Runs `args` under mpirun and waits for it. Sets Open MPI's run-as-root variables when
/// running as root. Returns rank 0's exit code (which rank 0 leaves in the file named by
/// RANKTUNE_EXIT_CODE_FILE, since mpirun reports 1 after any signal), else mpirun's; -1 with
/// a message in `error` if mpirun cannot start.
int run_under_mpirun(int workers, const std::vector<std::string>& args, std::string& error);

/// Rank 0 of a self-launched run: leaves `code` for run_under_mpirun. Never throws.
void report_exit_code(int code);

}  // namespace ranktune::mpi
