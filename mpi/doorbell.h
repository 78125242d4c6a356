#pragma once
/// Wake-ups between the ranks of one machine. Open MPI has no blocking receive that yields
/// the CPU, so a waiting rank naps (mpi/backoff.h), and each nap used to add its length to
/// the message it was waiting for. With a doorbell the nap is a ppoll() on this rank's
/// datagram socket, and a rank that sends a message its peer waits for rings the peer's
/// bell after the send: the peer wakes in microseconds instead of at the end of its nap.
///
/// The bell only shortens naps; it never carries a message. A rank always probes MPI before
/// it naps, and a ring sent after a message stays queued until the peer's next nap, so no
/// message waits longer than without it. Where no bell can be reached (a peer on another
/// machine or in another network namespace, a socket that cannot be made) the nap runs its
/// full length, as before.
///
/// Bells are abstract Unix datagram sockets (nothing in the file system), named after the
/// job (the driver's process_namespace_id and pid, so two jobs on one machine never share a
/// name) and the rank. Anything that rings a bell only wakes its rank early.

#include <chrono>
#include <string>

namespace ranktune::mpi {

/// Opens this process's bell as `rank` of the job `job` (doorbell_job()). Without it (or
/// when it fails) bell_wait() sleeps and ring() does nothing. Call once per rank.
void open_doorbell(const std::string& job, int rank);

/// The job's name for open_doorbell: one per driver process. "" when `namespace_id` is
/// empty (the bell stays closed).
std::string doorbell_job(const std::string& namespace_id, long driver_pid);

/// Wakes `rank` if it naps on its bell. Cheap (one non-blocking sendto), never blocks, never
/// fails: a peer without a reachable bell is remembered and not rung again.
void ring(int rank);

/// Sleeps for `timeout`, or until this rank's bell rings (and takes every ring queued).
/// True when it rang.
bool bell_wait(std::chrono::microseconds timeout);

/// How this process's naps ended so far: by a ring, or by running out (or as plain sleeps,
/// with the bell closed). RANKTUNE_TRACE prints them at each rank's end; tests read them.
struct BellCounts {
  bool open = false;
  long long rung = 0;
  long long ran_out = 0;
};
BellCounts bell_counts();

/// trace(`phase`) followed by bell_counts() (mpi/trace.h: only with RANKTUNE_TRACE set).
void trace_doorbell(const char* phase);

}  // namespace ranktune::mpi
