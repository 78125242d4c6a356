#pragma once
/// Inside sys/ only: what emergency_cleanup() must reach, shared by process.cc and
/// temp_dir.cc.

#include <sys/types.h>

#include <map>
#include <mutex>
#include <set>
#include <string>

namespace ranktune::sys::detail {

// The live children (pid -> leads its own group, so that its pid is its process group) and
// TempDirs. One lock, taken briefly by spawn, reap and TempDir, and for good by
// emergency_cleanup().
struct Registry {
  std::mutex mutex;
  std::map<pid_t, bool> children;
  std::set<std::string> temp_dirs;
  std::string root;                  ///< the live run folder, "" for none
  bool subreaper = false;
  std::set<pid_t> foreign_children;  ///< children we had before become_subreaper()
};

Registry& registry();

}  // namespace ranktune::sys::detail
