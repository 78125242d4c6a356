#pragma once
/// Every message that crosses MPI between the driver (rank 0) and the workers, in one
/// place. Messages are Boost.Serialization types packed with Boost.MPI's packed archives
/// and sent as one MPI_PACKED message, so the receiver can use a matched probe
/// (MPI_Improbe + MPI_Mrecv) on any source without a second size message.
///
/// Protocol (wire version kWireVersion; the handshake refuses a mismatch):
///   driver -> all : Setup (broadcast)           worker -> driver : Hello
///   driver -> w   : Start                        w -> driver      : Result (then waits)
///   driver -> w   : Decision (Continue | Stop)   w -> driver      : Ended (done | failed)
///   driver -> w   : Shutdown                     w -> driver      : Bye
///                                                w -> driver      : Checkpoint, Placed
/// Gangs: the driver sends the same Start to every member; the members build their own
/// communicator (mpi/gang.h) and only the leader sends Result, Checkpoint, Placed and Ended,
/// and reads Decisions during the trial, which it passes on over the gang's communicator.
/// A Stop or Pause also goes to every member, which finds it stale once the trial is over.
/// Leases: Start and Continue say up to which iteration the worker may run without waiting
/// (search::Command::until). After the Result of that iteration it waits for the Decision;
/// before it, it only checks between steps for a Stop, without blocking. A worker is free
/// as soon as the driver sends it a Stop; it carries out its messages in order.

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/mpi/communicator.hpp>
#include <boost/serialization/map.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/utility.hpp>
#include <boost/serialization/vector.hpp>

#include "search/metrics.h"

namespace ranktune::mpi {

inline constexpr int kWireVersion = 5;

enum Tag : int {
  kTagHello = 1,
  kTagStart = 2,
  kTagDecision = 3,
  kTagResult = 4,
  kTagEnded = 5,
  kTagShutdown = 6,
  kTagBye = 7,
  kTagCheckpoint = 8,
  kTagPlaced = 9,
};

/// Broadcast once by the driver: the experiment as the driver read it.
struct Setup {
  int wire_version = kWireVersion;
  std::string config_text;
  std::string config_path;
  std::vector<std::string> overrides;
  std::string log_dir;  ///< where command trials write their output

  template <class Ar> void serialize(Ar& ar, unsigned) {
    ar & wire_version & config_text & config_path & overrides & log_dir;
  }
};

/// A worker introduces itself: where it runs and what device it bound.
struct Hello {
  int wire_version = kWireVersion;
  std::string host;
  int local_index = 0;
  std::string device;       ///< "cpu" or "cuda:N"
  std::string device_name;  ///< GPU name, or the CPU model

  template <class Ar> void serialize(Ar& ar, unsigned) {
    ar & wire_version & host & local_index & device & device_name;
  }
};

struct Start {
  std::int64_t trial = 0;
  int attempt = 0;
  std::string config_json;
  std::int64_t until = 1;  ///< lease: run up to this iteration before waiting for a decision
  std::int64_t iterations = 0;  ///< iterations already run: the first result is iterations + 1
  std::string checkpoint;       ///< bytes to restore before the first step (empty: fresh start)
  /// The trial's gang: world ranks, leader first. Every member gets the same Start; only
  /// the leader talks to the driver during the trial. Empty or one rank: no gang.
  std::vector<int> gang;

  template <class Ar> void serialize(Ar& ar, unsigned) {
    ar & trial & attempt & config_json & until & iterations & checkpoint & gang;
  }
};

/// Sent once per attempt by the trial's leader after setup: how the trial computes, for
/// the results file ("placement" events).
struct Placed {
  std::int64_t trial = 0;
  int attempt = 0;
  std::string path;        ///< "cpu" or "cuda:N"
  int threads = 1;         ///< compute threads per rank
  std::string collective;  ///< the gang's collective ("mpi", "nccl"); empty alone

  template <class Ar> void serialize(Ar& ar, unsigned) { ar & trial & attempt & path & threads & collective; }
};

struct Decision {
  enum Kind : int { Continue = 0, Stop = 1, Pause = 2 };
  std::int64_t trial = 0;
  int attempt = 0;
  int kind = Continue;
  std::int64_t until = 0;  ///< Continue: the new lease
  bool save = false;       ///< Continue: send a Checkpoint of the current state first

  template <class Ar> void serialize(Ar& ar, unsigned) { ar & trial & attempt & kind & until & save; }
};

/// A trial's saved state after `iteration` (on a Continue with save, and on Pause).
struct Checkpoint {
  std::int64_t trial = 0;
  int attempt = 0;
  std::int64_t iteration = 0;
  std::string bytes;

  template <class Ar> void serialize(Ar& ar, unsigned) { ar & trial & attempt & iteration & bytes; }
};

struct Result {
  std::int64_t trial = 0;
  int attempt = 0;
  std::int64_t iteration = 0;  ///< 1-based within the attempt
  search::Metrics metrics;

  template <class Ar> void serialize(Ar& ar, unsigned) { ar & trial & attempt & iteration & metrics; }
};

/// The trial's attempt ended without being stopped: it finished by itself, or it failed.
struct Ended {
  std::int64_t trial = 0;
  int attempt = 0;
  bool failed = false;
  std::string reason;
  std::string log_tail;

  template <class Ar> void serialize(Ar& ar, unsigned) {
    ar & trial & attempt & failed & reason & log_tail;
  }
};

/// Shutdown and Bye carry nothing.
struct Empty {
  template <class Ar> void serialize(Ar&, unsigned) {}
};

/// Packs `msg` and sends it to `dest` with `tag` (a standard-mode send: the messages are
/// small and the receiver always drains them, so eager delivery applies).
template <class T>
void send(const boost::mpi::communicator& comm, int dest, Tag tag, const T& msg);

/// A received, still packed message.
struct Incoming {
  int source = -1;
  int tag = -1;
  std::vector<char> bytes;
};

/// Receives one message if any is waiting (MPI_Improbe + MPI_Mrecv); never blocks.
std::optional<Incoming> try_receive(const boost::mpi::communicator& comm, int source = MPI_ANY_SOURCE);

/// Waits for one message without spinning: polls with a sleeping backoff that starts at
/// 10 us and doubles up to `max_nap` (see backoff.h for why).
Incoming receive(const boost::mpi::communicator& comm, int source, std::chrono::microseconds max_nap);

/// Unpacks a message received by try_receive or receive.
template <class T>
T unpack(const boost::mpi::communicator& comm, const Incoming& in);

}  // namespace ranktune::mpi
