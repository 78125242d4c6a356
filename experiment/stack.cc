// The run's hardware and software stack for the results file's /stack group: hosts, GPUs,
// library versions and the Slurm job's entries (experiment/stack.h).
#include "experiment/stack.h"

#include <mpi.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <thread>

#include <boost/version.hpp>
#include <hdf5.h>

#include "ranktune/config.h"
#include "sys/host.h"

// Headers only, for the versions built against; the libraries are the GPU plugin's
// (train/gpu_runtime.h).
#if RANKTUNE_WITH_CUDA
#include <cuda_runtime_api.h>
#endif
#if RANKTUNE_WITH_NCCL
#include <nccl.h>
#endif

#include "train/gpu_runtime.h"

namespace ranktune::experiment {
namespace {

std::string join(const std::set<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// `key`'s value in a captured environment (slurm_environment()); "" when it is not there.
std::string value_of(const std::map<std::string, std::string>& env, const char* key) {
  const auto it = env.find(key);
  return it == env.end() ? std::string() : it->second;
}

// The plugin's CUDA and NCCL, asked only where it is used: a run whose workers have a GPU,
// or any process that already opened it. Elsewhere the versions built against, and why the
// plugin is not loaded: the CPU runs of a GPU build do not pay its start-up for a version.
struct GpuVersions {
  std::string cuda = "not built";
  std::string nccl = "not built";
};

GpuVersions gpu_versions(bool gpu_workers) {
  GpuVersions v;
  if (!RANKTUNE_WITH_CUDA) return v;
  std::string why;
  const train::gpu::Api* api = train::gpu::loaded();
  if (api == nullptr && (gpu_workers || !train::gpu::driver_present())) api = train::gpu::runtime(&why);
  if (api == nullptr && why.empty()) why = "no worker uses a GPU";
  if (api != nullptr) {
    v.cuda = api->cuda_versions();
    if (api->nccl_version != nullptr) v.nccl = api->nccl_version();
    return v;
  }
#if RANKTUNE_WITH_CUDA
  v.cuda = "runtime " + std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10) +
           " (built; not loaded: " + why + ")";
#endif
#if RANKTUNE_WITH_NCCL
  v.nccl = std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH) +
           " (built; not loaded)";
#endif
  return v;
}

}  // namespace

std::map<std::string, std::string> collect_stack(const std::vector<io::WorkerInfo>& workers,
                                                 int world_size) {
  std::map<std::string, std::string> s;
  std::set<std::string> hosts{sys::host_name()};
  std::set<std::string> devices;
  int gpu_workers = 0;
  for (const auto& w : workers) {
    hosts.insert(w.host);
    if (w.device != "cpu") {
      ++gpu_workers;
      devices.insert(w.device_name);
    }
  }
  s["hosts"] = join(hosts);
  s["driver_host"] = sys::host_name();
  s["world_size"] = std::to_string(world_size);
  s["workers"] = std::to_string(workers.size());
  s["cpu_model"] = sys::cpu_model();
  s["cpu_count"] = std::to_string(std::thread::hardware_concurrency());
  s["device_mode"] = gpu_workers == 0 ? "cpu" : (gpu_workers == static_cast<int>(workers.size()) ? "gpu" : "mixed");
  s["gpus"] = devices.empty() ? "none (CPU mode)" : join(devices);

  char mpi_lib[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(mpi_lib, &len);
  std::string lib(mpi_lib, static_cast<std::size_t>(len));
  while (!lib.empty() && (lib.back() == '\n' || lib.back() == '\0')) lib.pop_back();
  s["mpi_library"] = lib;
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  s["mpi_standard"] = std::to_string(major) + "." + std::to_string(minor);

  unsigned h5maj = 0, h5min = 0, h5rel = 0;
  H5get_libversion(&h5maj, &h5min, &h5rel);
  s["hdf5"] = std::to_string(h5maj) + "." + std::to_string(h5min) + "." + std::to_string(h5rel);
  s["boost"] = std::to_string(BOOST_VERSION / 100000) + "." + std::to_string(BOOST_VERSION / 100 % 1000);
  const bool cuda_workers = std::any_of(workers.begin(), workers.end(),
                                        [](const io::WorkerInfo& w) { return w.device.rfind("cuda", 0) == 0; });
  const GpuVersions gpu = gpu_versions(cuda_workers);
  s["cuda"] = gpu.cuda;
  s["nccl"] = gpu.nccl;
  s["compiler"] = RANKTUNE_COMPILER;
  s["build_type"] = RANKTUNE_BUILD_TYPE;
  s["ranktune_version"] = RANKTUNE_VERSION;
  s["git_sha"] = RANKTUNE_GIT_SHA[0] != '\0' ? RANKTUNE_GIT_SHA : "unknown";

  utsname u{};
  if (uname(&u) == 0) s["os"] = std::string(u.sysname) + " " + u.release + " " + u.machine;
  s.merge(slurm_stack_entries(slurm_environment()));
  return s;
}

std::map<std::string, std::string> slurm_environment() {
  std::map<std::string, std::string> env;
  for (const char* v : {"SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_RESTART_COUNT", "SLURM_NNODES", "SLURM_NTASKS",
                        "SLURM_GPUS_PER_NODE", "SLURM_GPUS_ON_NODE", "SLURM_GPUS_PER_TASK", "SLURM_STEP_ID",
                        "SLURM_CLUSTER_NAME", "SLURM_JOB_PARTITION", "SLURM_STEP_NUM_NODES", "SLURM_PMIX_FENCE",
                        "PMIX_NAMESPACE"}) {
    if (auto value = env_or_empty(v); !value.empty()) env[v] = std::move(value);
  }
  return env;
}

std::map<std::string, std::string> slurm_stack_entries(const std::map<std::string, std::string>& env) {
  const auto get = [&](const char* k) { return value_of(env, k); };
  std::map<std::string, std::string> s;
  if (get("SLURM_JOB_ID").empty()) return s;
  s["slurm_job_id"] = get("SLURM_JOB_ID");
  s["slurm_job_nodelist"] = get("SLURM_JOB_NODELIST");
  // Slurm sets the count only from the first requeue on.
  s["slurm_restart_count"] = get("SLURM_RESTART_COUNT").empty() ? "0" : get("SLURM_RESTART_COUNT");
  // --gpus-per-node says what each node was asked for (possibly "type:N"); SLURM_GPUS_ON_NODE
  // is what this node got, also with --gpus-per-task or --gres.
  std::string gpus = get("SLURM_GPUS_PER_NODE");
  if (gpus.empty()) gpus = get("SLURM_GPUS_ON_NODE");
  s["slurm_gpus_per_node"] = gpus.empty() ? "0" : gpus;
  for (const auto& [var, key] : {std::pair<const char*, const char*>{"SLURM_NNODES", "slurm_nnodes"},
                                 {"SLURM_NTASKS", "slurm_ntasks"},
                                 {"SLURM_GPUS_PER_TASK", "slurm_gpus_per_task"},
                                 {"SLURM_CLUSTER_NAME", "slurm_cluster"},
                                 {"SLURM_JOB_PARTITION", "slurm_partition"}}) {
    if (const auto v = get(var); !v.empty()) s[key] = v;
  }
  // srun gives each task its step; a launcher inside the batch script (mpirun) inherits the
  // batch shell's environment, which has no step id.
  s["slurm_launch"] = get("SLURM_STEP_ID").empty() ? "mpirun in job" : "srun";
  return s;
}

std::string slurm_event_message(const std::map<std::string, std::string>& env) {
  const auto s = slurm_stack_entries(env);
  if (s.empty()) return {};
  std::string m = "job " + s.at("slurm_job_id") + ", restart " + s.at("slurm_restart_count") + ", nodes " +
                  s.at("slurm_job_nodelist");
  if (s.at("slurm_gpus_per_node") != "0") m += ", " + s.at("slurm_gpus_per_node") + " GPUs per node";
  m += ", launched by " + s.at("slurm_launch");
  return m;
}

std::string pmix_fence_warning(const std::map<std::string, std::string>& env) {
  const auto get = [&](const char* k) { return value_of(env, k); };
  // Slurm's mpi/pmix names a step's namespace "slurm.pmix.JOB.STEP"; mpirun's PMIx does not.
  if (get("SLURM_STEP_ID").empty() || get("PMIX_NAMESPACE").rfind("slurm.pmix.", 0) != 0) return {};
  const std::string nodes = get("SLURM_STEP_NUM_NODES");
  if (nodes.empty() || std::atoi(nodes.c_str()) < 2 || get("SLURM_PMIX_FENCE") == "ring") return {};
  return "srun --mpi=pmix started this step on " + nodes + " nodes without SLURM_PMIX_FENCE=ring: with Slurm's " +
         "default fence the barrier ending Open MPI's MPI_Init completes on each node alone, and about one such " +
         "launch in 100 loses a rank to SIGSEGV inside MPI_Init. Export SLURM_PMIX_FENCE=ring before srun (the job " +
         "script of `ranktune slurm script` does; docs/guide/slurm.md), unless the site sets PMIxCollFence=ring in " +
         "mpi.conf";
}

}  // namespace ranktune::experiment
