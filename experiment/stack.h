#pragma once
/// The hardware and software stack of a run, as recorded in the results file's /stack
/// group (MLModelScope's point: a number without its stack is not reproducible).

#include <map>
#include <string>
#include <vector>

#include "io/store.h"

namespace ranktune::experiment {

/// Collects the stack on the driver. `workers` are the Hellos of every worker rank.
std::map<std::string, std::string> collect_stack(const std::vector<io::WorkerInfo>& workers,
                                                 int world_size);

/// The Slurm variables the stack records, read from this process's environment:
/// SLURM_JOB_ID, SLURM_JOB_NODELIST, SLURM_RESTART_COUNT, SLURM_NNODES, SLURM_NTASKS,
/// SLURM_GPUS_PER_NODE, SLURM_GPUS_ON_NODE, SLURM_GPUS_PER_TASK, SLURM_STEP_ID,
/// SLURM_CLUSTER_NAME, SLURM_JOB_PARTITION, and for pmix_fence_warning SLURM_STEP_NUM_NODES,
/// SLURM_PMIX_FENCE and PMIX_NAMESPACE (only those that are set).
std::map<std::string, std::string> slurm_environment();

/// Stack entries for a Slurm job, from `env` (slurm_environment()); empty outside Slurm.
/// Keys: slurm_job_id, slurm_job_nodelist, slurm_restart_count (0 when unset),
/// slurm_nnodes, slurm_ntasks, slurm_gpus_per_node (requested per node, else those on the
/// driver's node; "0" when none), slurm_gpus_per_task, slurm_cluster, slurm_partition, and
/// slurm_launch: "srun" when rank 0 is an srun task, "mpirun in job" when a launcher inside
/// the job started it (every rank then inherits the batch shell's SLURM_PROCID=0).
std::map<std::string, std::string> slurm_stack_entries(const std::map<std::string, std::string>& env);

/// One line for the event log of each allocation that runs the experiment (the first
/// and every requeue or resubmission): "job 42, restart 1, nodes n[1-2], 4 GPUs per node".
/// Empty outside Slurm.
std::string slurm_event_message(const std::map<std::string, std::string>& env);

/// A warning for a step that `srun --mpi=pmix` started on several nodes without
/// SLURM_PMIX_FENCE=ring, from `env` (slurm_environment()); empty otherwise. With Slurm's
/// default fence algorithm the barrier that ends Open MPI's MPI_Init completes on each node
/// alone, which lets a rank crash a peer on another node inside MPI_Init (about one multi-node
/// launch in 100 with Slurm 22.05; docs/guide/multinode.md). A site that sets
/// PMIxCollFence=ring in mpi.conf is safe but cannot be told apart: the text says so.
std::string pmix_fence_warning(const std::map<std::string, std::string>& env);

}  // namespace ranktune::experiment
