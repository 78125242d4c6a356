// Parallel `ranktune eval` (mpi/eval_farm.h): rank 0 hands out the leaders and the turns
// to compute per node, the workers evaluate and send their evaluations back.
#include "mpi/eval_farm.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include <boost/mpi/collectives/all_gather.hpp>

#include "config/config.h"
#include "io/errors.h"
#include "mpi/backoff.h"
#include "mpi/codec.h"
#include "mpi/errors.h"
#include "mpi/launch.h"
#include "mpi/trace.h"
#include "mpi/wire.h"

namespace ranktune::mpi {
namespace {

using namespace std::chrono_literals;

enum FarmTag : int {
  kAssign = 1,    ///< rank 0 -> worker: Assign
  kLeave = 2,     ///< rank 0 -> worker: nothing more to do (empty)
  kTurn = 3,      ///< worker -> rank 0: TurnRequest
  kGranted = 4,   ///< rank 0 -> worker: the turn asked for (empty)
  kTurnDone = 5,  ///< worker -> rank 0: the turn held is given back (empty)
  kDone = 6,      ///< worker -> rank 0: Done
  kBye = 7,       ///< worker -> rank 0: left (empty)
};

// Longest nap of a rank that waits. A turn's grant waits at most this long past its
// release: small next to an evaluation, and the naps keep idle ranks off the cores.
constexpr auto kMaxNap = 2ms;

struct Assign {
  std::uint64_t index = 0;
  std::int64_t trial = 0;
  std::int64_t iteration = 0;
  template <class Ar> void serialize(Ar& ar, unsigned) { ar & index & trial & iteration; }
};

struct TurnRequest {
  bool timing = false;
  template <class Ar> void serialize(Ar& ar, unsigned) { ar & timing; }
};

// One evaluation crossing from a worker to rank 0, every field but the leader (rank 0 points
// it at its own). THE ONE PLACE that lists eval::LeaderEvaluation's fields for the transport:
// a field added to LeaderEvaluation must be added here, or a parallel evaluation loses it
// (tests/mpi/eval_parallel.sh compares a parallel evaluation with a serial one). Both
// directions run this function, so a field is written and read in the same order.
template <class Ar>
void transfer(Ar& ar, eval::LeaderEvaluation& e) {
  constexpr bool reading = std::is_same_v<Ar, WireReader>;
  ar & e.path & e.threads & e.metrics & e.samples & e.seconds;
  // A count the bytes left cannot hold (each entry takes at least `bytes`) is damage.
  const auto count = [&](std::uint64_t n, std::size_t bytes, const char* what) {
    if constexpr (reading)
      if (n > ar.left() / bytes) throw WireFormatError(std::string("an evaluation announces too many ") + what);
  };
  std::uint64_t batches = e.latency.size();
  ar & batches;
  count(batches, 8 * sizeof(double), "latencies");  // 2 integers and 6 doubles at least
  if constexpr (reading) e.latency.resize(batches);
  for (eval::LatencyStats& l : e.latency) {
    ar & l.batch_size & l.batches & l.mean_s & l.p50_s & l.p90_s & l.p99_s & l.max_s & l.samples_per_s;
    for (eval::LatencyPart* part : {&l.pre, &l.inference, &l.post}) ar & part->p50_s & part->p90_s & part->p99_s;
    std::uint64_t kept = l.trace.size();
    ar & kept;
    count(kept, 6 * sizeof(double), "timed batches");
    if constexpr (reading) l.trace.resize(kept);
    for (eval::BatchTime& b : l.trace) ar & b.batch & b.start_s & b.total_s & b.pre_s & b.inference_s & b.post_s;
  }
  std::uint64_t cells = e.confusion.size();
  ar & cells;
  count(cells, sizeof(std::int64_t), "confusion cells");
  if constexpr (reading) e.confusion.resize(cells);
  for (std::int64_t& c : e.confusion) ar & c;
  ar & e.classes;
  // The manifest as CBOR: its numbers keep their type and bits (integers stay integers,
  // doubles are exact), which a text form does not promise.
  std::vector<std::uint8_t> manifest;
  if constexpr (!reading) manifest = nlohmann::json::to_cbor(e.manifest);
  ar & manifest;
  if constexpr (reading) {
    try {
      e.manifest = nlohmann::json::from_cbor(manifest);
    } catch (const nlohmann::json::exception& x) {
      throw WireFormatError(std::string("an evaluation's manifest does not decode: ") + x.what());
    }
  }
}

// A worker's answer to an Assign.
struct Done {
  std::uint64_t index = 0;
  bool ok = false;
  // A failure: the exit code a serial evaluation would end with (describe_error), whether it
  // was a config error, and the message.
  int code = 0;
  bool config_error = false;
  std::string error;
  eval::LeaderEvaluation evaluation;  // when ok
  template <class Ar> void serialize(Ar& ar, unsigned) {
    ar & index & ok & code & config_error & error;
    if (ok) transfer(ar, evaluation);
  }
};

template <class T>
void send_message(const boost::mpi::communicator& comm, int dest, FarmTag tag, const T& msg) {
  std::vector<char> bytes;
  encode(msg, bytes);
  MPI_CHECK(MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, dest, tag, static_cast<MPI_Comm>(comm)));
}

void send_empty(const boost::mpi::communicator& comm, int dest, FarmTag tag) {
  MPI_CHECK(MPI_Send(nullptr, 0, MPI_BYTE, dest, tag, static_cast<MPI_Comm>(comm)));
}

template <class T>
T open_message(const boost::mpi::communicator& comm, const Incoming& in) {
  try {
    return decode<T>(in.bytes.data(), in.bytes.size());
  } catch (const WireFormatError& e) {
    throw undecodable(comm, in, std::string("an evaluation message: ") + e.what());
  }
}

[[noreturn]] void protocol_error(const boost::mpi::communicator& comm, const Incoming& in, const char* expected) {
  throw MpiError("rank " + std::to_string(comm.rank()) + ": got a message of tag " + std::to_string(in.tag) +
                 " from rank " + std::to_string(in.source) + " where " + expected +
                 " was due (protocol error: mixed ranktune builds?)");
}

// A failure for rank 0, as a serial evaluation would have thrown it.
Done failure(std::uint64_t index, const std::exception& e) {
  Done d;
  d.index = index;
  d.code = describe_error(e).code;
  d.config_error = dynamic_cast<const config::ConfigError*>(&e) != nullptr;
  d.error = e.what();
  return d;
}

// Rank 0: throws the failure `d` of a worker as the class that gives its exit code
// (apps/commands.cc: invalid_argument 2, StoreError 5, others 1), its message naming the trial
// and the worker.
[[noreturn]] void rethrow(const Done& d, const std::string& where) {
  const std::string what = (d.config_error ? "config error: " : "") + d.error + "\n(" + where + ")";
  if (d.code == 2) throw std::invalid_argument(what);
  if (d.code == 5) throw io::StoreError(what);
  throw std::runtime_error(what);
}

// A worker's turns (eval::ComputeTurns), asked of rank 0.
class WorkerTurns final : public eval::ComputeTurns {
 public:
  explicit WorkerTurns(const boost::mpi::communicator& comm) : comm_(comm) {}
  ~WorkerTurns() override { release(); }
  void compute() override { take(false); }
  void timing() override { take(true); }
  void release() noexcept override {
    if (!held_) return;
    held_.reset();
    // Stamped before rank 0 can hand the turn on, as the grant is after it was handed out:
    // with RANKTUNE_TRACE set, a node's turns read off stderr never overlap
    // (tests/mpi/eval_parallel.sh checks it).
    trace("eval: turn given back");
    try {
      send_empty(comm_, 0, kTurnDone);
    } catch (const std::exception& e) {
      abort_job(describe_error(e).code, describe_error(e).line);
    }
  }

 private:
  void take(bool timing) {
    if (held_ == timing) return;
    release();
    send_message(comm_, 0, kTurn, TurnRequest{timing});
    receive(comm_, 0, kMaxNap, kGranted);
    trace(timing ? "eval: timing turn" : "eval: compute turn");
    held_ = timing;
  }

  const boost::mpi::communicator& comm_;
  std::optional<bool> held_;  ///< the turn held: true a timing turn
};

std::string worker_name(const io::WorkerInfo& w) {
  return "worker " + std::to_string(w.rank) + " (" + w.host + ", " + w.device + ")";
}

}  // namespace

std::vector<char> encode_evaluation(const eval::LeaderEvaluation& e) {
  std::vector<char> bytes;
  WireWriter w(bytes);
  transfer(w, const_cast<eval::LeaderEvaluation&>(e));  // writing leaves it as it is
  return bytes;
}

eval::LeaderEvaluation decode_evaluation(const std::vector<char>& bytes) {
  WireReader r(bytes.data(), bytes.size());
  eval::LeaderEvaluation e;
  transfer(r, e);
  if (r.left() != 0) throw WireFormatError(std::to_string(r.left()) + " bytes follow the end of the evaluation");
  return e;
}

void NodeTurns::give_back(int rank) {
  const auto it = holding_.find(rank);
  if (it == holding_.end()) return;
  if (it->second) timing_ = false;
  else --computing_;
  holding_.erase(it);
}

std::vector<int> NodeTurns::grant() {
  std::vector<int> granted;
  while (!waiting_.empty() && !timing_) {
    const auto [rank, timing] = waiting_.front();
    if (timing && computing_ > 0) break;  // and the ones behind it wait too: no overtaking
    waiting_.pop_front();
    holding_[rank] = timing;
    if (timing) timing_ = true;
    else ++computing_;
    granted.push_back(rank);
  }
  return granted;
}

EvalFarm::EvalFarm(bool exclusive_latency)
    : env_([] {
        exit_with_parent();  // before MPI_Init, which would wait for a dead mpirun too
        return std::make_unique<boost::mpi::environment>(/*abort_on_exception=*/false);
      }()),
      comm_(world_, boost::mpi::comm_duplicate),
      exclusive_latency_(exclusive_latency) {
  tighten_timer_slack();
  placement_ = place(world_);
  io::WorkerInfo me{world_.rank(), placement_.host, placement_.local_index, placement_.device, placement_.device_name};
  std::vector<io::WorkerInfo> all;
  // WorkerInfo is not serializable: its fields go one by one.
  std::vector<std::string> hosts, devices, names;
  std::vector<int> local;
  boost::mpi::all_gather(world_, me.host, hosts);
  boost::mpi::all_gather(world_, me.device, devices);
  boost::mpi::all_gather(world_, me.device_name, names);
  boost::mpi::all_gather(world_, me.local_index, local);
  for (int r = 1; r < world_.size(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    workers_.push_back({r, hosts[i], local[i], devices[i], names[i]});
  }
  if (world_.size() < 2) {
    gathered_ = true;  // no worker to tell
    throw std::invalid_argument(
        "ranktune eval --parallel needs at least 2 MPI ranks (rank 0 records, the others evaluate); this job has 1. "
        "Start it with mpirun -np 3 or more, or without a launcher and --np N to launch N workers");
  }
}

EvalFarm::~EvalFarm() {
  if (gathered_ || !root()) return;
  // The evaluation ended before it began: no worker has an assignment, so each leaves at once.
  try {
    dismiss_workers();
  } catch (const std::exception& e) {
    abort_job(describe_error(e).code, describe_error(e).line);
  }
}

void EvalFarm::dismiss_workers() {
  for (int r = 1; r < size(); ++r) send_empty(comm_, r, kLeave);
  for (int left = 0; left < size() - 1;) {
    const Incoming in = receive(comm_, MPI_ANY_SOURCE, kMaxNap);
    if (in.tag != kBye) protocol_error(comm_, in, "a Bye");
    ++left;
  }
}

std::string EvalFarm::device(const std::string& requested) const {
  if (requested == "auto" && placement_.device != "cpu") return placement_.device;
  return requested;
}

std::vector<eval::LeaderEvaluation> EvalFarm::gather(const std::vector<eval::Leader>& leaders) {
  gathered_ = true;
  std::vector<std::optional<eval::LeaderEvaluation>> done(leaders.size());
  std::vector<std::pair<Done, std::string>> failures;  // with where each happened
  std::map<int, std::size_t> busy;                     // worker rank -> leader index
  std::map<std::string, NodeTurns> nodes;              // by host
  std::vector<int> idle;
  for (int r = size() - 1; r >= 1; --r) idle.push_back(r);  // the lowest rank first
  const auto info = [&](int rank) -> const io::WorkerInfo& { return workers_[static_cast<std::size_t>(rank - 1)]; };
  std::size_t next = 0;
  try {
    Backoff backoff(10us, kMaxNap);
    for (;;) {
      while (failures.empty() && next < leaders.size() && !idle.empty()) {
        const int r = idle.back();
        idle.pop_back();
        const eval::Leader& l = leaders[next];
        std::fprintf(stderr, "ranktune eval: trial %lld (rank %zu), checkpoint at iteration %lld, on %s ...\n",
                     static_cast<long long>(l.trial->id), l.rank, static_cast<long long>(l.checkpoint->iteration),
                     worker_name(info(r)).c_str());
        send_message(comm_, r, kAssign, Assign{next, l.trial->id, l.checkpoint->iteration});
        busy[r] = next++;
      }
      if (busy.empty()) break;
      std::optional<Incoming> in = try_receive(comm_);
      if (!in) {
        backoff.wait();
        continue;
      }
      backoff.reset();
      if (!busy.contains(in->source)) protocol_error(comm_, *in, "nothing");
      NodeTurns& node = nodes[info(in->source).host];
      if (in->tag == kTurn) {
        node.ask(in->source, open_message<TurnRequest>(comm_, *in).timing);
      } else if (in->tag == kTurnDone) {
        node.give_back(in->source);
      } else if (in->tag == kDone) {
        node.give_back(in->source);
        Done d = open_message<Done>(comm_, *in);
        if (d.index != busy[in->source]) protocol_error(comm_, *in, "the Done of its assignment");
        busy.erase(in->source);
        idle.push_back(in->source);
        const eval::Leader& l = leaders[d.index];
        if (d.ok) {
          d.evaluation.leader = l;
          done[d.index] = std::move(d.evaluation);
        } else {
          failures.emplace_back(std::move(d), "trial " + std::to_string(l.trial->id) + " was evaluated by " +
                                                   worker_name(info(in->source)));
        }
      } else {
        protocol_error(comm_, *in, "a Turn, TurnDone or Done");
      }
      for (const int r : node.grant()) send_empty(comm_, r, kGranted);
    }
    dismiss_workers();
  } catch (const std::exception& e) {
    abort_job(describe_error(e).code, describe_error(e).line);
  }
  if (!failures.empty()) {
    // The failure of the best leader is the error, whichever worker was quicker to fail.
    std::sort(failures.begin(), failures.end(), [](const auto& a, const auto& b) { return a.first.index < b.first.index; });
    for (std::size_t i = 1; i < failures.size(); ++i)
      std::fprintf(stderr, "ranktune eval: also failed: %s\n(%s)\n", failures[i].first.error.c_str(),
                   failures[i].second.c_str());
    std::string skipped;
    for (std::size_t i = next; i < leaders.size(); ++i)
      skipped += (skipped.empty() ? "" : ", ") + std::to_string(leaders[i].trial->id);
    if (!skipped.empty())
      std::fprintf(stderr, "ranktune eval: not evaluated after the failure: trial%s %s\n",
                   next + 1 < leaders.size() ? "s" : "", skipped.c_str());
    rethrow(failures.front().first, failures.front().second);
  }
  std::vector<eval::LeaderEvaluation> out;
  for (auto& e : done) out.push_back(std::move(*e));
  return out;
}

void EvalFarm::serve(const std::function<FarmWorkerPlan()>& prepare) {
  try {
    std::optional<FarmWorkerPlan> plan;
    std::optional<Done> unprepared;  // what preparing threw, the answer to every assignment
    for (;;) {
      const Incoming in = receive(comm_, 0, kMaxNap);
      if (in.tag == kLeave) break;
      if (in.tag != kAssign) protocol_error(comm_, in, "an Assign or a Leave");
      const Assign a = open_message<Assign>(comm_, in);
      std::optional<WorkerTurns> turns;
      if (exclusive_latency_) turns.emplace(comm_);
      Done d;
      try {
        if (!plan && !unprepared) {
          if (turns) turns->compute();  // reading the file and the config is work on this node too
          try {
            plan = prepare();
          } catch (const std::exception& e) {
            unprepared = failure(0, e);
          }
        }
        if (unprepared) {
          d = *unprepared;
          d.index = a.index;
        } else {
          const eval::Leader* leader = nullptr;
          if (a.index < plan->leaders.size() && plan->leaders[a.index].trial->id == a.trial &&
              plan->leaders[a.index].checkpoint->iteration == a.iteration)
            leader = &plan->leaders[a.index];
          if (leader == nullptr)
            throw std::runtime_error("worker " + std::to_string(world_.rank()) + " did not choose trial " +
                                     std::to_string(a.trial) + " at iteration " + std::to_string(a.iteration) +
                                     " as leader " + std::to_string(a.index + 1) +
                                     " as rank 0 did: did the results file change while the evaluation started?");
          d.evaluation = plan->evaluate(a.index, *leader, turns ? &*turns : nullptr);
          d.evaluation.manifest["worker"] = {{"rank", world_.rank()},
                                             {"host", placement_.host},
                                             {"device", placement_.device},
                                             {"device_name", placement_.device_name},
                                             {"exclusive_latency", exclusive_latency_}};
          d.index = a.index;
          d.ok = true;
        }
      } catch (const MpiError&) {
        throw;
      } catch (const std::exception& e) {
        d = failure(a.index, e);
      }
      turns.reset();  // gives back what it holds before the Done
      send_message(comm_, 0, kDone, d);
    }
    plan.reset();  // the file and what the plan holds, closed before rank 0 records
    send_empty(comm_, 0, kBye);
  } catch (const std::exception& e) {
    abort_job(describe_error(e).code, describe_error(e).line);
  }
}

}  // namespace ranktune::mpi
