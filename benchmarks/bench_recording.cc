// bench_recording: how many results per second rank 0 can record into the results file.
//
// Three measurements, in one process (MPI singleton init: no mpirun needed):
//   1. "driver path": a real controller::Controller (random searcher, fifo scheduler, max_t so
//      large that trials never end) observed by experiment::Recorder, the exact observer the
//      driver uses, writing into a real io::ResultsWriter. Results are fed round-robin to
//      the running trials and the writer is flushed the way mpi/driver.cc's run() loop
//      does it: after each drain of the message queue, when recorder.take_lifecycle() says
//      a lifecycle change happened or flush_interval_ms of wall time has passed.
//   2. "bare HDF5": the floor for the same rows: a hand-written append loop of the same
//      packed compound layout into a chunked extendible dataset, with the same file
//      settings as io/results_writer.cc (libver latest, chunks of 1024 rows, SWMR writing), the same
//      batch size as method 1 produced, and H5Fflush after each batch.
//   3. "wire": the cost per Result message of mpi/wire.h's Boost.MPI packed archives, and
//      of a full send-to-self + matched receive + unpack through Open MPI.
// Each repetition runs 1 and 2 back to back so both see the same machine load; the
// figures printed are medians over the repetitions. Files go to a temporary folder that is
// removed at exit.

#include <hdf5.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>

#include "io/store.h"
#include "experiment/recorder.h"
#include "mpi/codec.h"
#include "mpi/wire.h"
#include "controller/controller.h"
#include "search/scheduler.h"
#include "search/searcher.h"

namespace {

namespace fs = std::filesystem;
using namespace ranktune;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Options {
  std::int64_t results = 1'000'000;  // per repetition and method
  int reps = 5;
  int trials = 8;                    // running trials = workers
  int drain = 8;                     // results handled per driver loop iteration
  double flush_ms = 200;             // the config default of flush_interval_ms
  std::int64_t wire_messages = 1'000'000;
  std::string dir;                   // parent of the temporary folder
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "bench_recording: %s\n"
               "usage: bench_recording [--quick] [--results N] [--reps R] [--trials T] [--drain D]\n"
               "                       [--flush-ms MS] [--wire N] [--dir PATH]\n",
               why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + std::string(a)).c_str());
      return argv[++i];
    };
    try {
      if (a == "--quick") {
        o.results = 20'000;
        o.reps = 1;
        o.wire_messages = 20'000;
      } else if (a == "--results") {
        o.results = std::stoll(value());
      } else if (a == "--reps") {
        o.reps = std::stoi(value());
      } else if (a == "--trials") {
        o.trials = std::stoi(value());
      } else if (a == "--drain") {
        o.drain = std::stoi(value());
      } else if (a == "--flush-ms") {
        o.flush_ms = std::stod(value());
      } else if (a == "--wire") {
        o.wire_messages = std::stoll(value());
      } else if (a == "--dir") {
        o.dir = value();
      } else {
        usage(("unknown option " + std::string(a)).c_str());
      }
    } catch (const std::logic_error&) {  // stoi/stod: not a number or out of range
      usage(("bad value for " + std::string(a)).c_str());
    }
  }
  if (o.results < 1 || o.reps < 1 || o.trials < 1 || o.drain < 1 || o.flush_ms <= 0 ||
      o.wire_messages < 1)
    usage("every count must be >= 1 and --flush-ms > 0");
  return o;
}

// A temporary folder removed (with everything in it) when the benchmark ends, even on an
// exception, so a failed run leaves no 100 MB files behind.
class TempDir {
 public:
  explicit TempDir(const std::string& parent) {
    std::string pattern =
        ((parent.empty() ? fs::temp_directory_path() : fs::path(parent)) / "ranktune-bench-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern + " failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Closes an HDF5 id on scope exit. The bare loop uses the C API directly on purpose: it is
// the floor that owes nothing to io/.
class Hid {
 public:
  Hid(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {
    if (id_ < 0) throw std::runtime_error("HDF5 call failed");
  }
  ~Hid() { close_(id_); }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  hid_t get() const { return id_; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

void check(herr_t status, const char* what) {
  if (status < 0) throw std::runtime_error(std::string(what) + " failed");
}

hsize_t results_rows(const fs::path& file) {
  Hid f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  Hid ds(H5Dopen2(f.get(), "results", H5P_DEFAULT), H5Dclose);
  Hid space(H5Dget_space(ds.get()), H5Sclose);
  hsize_t rows = 0;
  check(H5Sget_simple_extent_dims(space.get(), &rows, nullptr), "H5Sget_simple_extent_dims");
  return rows;
}

const std::vector<std::string> kMetrics = {"loss", "objective"};

// ---------------------------------------------------------------- 1. the driver path

struct DriverRun {
  double seconds = 0;
  std::int64_t flushes = 0;
  std::int64_t lifecycle_flushes = 0;  // flushes that take_lifecycle() asked for
  std::int64_t continues = 0;          // lease renewals sent
};

search::Space bench_space() {
  search::Space space;
  space.params.push_back({"x1", search::Domain{search::DomainKind::Uniform, -5.0, 5.0, 0.0, {}}});
  return space;
}

std::unique_ptr<io::ResultsWriter> bench_writer(const Options& o, const fs::path& file) {
  io::StoreMeta meta;
  meta.experiment = "bench_recording";
  meta.metric = "loss";
  meta.mode = search::Mode::Min;
  meta.config_text = "# bench_recording: synthetic controller feed\n";
  std::vector<io::WorkerInfo> workers;
  for (int w = 1; w <= o.trials; ++w) workers.push_back({w, "localhost", w - 1, "cpu", "bench"});
  return std::make_unique<io::ResultsWriter>(file.string(), meta,
                                             io::StoreSchema::from(bench_space(), kMetrics), workers);
}

DriverRun run_driver_path(const Options& o, const fs::path& file) {
  const search::Space space = bench_space();
  const auto writer_owner = bench_writer(o, file);
  io::ResultsWriter& writer = *writer_owner;
  experiment::Recorder recorder(writer, kMetrics);

  controller::ControllerOptions copts;
  copts.metric = "loss";
  copts.mode = search::Mode::Min;
  copts.max_t = std::numeric_limits<std::int64_t>::max() / 2;  // trials never finish
  copts.continue_every_result = false;  // as mpi/driver.cc: answer only the end of a lease
  controller::Controller controller(
      copts, search::make_searcher("random", space, {1, o.trials}),
      search::make_scheduler("fifo", {copts.metric, copts.mode, copts.max_t}), &recorder);

  const auto start = Clock::now();
  auto now = [&] { return seconds_since(start); };

  struct Running {
    search::TrialId trial;
    int attempt;
  };
  std::vector<Running> running;
  for (int w = 1; w <= o.trials; ++w)
    for (const auto& c : controller.on_worker_free(w, now()))
      if (c.kind == controller::Instruction::Kind::Start) running.push_back({c.trial, c.attempt});
  if (static_cast<int>(running.size()) != o.trials) throw std::runtime_error("controller started too few trials");
  recorder.flush(controller.trials());  // the starts are lifecycle changes; keep them out of the timed loop
  (void)recorder.take_lifecycle();

  // One Metrics reused for every result, its values set in place: building it is the wire
  // decoder's job, measured in 3.
  search::Metrics metrics{{"loss", 0.0}, {"objective", 0.0}};
  double& loss = metrics["loss"];
  double& objective = metrics["objective"];
  std::vector<controller::Instruction> commands;  // reused, as driver.cc does
  DriverRun run;
  const auto t0 = Clock::now();
  double last_flush = now();
  std::int64_t fed = 0;
  std::size_t next = 0;
  while (fed < o.results) {
    // One iteration of driver.cc's run(): a drain of up to `drain` messages, then the
    // flush rule. With `trials` workers each blocked on its decision, at most `trials`
    // results can be waiting, so drain = trials is the largest batch the driver ever sees.
    const double drain_time = now();  // one timestamp per drain, as in driver.cc
    for (int i = 0; i < o.drain && fed < o.results; ++i, ++fed) {
      const Running& r = running[next];
      next = (next + 1) % running.size();
      loss = 1.0 / static_cast<double>(fed + 1);
      objective = static_cast<double>(fed);
      commands.clear();
      controller.on_result(r.trial, r.attempt, metrics, drain_time, commands);
      // FIFO decides nothing: the only answer is the Continue that renews a lease.
      if (commands.size() > 1 || (commands.size() == 1 && commands.front().kind != controller::Instruction::Kind::Continue))
        throw std::runtime_error("expected at most one Continue per result");
      run.continues += static_cast<std::int64_t>(commands.size());
    }
    const double t = now();
    const bool lifecycle = recorder.take_lifecycle();
    if (lifecycle || (t - last_flush) * 1e3 >= o.flush_ms) {
      recorder.flush(controller.trials());
      last_flush = t;
      ++run.flushes;
      run.lifecycle_flushes += lifecycle;
    }
  }
  recorder.flush(controller.trials());
  ++run.flushes;
  run.seconds = seconds_since(t0);
  // Each trial's lease is renewed once per max_lease (64) results: a controller that
  // answered every result, or none, would be wrong.
  const std::int64_t expected = o.results / 64;
  if (run.continues < expected - o.trials || run.continues > expected + o.trials)
    throw std::runtime_error("driver path: " + std::to_string(run.continues) + " lease renewals for " +
                             std::to_string(o.results) + " results, expected about " + std::to_string(expected));

  if (results_rows(file) != static_cast<hsize_t>(o.results))
    throw std::runtime_error("driver path: /results does not hold every result");
  return run;
}

// ------------------------------------------------------- 1b. the store alone (no controller)

// ranktune's HDF5 layer on its own: ResultsWriter::append_result and flush() at the batch
// size the driver path committed. Against the bare loop this isolates the store's cost from
// the controller's bookkeeping.
double run_store_path(const Options& o, const fs::path& file, std::int64_t batch) {
  const auto writer = bench_writer(o, file);
  search::Metrics metrics{{"loss", 0.0}, {"objective", 0.0}};
  double& loss = metrics["loss"];
  double& objective = metrics["objective"];
  const auto t0 = Clock::now();
  for (std::int64_t fed = 0; fed < o.results; ++fed) {
    loss = 1.0 / static_cast<double>(fed + 1);
    objective = static_cast<double>(fed);
    writer->append_result(fed % o.trials + 1, 0, fed / o.trials + 1, 0.0, metrics);
    if ((fed + 1) % batch == 0) writer->flush();
  }
  writer->flush();
  const double seconds = seconds_since(t0);
  if (results_rows(file) != static_cast<hsize_t>(o.results))
    throw std::runtime_error("store path: /results does not hold every result");
  return seconds;
}

// ---------------------------------------------------------------- 2. the bare HDF5 loop

// The /results row as io/h5_table.cc packs it (io/schema.h): no padding, 44 bytes.
constexpr std::size_t kOffTrial = 0, kOffAttempt = 8, kOffIteration = 12, kOffTime = 20,
                      kOffLoss = 28, kOffObjective = 36, kRowSize = 44;

double run_bare_hdf5(const Options& o, const fs::path& file, std::int64_t batch) {
  Hid fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST), "H5Pset_libver_bounds");
  Hid f(H5Fcreate(file.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()), H5Fclose);

  Hid type(H5Tcreate(H5T_COMPOUND, kRowSize), H5Tclose);
  check(H5Tinsert(type.get(), "trial_id", kOffTrial, H5T_NATIVE_INT64), "H5Tinsert");
  check(H5Tinsert(type.get(), "attempt", kOffAttempt, H5T_NATIVE_INT32), "H5Tinsert");
  check(H5Tinsert(type.get(), "iteration", kOffIteration, H5T_NATIVE_INT64), "H5Tinsert");
  check(H5Tinsert(type.get(), "time", kOffTime, H5T_NATIVE_DOUBLE), "H5Tinsert");
  check(H5Tinsert(type.get(), "loss", kOffLoss, H5T_NATIVE_DOUBLE), "H5Tinsert");
  check(H5Tinsert(type.get(), "objective", kOffObjective, H5T_NATIVE_DOUBLE), "H5Tinsert");

  hsize_t zero = 0, unlimited = H5S_UNLIMITED, chunk = 1024;  // store.cc's /results chunk
  Hid space0(H5Screate_simple(1, &zero, &unlimited), H5Sclose);
  Hid dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  check(H5Pset_chunk(dcpl.get(), 1, &chunk), "H5Pset_chunk");
  Hid ds(H5Dcreate2(f.get(), "results", type.get(), space0.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
         H5Dclose);
  check(H5Fstart_swmr_write(f.get()), "H5Fstart_swmr_write");

  std::vector<std::byte> buffer;
  buffer.reserve(static_cast<std::size_t>(batch) * kRowSize);
  const auto t0 = Clock::now();
  hsize_t rows = 0;
  for (std::int64_t fed = 0; fed < o.results;) {
    const std::int64_t n = std::min(batch, o.results - fed);
    buffer.resize(static_cast<std::size_t>(n) * kRowSize);
    for (std::int64_t i = 0; i < n; ++i, ++fed) {
      std::byte* row = buffer.data() + i * kRowSize;
      const std::int64_t trial = fed % o.trials + 1, iteration = fed / o.trials + 1;
      const std::int32_t attempt = 0;
      const double time = seconds_since(t0), loss = 1.0 / static_cast<double>(fed + 1),
                   objective = static_cast<double>(fed);
      std::memcpy(row + kOffTrial, &trial, 8);
      std::memcpy(row + kOffAttempt, &attempt, 4);
      std::memcpy(row + kOffIteration, &iteration, 8);
      std::memcpy(row + kOffTime, &time, 8);
      std::memcpy(row + kOffLoss, &loss, 8);
      std::memcpy(row + kOffObjective, &objective, 8);
    }
    hsize_t first = rows, count = static_cast<hsize_t>(n);
    rows += count;
    check(H5Dset_extent(ds.get(), &rows), "H5Dset_extent");
    Hid file_space(H5Dget_space(ds.get()), H5Sclose);
    check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &first, nullptr, &count, nullptr),
          "H5Sselect_hyperslab");
    Hid mem_space(H5Screate_simple(1, &count, nullptr), H5Sclose);
    check(H5Dwrite(ds.get(), type.get(), mem_space.get(), file_space.get(), H5P_DEFAULT, buffer.data()),
          "H5Dwrite");
    check(H5Fflush(f.get(), H5F_SCOPE_GLOBAL), "H5Fflush");
  }
  return seconds_since(t0);
}

// ---------------------------------------------------------------- 3. the wire

struct WireCost {
  double result_ns = 0;     // pack + unpack of one Result, as wire.cc does it
  double decision_ns = 0;   // pack + unpack of the Decision that answers it
  double self_send_ns = 0;  // mpi::send to self + mpi::try_receive + mpi::unpack<Result>
};

// The same encoding as wire.cc's send() (mpi/codec.h), minus MPI_Send.
template <class T>
mpi::Incoming pack(const boost::mpi::communicator&, const T& msg) {
  mpi::Incoming in;
  mpi::encode(msg, in.bytes);
  return in;
}

WireCost run_wire(const Options& o, const boost::mpi::communicator& world) {
  WireCost cost;
  const std::int64_t n = o.wire_messages;
  double sink = 0;  // keeps the decoded values alive so nothing is optimised away

  auto t0 = Clock::now();
  for (std::int64_t i = 0; i < n; ++i) {
    mpi::Result r{i % o.trials + 1, 0, i + 1, {{"loss", 1.0 / static_cast<double>(i + 1)}, {"objective", 0.5}}};
    const auto back = mpi::unpack<mpi::Result>(world, pack(world, r));
    sink += back.metrics.at("loss");
  }
  cost.result_ns = seconds_since(t0) * 1e9 / static_cast<double>(n);

  t0 = Clock::now();
  for (std::int64_t i = 0; i < n; ++i) {
    const auto back =
        mpi::unpack<mpi::Decision>(world, pack(world, mpi::Decision{i, 0, mpi::Decision::Continue}));
    sink += static_cast<double>(back.trial);
  }
  cost.decision_ns = seconds_since(t0) * 1e9 / static_cast<double>(n);

  // Through Open MPI's self transport: small messages go eagerly, so a blocking send to
  // ourselves returns before the receive.
  t0 = Clock::now();
  for (std::int64_t i = 0; i < n; ++i) {
    mpi::send(world, world.rank(), mpi::kTagResult,
              mpi::Result{i % o.trials + 1, 0, i + 1, {{"loss", 1.0}, {"objective", 0.5}}});
    auto in = mpi::try_receive(world, world.rank());
    if (!in) throw std::runtime_error("self-send: message not delivered");
    sink += mpi::unpack<mpi::Result>(world, *in).metrics.at("objective");
  }
  cost.self_send_ns = seconds_since(t0) * 1e9 / static_cast<double>(n);
  if (sink == -1) std::puts("");  // never true; uses sink
  return cost;
}

int run(const Options& o, const boost::mpi::communicator& world) {
  TempDir tmp(o.dir);
  std::printf("bench_recording: %" PRId64 " results x %d reps per method, %d running trials, "
              "2 metrics, drain %d results per loop, flush_interval_ms %.0f\n",
              o.results, o.reps, o.trials, o.drain, o.flush_ms);

  std::vector<double> driver_rate, store_rate, bare_rate, batch_sizes;
  std::int64_t lifecycle_flushes = 0, flushes = 0;
  for (int rep = 0; rep < o.reps; ++rep) {
    const fs::path a = tmp.path() / ("driver_" + std::to_string(rep) + ".h5");
    const fs::path b = tmp.path() / ("bare_" + std::to_string(rep) + ".h5");
    const fs::path c = tmp.path() / ("store_" + std::to_string(rep) + ".h5");

    const DriverRun d = run_driver_path(o, a);
    fs::remove(a);
    // The bare loop writes batches of the size the driver path actually committed.
    const std::int64_t batch =
        std::max<std::int64_t>(1, std::llround(static_cast<double>(o.results) / static_cast<double>(d.flushes)));
    const double bare = run_bare_hdf5(o, b, batch);
    fs::remove(b);
    const double store = run_store_path(o, c, batch);
    fs::remove(c);

    driver_rate.push_back(static_cast<double>(o.results) / d.seconds);
    bare_rate.push_back(static_cast<double>(o.results) / bare);
    store_rate.push_back(static_cast<double>(o.results) / store);
    batch_sizes.push_back(static_cast<double>(batch));
    flushes += d.flushes;
    lifecycle_flushes += d.lifecycle_flushes;
    std::printf("  rep %d: driver path %.0f results/s (%" PRId64 " flushes), bare HDF5 %.0f results/s "
                "(batch %" PRId64 "), store alone %.0f results/s\n",
                rep + 1, driver_rate.back(), d.flushes, bare_rate.back(), batch, store_rate.back());
    std::fflush(stdout);
  }

  const WireCost wire = run_wire(o, world);
  const double driver = median(driver_rate), bare = median(bare_rate), store = median(store_rate);
  const double per_result_s = 1.0 / driver + wire.self_send_ns * 1e-9 + wire.decision_ns * 1e-9;

  std::printf("\nmedians over %d reps\n", o.reps);
  std::printf("%-52s %14s\n", "method", "results/s");
  std::printf("%-52s %14.0f\n", "driver path (Controller+Recorder+ResultsWriter)", driver);
  std::printf("%-52s %14.0f\n", ("bare HDF5 append, batch " + std::to_string(static_cast<long long>(median(batch_sizes))) +
                                 " rows + H5Fflush").c_str(), bare);
  std::printf("%-52s %14.2f   (target >= 0.5)\n", "ratio driver path / bare", driver / bare);
  // Each repetition runs both methods back to back, so its own ratio pairs them under the
  // same machine state; the median of those is steadier than the ratio of medians when the
  // machine's speed changes between repetitions.
  std::vector<double> paired;
  for (std::size_t i = 0; i < driver_rate.size(); ++i) paired.push_back(driver_rate[i] / bare_rate[i]);
  std::printf("%-52s %14.2f   (target >= 0.5)\n", "median of the per-repetition ratios", median(paired));
  std::printf("%-52s %14s   (target >= 100000)\n", "driver path vs target",
              driver >= 100'000 ? "met" : "MISSED");
  std::printf("%-52s %14.1f%%\n", "flushes asked for by take_lifecycle()",
              100.0 * static_cast<double>(lifecycle_flushes) / static_cast<double>(flushes));
  std::printf("%-52s %14.0f\n", "store alone (ResultsWriter, same batches)", store);
  std::printf("%-52s %14.2f\n", "ratio store alone / bare", store / bare);
  std::printf("\nwire, %" PRId64 " messages each\n", o.wire_messages);
  std::printf("%-52s %11.0f ns\n", "Result pack + unpack", wire.result_ns);
  std::printf("%-52s %11.0f ns\n", "Decision pack + unpack", wire.decision_ns);
  std::printf("%-52s %11.0f ns\n", "Result send-to-self + try_receive + unpack", wire.self_send_ns);
  std::printf("%-52s %14.0f\n", "driver CPU bound (path + self-send + Decision) results/s",
              1.0 / per_result_s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  try {
    // Singleton MPI_Init (no mpirun): the packed archives and the self-send need MPI.
    boost::mpi::environment env(argc, argv);
    boost::mpi::communicator world;
    return run(options, world);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_recording: %s\n", e.what());
    return 1;
  }
}
