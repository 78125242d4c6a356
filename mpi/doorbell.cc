// The ranks' doorbells (mpi/doorbell.h): abstract Unix datagram sockets, one per rank.
#include "mpi/doorbell.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "mpi/trace.h"
#include "sys/fd.h"

namespace ranktune::mpi {

namespace {

struct Bells {
  sys::UniqueFd fd;               ///< this rank's bell; also the socket rings are sent from
  std::string job;                ///< "" until open_doorbell succeeded
  std::vector<bool> unreachable;  ///< by rank: a ring failed for good, so none is sent again
  BellCounts counts;
};

Bells& bells() {
  static Bells b;
  return b;
}

/// The abstract address of `rank`'s bell; false if the name does not fit.
bool address_of(const std::string& job, int rank, sockaddr_un& addr, socklen_t& len) {
  const std::string name = "ranktune-bell/" + job + "/" + std::to_string(rank);
  if (name.size() + 1 > sizeof addr.sun_path) return false;
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  addr.sun_path[0] = '\0';  // abstract: the name is the bytes after the NUL, not a file
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return true;
}

}  // namespace

std::string doorbell_job(const std::string& namespace_id, long driver_pid) {
  if (namespace_id.empty()) return {};
  return namespace_id + "/" + std::to_string(driver_pid);
}

void open_doorbell(const std::string& job, int rank) {
  Bells& b = bells();
  if (job.empty() || b.fd) return;
  sockaddr_un addr{};
  socklen_t len = 0;
  if (!address_of(job, rank, addr, len)) return;
  // CLOEXEC: a trial's program must not inherit the bell (nor keep its name alive).
  sys::UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) return;
  // A name taken already (another process got there first) leaves the bell closed: the
  // naps then run their full length, and a ring from our peers reaches only that process.
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0) return;
  b.fd = std::move(fd);
  b.job = job;
  b.counts.open = true;
}

void ring(int rank) {
  Bells& b = bells();
  if (b.job.empty() || rank < 0) return;
  if (static_cast<std::size_t>(rank) < b.unreachable.size() && b.unreachable[static_cast<std::size_t>(rank)]) return;
  sockaddr_un addr{};
  socklen_t len = 0;
  if (!address_of(b.job, rank, addr, len)) return;
  const char byte = 0;
  if (::sendto(b.fd.get(), &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr), len) == 1)
    return;
  // EAGAIN: the peer's queue is full of rings it has not taken yet, so it wakes anyway.
  // Anything else (ECONNREFUSED: no such bell on this machine) will not get better.
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ENOBUFS) return;
  if (b.unreachable.size() <= static_cast<std::size_t>(rank)) b.unreachable.resize(static_cast<std::size_t>(rank) + 1);
  b.unreachable[static_cast<std::size_t>(rank)] = true;
}

bool bell_wait(std::chrono::microseconds timeout) {
  Bells& b = bells();
  if (!b.fd) {
    std::this_thread::sleep_for(timeout);
    ++b.counts.ran_out;
    return false;
  }
  pollfd p{b.fd.get(), POLLIN, 0};
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  const timespec ts{static_cast<time_t>(s.count()), static_cast<long>((timeout - s).count() * 1000)};
  if (::ppoll(&p, 1, &ts, nullptr) <= 0) {  // the nap ran out (or a signal came)
    ++b.counts.ran_out;
    return false;
  }
  ++b.counts.rung;
  // Every queued ring at once: they all say "look again", which the caller does next.
  char buf[64];
  while (::recv(b.fd.get(), buf, sizeof buf, MSG_DONTWAIT) > 0) {
  }
  return true;
}

BellCounts bell_counts() { return bells().counts; }

void trace_doorbell(const char* phase) {
  const BellCounts c = bell_counts();
  char line[160];
  std::snprintf(line, sizeof line, "%s; doorbell %s, %lld naps ended by a ring, %lld ran out", phase,
                c.open ? "open" : "closed", c.rung, c.ran_out);
  trace(line);
}

}  // namespace ranktune::mpi
