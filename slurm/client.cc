#include "slurm/client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

extern char** environ;

namespace ranktune::slurm {
namespace {

// One end of a pipe, closed when it goes out of scope.
class Fd {
 public:
  Fd() = default;
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

bool make_pipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
  return true;
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, double timeout_s, bool pass_stderr) {
  CommandResult r;
  if (argv.empty()) {
    r.err = "no command";
    return r;
  }
  Fd out_r, out_w, err_r, err_w;
  if (!make_pipe(out_r, out_w) || (!pass_stderr && !make_pipe(err_r, err_w))) {
    r.err = std::string("cannot create a pipe: ") + std::strerror(errno);
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.get(), STDOUT_FILENO);
  if (!pass_stderr) posix_spawn_file_actions_adddup2(&actions, err_w.get(), STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    r.err = "cannot run " + argv[0] + ": " + std::strerror(rc);
    return r;
  }
  // Our copies of the write ends must go, or the reads below never see end-of-file.
  out_w.reset();
  err_w.reset();

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::vector<pollfd> fds{{out_r.get(), POLLIN, 0}};
  if (!pass_stderr) fds.push_back({err_r.get(), POLLIN, 0});
  std::string* sinks[2] = {&r.out, &r.err};
  std::size_t open_fds = fds.size();
  while (open_fds > 0) {
    int wait_ms = -1;
    if (timeout_s > 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        kill(pid, SIGKILL);
        r.timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(left.count());
    }
    const int n = poll(fds.data(), fds.size(), wait_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        fds[i].fd = -1;  // poll ignores negative descriptors
        --open_fds;
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace ranktune::slurm
