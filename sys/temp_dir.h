#pragma once
/// Temporary folders: TempDir (removed with its handle) and the per-run folder that holds a
/// process's TempDirs, under $TMPDIR. Every live one is removed by emergency_cleanup()
/// (sys/process.h) when the job is killed.

#include <string>
#include <utility>

namespace ranktune::sys {

/// A directory made by mkdtemp(3) and removed with everything in it on destruction (which
/// never throws). Move-only; empty when default-constructed. Every live TempDir is listed
/// for emergency_cleanup(), so a worker whose job is killed removes them on its way out.
class TempDir {
 public:
  TempDir() = default;
  /// Creates "<temp_root()>/<prefix>XXXXXX". Throws std::system_error.
  explicit TempDir(const std::string& prefix);
  TempDir(TempDir&& o) noexcept : path_(std::exchange(o.path_, {})) {}
  TempDir& operator=(TempDir&& o) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() { remove(); }

  const std::string& path() const { return path_; }
  /// Removes the directory now (if any). Never throws.
  void remove() noexcept;

  /// This process's run folder "<$TMPDIR or /tmp>/ranktune-<key>-<host>-<pid>" (mode 0700),
  /// made the temp_root() of later TempDirs until it is removed. Before making it, removes
  /// the folders of the same key and host whose process is gone (a run killed with
  /// kill -9): only real folders owned by the effective user. Throws std::system_error.
  static TempDir run_folder(const std::string& key);

 private:
  std::string path_;
};

/// "$TMPDIR", or "/tmp" when it is unset or empty.
std::string temp_base();
/// Where TempDirs are made: the live run folder, else temp_base().
std::string temp_root();
/// A short key for run folders of the experiment `name` (e.g. its results path): 16 hex
/// digits of a hash, so that any name makes a valid, short folder name.
std::string run_folder_key(const std::string& name);

}  // namespace ranktune::sys
