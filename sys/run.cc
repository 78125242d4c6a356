// run_program: a program run to completion, its output captured through pipes, under a
// time limit (sys/run.h).
#include "sys/run.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "sys/fd.h"
#include "sys/process.h"

namespace ranktune::sys {
namespace {

bool make_pipe(UniqueFd& read_end, UniqueFd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
  return true;
}

int exit_code(const std::optional<int>& status) {
  if (!status) return -1;  // not collected (SIGCHLD ignored)
  return WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
}

}  // namespace

RunResult run_program(const std::vector<std::string>& argv, const RunOptions& o) {
  RunResult r;
  if (argv.empty()) {
    r.err = "no command";
    return r;
  }
  const char* path_env = std::getenv("PATH");
  const ResolvedProgram program = resolve_program(argv[0], "", path_env != nullptr ? path_env : "");
  if (program.error != 0) {
    r.err = "cannot run " + argv[0] + ": " + std::strerror(program.error);
    return r;
  }
  const bool capture_err = !o.pass_stderr && !o.merge_stderr;
  UniqueFd out_r, out_w, err_r, err_w;
  if (!make_pipe(out_r, out_w) || (capture_err && !make_pipe(err_r, err_w))) {
    r.err = std::string("cannot create a pipe: ") + std::strerror(errno);
    return r;
  }
  SpawnRequest request;
  request.program = program.path;
  request.argv = argv;
  request.env = current_environment();
  request.output_fd = out_w.get();
  request.error_fd = err_w.get();
  request.keep_stderr = o.pass_stderr;
  ChildProcess child;
  if (const int e = ChildProcess::spawn(request, child); e != 0) {
    r.err = "cannot run " + argv[0] + ": " + std::strerror(e);
    return r;
  }
  // Our copies of the write ends must go, or the reads below never see end-of-file.
  out_w.reset();
  err_w.reset();

  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> deadline;
  if (o.timeout_s > 0)
    deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.timeout_s));
  std::vector<pollfd> fds{{out_r.get(), POLLIN, 0}};
  if (capture_err) fds.push_back({err_r.get(), POLLIN, 0});
  std::string* sinks[2] = {&r.out, &r.err};
  std::size_t open_fds = fds.size();
  while (open_fds > 0) {
    const int n = ::poll(fds.data(), fds.size(), poll_timeout(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (n == 0) {  // the deadline passed
      r.timed_out = true;
      break;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        fds[i].fd = -1;  // poll ignores negative descriptors
        --open_fds;
      }
    }
  }
  // A program that closed its output may still run: the deadline holds for its exit too.
  if (!r.timed_out && !child.wait_exit(deadline)) r.timed_out = true;
  r.status = exit_code(child.reap());  // SIGKILLs the group first: what the program left
  return r;
}

}  // namespace ranktune::sys
