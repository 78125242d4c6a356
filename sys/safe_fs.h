#pragma once
/// Files and folders that ranktune writes beside a results file, opened so that another user
/// cannot point them elsewhere. Results folders are often world-writable (`/scratch`, mode
/// 1777), so a name there may be a symlink to a file only we may write, a FIFO that blocks
/// open(2), or a folder another user made for us. The rules (docs/guide/failures.md, "Threat model"):
///
/// - the last component of every path is opened with O_NOFOLLOW, and with O_NONBLOCK until
///   fstat has shown a regular file (a FIFO cannot block us, a device cannot be written);
/// - files are created with O_EXCL where we create them, and an existing file must be ours
///   and have one link (a hard link to another file is refused);
/// - folders are made with mkdir(2); an existing one must be a real folder (not a link), ours,
///   and writable by no one else; files inside them are opened relative to the folder's
///   descriptor (openat), so the folder cannot be swapped between the check and the open.
///
/// Folders above the last component are followed as usual: a results folder reached through
/// the user's own link (`/scratch/me -> /lustre/me`) is fine.

#include <sys/types.h>

#include <stdexcept>
#include <string>

#include "sys/fd.h"

namespace ranktune::sys {

/// A refusal or a failed system call; `error` is the errno (0 for a refusal on our rules).
class FsError : public std::runtime_error {
 public:
  FsError(const std::string& what, int error) : std::runtime_error(what), error_(error) {}
  int error() const { return error_; }

 private:
  int error_;
};

enum class Create {
  Never,      ///< the file must exist
  IfMissing,  ///< create it (O_EXCL) if absent, else open the existing one
  Exclusive,  ///< it must not exist yet
};

struct OpenOptions {
  int access = 0;               ///< O_RDONLY, O_WRONLY or O_RDWR
  bool append = false;          ///< O_APPEND
  bool truncate = false;        ///< truncate an existing file (after the checks, never before)
  Create create = Create::Never;
  mode_t mode = 0644;           ///< for a created file (the umask applies)
  bool owned = true;            ///< an existing file must belong to the effective user
  mode_t forbidden_bits = 0;    ///< an existing file must have none of these mode bits
};

/// Opens `name` (one component, no '/') inside the folder open at `dirfd` under the rules
/// above. Throws FsError naming `shown` (the path as the user knows it) and what was wrong.
UniqueFd open_file_at(int dirfd, const std::string& name, const OpenOptions& options,
                      const std::string& shown);

/// The same for a path: its folder is opened (following links above the last component),
/// then the file inside it.
UniqueFd open_file(const std::string& path, const OpenOptions& options);

/// Opens the folder `path` without following a link in its last component.
UniqueFd open_directory(const std::string& path);

/// Makes the folder `path` (mode `mode`, the umask applies) or accepts an existing one that
/// is a real folder, belongs to the effective user and is writable by no one else. Returns
/// its descriptor. Throws FsError otherwise, saying what to do.
UniqueFd make_private_directory(const std::string& path, mode_t mode = 0755);

/// Makes the folder `path` (mode `mode`, the umask applies) or accepts an existing one that
/// is a real folder (not a link) of the effective user, whoever else may write in it; for
/// folders that only receive files through replace_file_at (`report --plots`,
/// `export-checkpoint`), where a name planted in it is replaced, never written through.
/// Returns its descriptor. Throws FsError otherwise, saying what to do.
UniqueFd make_own_directory(const std::string& path, mode_t mode = 0755);

/// Replaces the file `path` with `bytes` atomically: written to a hidden temporary file of
/// ours beside it (created with O_EXCL and `mode`, the umask applies; no link followed),
/// then renamed over it, so a reader (a browser reloading a page) sees the old contents or
/// the new, never half, and a link or file another user planted at `path` is replaced,
/// never written through. The temporary file is removed on failure. Throws FsError. Every
/// file ranktune writes whole goes through it (README, "Threat model").
void replace_file(const std::string& path, const std::string& bytes, mode_t mode = 0644);

/// The same for `name` (one component) inside the folder open at `dirfd`: the folder that
/// was checked is the one written into. `shown` names the file in messages.
void replace_file_at(int dirfd, const std::string& name, const std::string& bytes, const std::string& shown,
                     mode_t mode = 0644);

/// The last component of `path` and its folder ("." when none).
std::pair<std::string, std::string> split_path(const std::string& path);

}  // namespace ranktune::sys
