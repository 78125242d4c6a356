#include "io/evaluations.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "io/store.h"
#include "io/store_detail.h"

namespace ranktune::io {
namespace {

namespace fs = std::filesystem;

constexpr const char* kGroup = "evaluations";
constexpr const char* kRuns = "runs";
constexpr const char* kMetrics = "metrics";
constexpr const char* kLatency = "latency";
// The manifests' JSON texts back to back; each run row says where its own is. A table of
// bytes, not an attribute per evaluation: appending rows is all an SWMR writer may do.
constexpr const char* kManifests = "manifests";
constexpr std::size_t kCreatedLen = 32;
constexpr hsize_t kChunkRows = 256;
constexpr hsize_t kManifestChunk = 16 * 1024;

// The rows as C structs: the compound types below name every member, so HDF5 converts by
// name and h5py sees the same columns.
struct RunRec {
  std::int64_t eval_id;
  char created[kCreatedLen];
  char split[kEvalSplitLen];
  char device[kEvalDeviceLen];
  std::int64_t threads;
  std::int64_t trials;
  std::int64_t manifest_offset;
  std::int64_t manifest_size;
};

struct MetricRec {
  std::int64_t eval_id;
  std::int64_t trial_id;
  std::int64_t iteration;
  char metric[kEvalMetricLen];
  double value;
};

struct LatencyRec {
  std::int64_t eval_id;
  std::int64_t trial_id;
  std::int64_t iteration;
  std::int64_t batch_size;
  std::int64_t batches;
  double mean_ms, p50_ms, p90_ms, p99_ms, max_ms, samples_per_s;
};

void insert(hid_t type, const char* name, std::size_t offset, hid_t member) {
  H5_CHECK(H5Tinsert(type, name, offset, member));
}

void insert_string(hid_t type, const char* name, std::size_t offset, std::size_t size) {
  const h5::Datatype s = h5::string_type(size);
  insert(type, name, offset, s.get());
}

#define RT_I64(T, m) insert(t.get(), #m, offsetof(T, m), H5T_NATIVE_INT64)
#define RT_F64(T, m) insert(t.get(), #m, offsetof(T, m), H5T_NATIVE_DOUBLE)
#define RT_STR(T, m) insert_string(t.get(), #m, offsetof(T, m), sizeof(T::m))

h5::Datatype run_type() {
  h5::Datatype t{H5_CHECK(H5Tcreate(H5T_COMPOUND, sizeof(RunRec)))};
  RT_I64(RunRec, eval_id);
  RT_STR(RunRec, created);
  RT_STR(RunRec, split);
  RT_STR(RunRec, device);
  RT_I64(RunRec, threads);
  RT_I64(RunRec, trials);
  RT_I64(RunRec, manifest_offset);
  RT_I64(RunRec, manifest_size);
  return t;
}

h5::Datatype metric_type() {
  h5::Datatype t{H5_CHECK(H5Tcreate(H5T_COMPOUND, sizeof(MetricRec)))};
  RT_I64(MetricRec, eval_id);
  RT_I64(MetricRec, trial_id);
  RT_I64(MetricRec, iteration);
  RT_STR(MetricRec, metric);
  RT_F64(MetricRec, value);
  return t;
}

h5::Datatype latency_type() {
  h5::Datatype t{H5_CHECK(H5Tcreate(H5T_COMPOUND, sizeof(LatencyRec)))};
  RT_I64(LatencyRec, eval_id);
  RT_I64(LatencyRec, trial_id);
  RT_I64(LatencyRec, iteration);
  RT_I64(LatencyRec, batch_size);
  RT_I64(LatencyRec, batches);
  RT_F64(LatencyRec, mean_ms);
  RT_F64(LatencyRec, p50_ms);
  RT_F64(LatencyRec, p90_ms);
  RT_F64(LatencyRec, p99_ms);
  RT_F64(LatencyRec, max_ms);
  RT_F64(LatencyRec, samples_per_s);
  return t;
}

#undef RT_I64
#undef RT_F64
#undef RT_STR

void create_table(hid_t group, const char* name, hid_t type, hsize_t chunk) {
  const hsize_t dims = 0, max = H5S_UNLIMITED;
  h5::Dataspace space{H5_CHECK(H5Screate_simple(1, &dims, &max))};
  h5::PropList dcpl{H5_CHECK(H5Pcreate(H5P_DATASET_CREATE))};
  H5_CHECK(H5Pset_chunk(dcpl.get(), 1, &chunk));
  h5::Dataset ds{H5_CHECK(H5Dcreate2(group, name, type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT))};
}

hsize_t extent(hid_t ds) {
  h5::Dataspace space{H5_CHECK(H5Dget_space(ds))};
  if (H5_CHECK(H5Sget_simple_extent_ndims(space.get())) != 1) throw StoreError("is not a one-dimensional table");
  hsize_t n = 0;
  H5_CHECK(H5Sget_simple_extent_dims(space.get(), &n, nullptr));
  return n;
}

// Appends `count` elements of `mem_type` from `data` at the end of the 1-D dataset.
void append(hid_t ds, hid_t mem_type, const void* data, hsize_t count) {
  if (count == 0) return;
  const hsize_t at = extent(ds), total = at + count;
  H5_CHECK(H5Dset_extent(ds, &total));
  h5::Dataspace file_space{H5_CHECK(H5Dget_space(ds))};
  H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &at, nullptr, &count, nullptr));
  h5::Dataspace mem_space{H5_CHECK(H5Screate_simple(1, &count, nullptr))};
  H5_CHECK(H5Dwrite(ds, mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, data));
}

// Reads a whole table as `Rec`s. `max_rows` bounds what a damaged extent could make us
// allocate (no row takes less than one byte of the file).
template <class Rec>
std::vector<Rec> read_rows(hid_t group, const char* name, hid_t mem_type, std::uintmax_t max_rows) {
  h5::Dataset ds{H5_CHECK(H5Dopen2(group, name, H5P_DEFAULT))};
  h5::Datatype file_type{H5_CHECK(H5Dget_type(ds.get()))};
  if (H5Tget_class(file_type.get()) != H5T_COMPOUND) throw StoreError(std::string(name) + " is not a table");
  const hsize_t n = extent(ds.get());
  if (n > max_rows) throw StoreError(std::string(name) + " claims more rows than the file can hold");
  std::vector<Rec> rows(n);
  if (n > 0) H5_CHECK(H5Dread(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()));
  return rows;
}

template <std::size_t N>
void put(char (&field)[N], const std::string& s) {
  std::memset(field, 0, N);
  std::memcpy(field, s.data(), std::min(s.size(), N));
}

template <std::size_t N>
std::string get(const char (&field)[N]) {
  return std::string(field, strnlen(field, N));
}

}  // namespace

std::int64_t append_evaluation(const std::string& path, Evaluation ev) {
  h5::quiet();
  if (!is_hdf5_file(path)) throw StoreError(path + ": not an HDF5 results file");
  return detail::with_context(path + ": evaluations: ", [&] {
    // The writer's lock: a run cannot be writing the file, nor start on it, until we are done.
    const detail::WriterLock lock(path);
    if (const auto flags = detail::superblock_flags(path); flags && *flags != 0) {
      // Its writer was killed (we hold the lock, so it is not running): mend it as a resume would.
      if (const std::string why = detail::mend_status_flags(path); !why.empty())
        throw StoreError("its writer was killed and mending the file failed (" + why +
                         "); resume the run (`ranktune run --resume`), then evaluate");
    }
    h5::PropList fapl{H5_CHECK(H5Pcreate(H5P_FILE_ACCESS))};
    H5_CHECK(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST));
    {
      // Created once, in a short non-SWMR open: objects cannot be created during SWMR.
      h5::File file{H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.get())};
      if (!file) throw StoreError("cannot open it for writing: " + h5::last_error());
      if (H5_CHECK(H5Lexists(file.get(), kGroup, H5P_DEFAULT)) == 0) {
        h5::Group g{H5_CHECK(H5Gcreate2(file.get(), kGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT))};
        create_table(g.get(), kRuns, run_type().get(), 64);
        create_table(g.get(), kMetrics, metric_type().get(), kChunkRows);
        create_table(g.get(), kLatency, latency_type().get(), kChunkRows);
        create_table(g.get(), kManifests, H5T_NATIVE_UINT8, kManifestChunk);
        H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
      }
    }
    // The rows go in as an SWMR writer's appends, which keep the file readable (and
    // recoverable by a resume's mend) if we are killed half way. The run row comes last:
    // rows of an evaluation without one are never read.
    h5::File file{H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.get())};
    if (!file) throw StoreError("cannot open it for writing: " + h5::last_error());
    H5_CHECK(H5Fstart_swmr_write(file.get()));
    detail::require_checksummed(file.get(), kGroup);
    h5::Group g{H5_CHECK(H5Gopen2(file.get(), kGroup, H5P_DEFAULT))};
    for (const char* table : {kRuns, kMetrics, kLatency, kManifests}) detail::require_checksummed(g.get(), table);
    h5::Dataset runs{H5_CHECK(H5Dopen2(g.get(), kRuns, H5P_DEFAULT))};
    h5::Dataset metrics{H5_CHECK(H5Dopen2(g.get(), kMetrics, H5P_DEFAULT))};
    h5::Dataset latency{H5_CHECK(H5Dopen2(g.get(), kLatency, H5P_DEFAULT))};
    h5::Dataset manifests{H5_CHECK(H5Dopen2(g.get(), kManifests, H5P_DEFAULT))};

    // A new id above every id in any table, so that rows an interrupted evaluation left
    // behind never join this one.
    std::error_code ec;
    const std::uintmax_t max_rows = fs::file_size(path, ec);
    const h5::Datatype rt = run_type(), mt = metric_type(), lt = latency_type();
    std::int64_t last = 0;
    for (const auto& r : read_rows<RunRec>(g.get(), kRuns, rt.get(), max_rows)) last = std::max(last, r.eval_id);
    for (const auto& r : read_rows<MetricRec>(g.get(), kMetrics, mt.get(), max_rows)) last = std::max(last, r.eval_id);
    for (const auto& r : read_rows<LatencyRec>(g.get(), kLatency, lt.get(), max_rows)) last = std::max(last, r.eval_id);
    ev.id = last + 1;
    if (ev.created.empty()) ev.created = detail::iso8601_utc_now();

    std::vector<MetricRec> m(ev.metrics.size());
    for (std::size_t i = 0; i < m.size(); ++i) {
      const EvalMetricRow& r = ev.metrics[i];
      m[i] = MetricRec{ev.id, r.trial, r.iteration, {}, r.value};
      put(m[i].metric, r.metric);
    }
    std::vector<LatencyRec> l(ev.latency.size());
    for (std::size_t i = 0; i < l.size(); ++i) {
      const EvalLatencyRow& r = ev.latency[i];
      l[i] = LatencyRec{ev.id,     r.trial,  r.iteration, r.batch_size, r.batches, r.mean_ms,
                        r.p50_ms, r.p90_ms, r.p99_ms,    r.max_ms,     r.samples_per_s};
    }
    RunRec run{};
    run.eval_id = ev.id;
    put(run.created, ev.created);
    put(run.split, ev.split);
    put(run.device, ev.device);
    run.threads = ev.threads;
    run.trials = ev.trials;
    run.manifest_offset = static_cast<std::int64_t>(extent(manifests.get()));
    run.manifest_size = static_cast<std::int64_t>(ev.manifest.size());

    append(manifests.get(), H5T_NATIVE_UINT8, ev.manifest.data(), ev.manifest.size());
    append(metrics.get(), mt.get(), m.data(), m.size());
    append(latency.get(), lt.get(), l.data(), l.size());
    H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
    append(runs.get(), rt.get(), &run, 1);
    H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
    return ev.id;
  });
}

void check_recordable(const std::string& path) {
  h5::quiet();
  if (!is_hdf5_file(path)) throw StoreError(path + ": not an HDF5 results file");
  detail::with_context(path + ": evaluations: ", [&] { const detail::WriterLock lock(path); });
}

std::vector<Evaluation> read_evaluations(const std::string& path) {
  h5::quiet();
  return detail::with_context(path + ": evaluations: ", [&] {
    std::error_code ec;
    const std::uintmax_t size = fs::file_size(path, ec);
    if (ec) throw StoreError("cannot stat it: " + ec.message());
    const h5::File file = detail::open_for_reading(path, size);
    std::vector<Evaluation> out;
    if (H5_CHECK(H5Lexists(file.get(), kGroup, H5P_DEFAULT)) == 0) return out;
    detail::require_checksummed(file.get(), kGroup);
    h5::Group g{H5_CHECK(H5Gopen2(file.get(), kGroup, H5P_DEFAULT))};
    for (const char* table : {kRuns, kMetrics, kLatency, kManifests}) detail::require_checksummed(g.get(), table);
    const auto runs = read_rows<RunRec>(g.get(), kRuns, run_type().get(), size);
    const auto metrics = read_rows<MetricRec>(g.get(), kMetrics, metric_type().get(), size);
    const auto latency = read_rows<LatencyRec>(g.get(), kLatency, latency_type().get(), size);
    h5::Dataset manifests{H5_CHECK(H5Dopen2(g.get(), kManifests, H5P_DEFAULT))};
    const hsize_t manifest_bytes = extent(manifests.get());

    std::map<std::int64_t, std::size_t> index;  // eval_id -> position in out
    for (const RunRec& r : runs) {
      if (index.contains(r.eval_id)) throw StoreError("evaluation " + std::to_string(r.eval_id) + " is recorded twice");
      Evaluation ev;
      ev.id = r.eval_id;
      ev.created = get(r.created);
      ev.split = get(r.split);
      ev.device = get(r.device);
      ev.threads = static_cast<int>(r.threads);
      ev.trials = r.trials;
      if (r.manifest_offset < 0 || r.manifest_size < 0 ||
          static_cast<hsize_t>(r.manifest_offset) + static_cast<hsize_t>(r.manifest_size) > manifest_bytes)
        throw StoreError("evaluation " + std::to_string(r.eval_id) + ": its manifest lies outside /evaluations/manifests");
      ev.manifest.resize(static_cast<std::size_t>(r.manifest_size));
      if (r.manifest_size > 0) {
        const hsize_t at = static_cast<hsize_t>(r.manifest_offset), count = static_cast<hsize_t>(r.manifest_size);
        h5::Dataspace fspace{H5_CHECK(H5Dget_space(manifests.get()))};
        H5_CHECK(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, &at, nullptr, &count, nullptr));
        h5::Dataspace mspace{H5_CHECK(H5Screate_simple(1, &count, nullptr))};
        H5_CHECK(H5Dread(manifests.get(), H5T_NATIVE_UINT8, mspace.get(), fspace.get(), H5P_DEFAULT, ev.manifest.data()));
      }
      index[ev.id] = out.size();
      out.push_back(std::move(ev));
    }
    // Rows of an evaluation without a run row (one that was interrupted) are left out.
    for (const MetricRec& r : metrics)
      if (auto it = index.find(r.eval_id); it != index.end())
        out[it->second].metrics.push_back({r.trial_id, r.iteration, get(r.metric), r.value});
    for (const LatencyRec& r : latency)
      if (auto it = index.find(r.eval_id); it != index.end())
        out[it->second].latency.push_back({r.trial_id, r.iteration, r.batch_size, r.batches, r.mean_ms, r.p50_ms,
                                           r.p90_ms, r.p99_ms, r.max_ms, r.samples_per_s});
    return out;
  });
}

}  // namespace ranktune::io
