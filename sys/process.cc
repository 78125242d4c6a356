// ChildProcess: spawn, wait, terminate and reap, and the emergency cleanup of every live
// child and orphan when ranktune is killed (sys/process.h).
#include "sys/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <system_error>
#include <thread>
#include <utility>

#include "sys/cleanup_registry.h"

extern char** environ;

namespace ranktune::sys {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Deadline = std::optional<Clock::time_point>;

namespace detail {

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: the watchdog may use it during exit
  return *r;
}

}  // namespace detail

using detail::Registry;
using detail::registry;

int poll_timeout(Deadline deadline) {
  if (!deadline) return -1;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
}

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

UniqueFd open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
#else
  return {};
#endif
}

namespace {

// What the cloned child needs, prepared by the parent: the child shares the parent's memory
// (CLONE_VM) until it execs, so it only makes system calls, and reports a failure in
// `error` (which the parent reads once the child has exec'd or exited).
struct ChildArgs {
  const char* program = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* workdir = nullptr;  ///< nullptr: keep the parent's
  int output = -1, error_out = -1, report = -1, control = -1;
  bool keep_stderr = false, keep_stdin = false, own_group = true, die_with_parent = true;
  int first_unused_fd = 3;  ///< everything from here on is closed (MPI leaves fds inheritable); -1: none
  pid_t parent = -1;
  int error = 0;
};

int child_main(void* p) {
  ChildArgs& a = *static_cast<ChildArgs*>(p);
  // Default dispositions (an MPI runtime may ignore or catch signals the program needs);
  // every signal is still blocked (the parent blocked them around clone), so none of the
  // parent's handlers can run on this shared memory before the exec.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);  // EINVAL for glibc's own: fine
  // Own process group, so terminate() reaches the program's children too.
  if (a.own_group && ::setpgid(0, 0) != 0) goto fail;
  // Die with the worker, even when it is killed with SIGKILL. Then check that it has not
  // died already, in which case the death signal never comes.
  if (a.die_with_parent) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) goto fail;
    if (::getppid() != a.parent) ::_exit(127);
  }
  if (!a.keep_stdin) {
    const int null = ::open("/dev/null", O_RDONLY);
    if (null < 0) goto fail;
    if (null != 0 && (::dup2(null, 0) < 0 || ::close(null) != 0)) goto fail;
  }
  // The parent lifted these fds above 9, so the dup2s cannot overwrite one another.
  if (a.output >= 0 && ::dup2(a.output, 1) < 0) goto fail;
  if (!a.keep_stderr) {
    const int err = a.error_out >= 0 ? a.error_out : a.output;
    if (err >= 0 && ::dup2(err, 2) < 0) goto fail;
  }
  if (a.report >= 0 && ::dup2(a.report, ChildProcess::kReportFd) < 0) goto fail;
  if (a.control >= 0 && ::dup2(a.control, ChildProcess::kControlFd) < 0) goto fail;
#ifdef SYS_close_range
  if (a.first_unused_fd >= 0)  // ENOSYS before 5.9: CLOEXEC still applies
    ::syscall(SYS_close_range, static_cast<unsigned>(a.first_unused_fd), ~0u, 0u);
#endif
  if (a.workdir != nullptr && ::chdir(a.workdir) != 0) goto fail;
  {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
  }
  ::execve(a.program, a.argv, a.envp);
fail:
  a.error = errno != 0 ? errno : EINVAL;
  ::_exit(127);
}

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

// ---- ChildProcess ----

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)), own_group_(o.own_group_), pidfd_(std::move(o.pidfd_)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    terminate();
    pid_ = std::exchange(o.pid_, -1);
    own_group_ = o.own_group_;
    pidfd_ = std::move(o.pidfd_);
  }
  return *this;
}

int ChildProcess::spawn(const SpawnRequest& r, ChildProcess& out) {
  // Lift the fds above the child's fixed numbers 0..4, so the dup2s in the child cannot
  // overwrite one another and never dup an fd onto itself (which would keep close-on-exec).
  UniqueFd output, error_out, report, control;
  if (r.output_fd >= 0 && !(output = UniqueFd(::fcntl(r.output_fd, F_DUPFD_CLOEXEC, 10)))) return errno;
  if (r.error_fd >= 0 && !(error_out = UniqueFd(::fcntl(r.error_fd, F_DUPFD_CLOEXEC, 10)))) return errno;
  if (r.report_fd >= 0 && !(report = UniqueFd(::fcntl(r.report_fd, F_DUPFD_CLOEXEC, 10)))) return errno;
  if (r.control_fd >= 0 && !(control = UniqueFd(::fcntl(r.control_fd, F_DUPFD_CLOEXEC, 10)))) return errno;

  auto cargv = c_strings(r.argv), cenv = c_strings(r.env);
  ChildArgs a;
  a.program = r.program.c_str();
  a.argv = cargv.data();
  a.envp = cenv.data();
  a.workdir = r.workdir.empty() ? nullptr : r.workdir.c_str();
  a.output = output.get();
  a.error_out = error_out.get();
  a.report = report.get();
  a.control = control.get();
  a.keep_stderr = r.keep_stderr;
  a.keep_stdin = r.keep_stdin;
  a.own_group = r.own_group;
  a.die_with_parent = r.die_with_parent;
  a.first_unused_fd = r.close_other_fds ? (control ? kControlFd : report ? kReportFd : 2) + 1 : -1;
  a.parent = ::getpid();

  // clone(CLONE_VM | CLONE_VFORK) as posix_spawn does (no copy of a large worker's page
  // tables, no fork of memory an RDMA NIC has pinned), but with a child of our own that can
  // set PR_SET_PDEATHSIG before the exec. We are suspended until it has exec'd or exited.
  constexpr std::size_t kStack = 256 * 1024;
  std::unique_ptr<char[]> stack(new (std::nothrow) char[kStack]);
  if (!stack) return ENOMEM;
  void* top = reinterpret_cast<void*>((reinterpret_cast<std::uintptr_t>(stack.get()) + kStack) & ~std::uintptr_t{15});
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  Registry& reg = registry();
  std::unique_lock lock(reg.mutex);  // emergency_cleanup() sees the child as soon as it exists
  const pid_t pid = ::clone(child_main, top, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
  const int clone_error = errno;
  if (pid > 0 && a.error == 0) reg.children.emplace(pid, r.own_group);
  lock.unlock();
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) return clone_error;
  if (a.error != 0) {  // it could not exec (ENOENT, EACCES, ...): collect it
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return a.error;
  }
  out = ChildProcess();
  out.pid_ = pid;
  out.own_group_ = r.own_group;
  out.pidfd_ = open_pidfd(pid);
  return 0;
}

bool ChildProcess::wait_exit(Deadline deadline) const noexcept {
  if (pid_ <= 0) return true;
  if (pidfd_) {
    pollfd p{pidfd_.get(), POLLIN, 0};
    for (;;) {
      const int n = ::poll(&p, 1, poll_timeout(deadline));
      if (n > 0) return true;
      if (n == 0) return false;
      if (errno != EINTR) break;
    }
  }
  // No pidfd: WNOWAIT leaves the zombie in place (see reap()); naps back off to 50 ms.
  auto nap = std::chrono::milliseconds(1);
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
      if (errno == EINTR) continue;
      return true;  // ECHILD: reaped behind our back (SIGCHLD ignored)
    }
    if (info.si_pid == pid_) return true;
    if (deadline && Clock::now() >= *deadline) return false;
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::milliseconds(50));
  }
}

namespace {

// Our children and their process groups, from /proc (/proc/PID/task/TID/children needs
// CONFIG_PROC_CHILDREN, which kernels may lack).
std::vector<std::pair<pid_t, pid_t>> children_of_self() {
  std::vector<std::pair<pid_t, pid_t>> out;  // pid, pgid
  const pid_t self = ::getpid();
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(it->path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    char state = 0;
    long ppid = 0, pgrp = 0;
    if (!(rest >> state >> ppid >> pgrp) || ppid != self) continue;
    out.emplace_back(static_cast<pid_t>(std::stol(name)), static_cast<pid_t>(pgrp));
  }
  return out;
}

// As a subreaper: kills (SIGKILL, with their process groups) the children that are not
// the MPI runtime's, nor (unless `leaders_too`) live trial leaders, i.e. what trials left
// behind and was reparented to us, and reaps them. Goes on while one of `groups` (trials',
// just killed) still has members, since each becomes our child as its parent dies. Bounded
// to ~1 s, so that a process stuck in the kernel cannot hang the worker. Called with the
// registry locked.
void kill_orphans(Registry& reg, const std::vector<pid_t>& groups, bool leaders_too) noexcept {
  try {
    const auto until = Clock::now() + std::chrono::seconds(1);
    for (auto nap = std::chrono::microseconds(100);; nap = std::min(nap * 2, std::chrono::microseconds(20000))) {
      bool found = false;
      for (const auto& [pid, pgid] : children_of_self()) {
        if ((!leaders_too && reg.children.count(pid) != 0) || reg.foreign_children.count(pid) != 0) continue;
        found = true;
        if (pgid == pid) ::kill(-pgid, SIGKILL);  // a leader of its own group (setsid)
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, WNOHANG);
      }
      const bool group_left =
          std::any_of(groups.begin(), groups.end(), [](pid_t g) { return ::kill(-g, 0) == 0; });
      if ((!found && !group_left) || Clock::now() >= until) return;
      std::this_thread::sleep_for(nap);
    }
  } catch (...) {  // bad_alloc reading /proc: leave them to the next sweep
  }
}

}  // namespace

bool become_subreaper() noexcept {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) return false;
  Registry& reg = registry();
  const std::lock_guard lock(reg.mutex);
  reg.subreaper = true;
  try {
    for (const auto& [pid, pgid] : children_of_self()) reg.foreign_children.insert(pid);
  } catch (...) {
  }
  return true;
}

void emergency_cleanup() noexcept {
  Registry& reg = registry();
  reg.mutex.lock();  // never unlocked: the caller exits, and nothing may spawn meanwhile
  std::vector<pid_t> groups;
  for (const auto& [pid, own_group] : reg.children) {
    ::kill(own_group ? -pid : pid, SIGKILL);
    if (own_group) groups.push_back(pid);
  }
  // Reaping the leaders too lets their groups empty, and what they started elsewhere
  // (setsid) become ours to kill.
  if (reg.subreaper) kill_orphans(reg, groups, true);
  try {
    // Deepest first: a trial's folder lies inside the run folder.
    std::vector<std::string> dirs(reg.temp_dirs.begin(), reg.temp_dirs.end());
    std::sort(dirs.begin(), dirs.end(), [](const auto& x, const auto& y) { return x.size() > y.size(); });
    for (const auto& d : dirs) {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } catch (...) {
  }
}

std::optional<int> ChildProcess::reap() noexcept {
  if (pid_ <= 0) return std::nullopt;
  // While the leader is an unreaped zombie its pid, the group id, cannot be reused, so
  // killing the group now cannot hit a stranger.
  send_signal(SIGKILL);
  int status = 0;
  pid_t r;
  do r = ::waitpid(pid_, &status, 0);
  while (r < 0 && errno == EINTR);
  {
    Registry& reg = registry();
    const std::lock_guard lock(reg.mutex);
    reg.children.erase(pid_);
    // The group's members and what they started in other sessions are ours now (as a
    // subreaper): kill and reap them, so that nothing of this attempt outlives it.
    if (reg.subreaper) kill_orphans(reg, own_group_ ? std::vector<pid_t>{pid_} : std::vector<pid_t>{}, /*leaders_too=*/false);
  }
  pid_ = -1;
  pidfd_.reset();
  if (r < 0) return std::nullopt;
  return status;
}

Termination ChildProcess::terminate(std::chrono::milliseconds grace) noexcept {
  if (pid_ <= 0) return {};
  send_signal(SIGTERM);
  const bool exited = wait_exit(Clock::now() + grace);
  return {reap(), !exited};
}

void ChildProcess::send_signal(int sig) const noexcept {
  if (pid_ > 0) ::kill(own_group_ ? -pid_ : pid_, sig);
}

// ---- helpers ----

ResolvedProgram resolve_program(const std::string& program, const std::string& config_dir,
                                const std::string& path_env) {
  const auto runnable = [](const fs::path& p) -> int {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return errno;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    return ::access(p.c_str(), X_OK) == 0 ? 0 : errno;
  };
  if (program.empty()) return {"", ENOENT};
  std::error_code ec;
  if (program.find('/') != std::string::npos) {
    fs::path p(program);
    if (p.is_relative()) p = (config_dir.empty() ? fs::current_path(ec) : fs::path(config_dir)) / p;
    p = p.lexically_normal();
    return {p.string(), runnable(p)};
  }
  // As execvp: the first executable match wins; EACCES if only unexecutable ones exist.
  int error = ENOENT;
  const std::string dirs = path_env.empty() ? "/usr/local/bin:/usr/bin:/bin" : path_env;
  for (std::size_t begin = 0; begin <= dirs.size();) {
    std::size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(begin, end - begin);
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / program;
    const int e = runnable(candidate);
    if (e == 0) return {fs::absolute(candidate, ec).lexically_normal().string(), 0};
    if (e == EACCES) error = EACCES;
    begin = end + 1;
  }
  return {"", error};
}

std::string signal_description(int sig) {
  static const std::map<int, const char*> names = {
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
      {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
      {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
      {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"},
      {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"}};
  const auto it = names.find(sig);
  if (it == names.end()) return "signal " + std::to_string(sig);
  return std::string(it->second) + " (" + std::to_string(sig) + ")";
}

}  // namespace ranktune::sys
