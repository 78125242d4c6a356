// Held-out evaluations in a results file: creating the /evaluations tables, appending a run,
// and reading them back (io/evaluations.h: the layout), through io/h5_table.h.
#include "io/evaluations.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "io/h5_table.h"
#include "io/store.h"
#include "io/store_detail.h"

namespace ranktune::io {
namespace {

namespace fs = std::filesystem;
using detail::get_f64;
using detail::get_int;
using detail::get_str;
using detail::Kind;

constexpr const char* kGroup = "evaluations";
constexpr const char* kRuns = "runs";
constexpr const char* kMetrics = "metrics";
constexpr const char* kLatency = "latency";
// Added after the first tables: a file from before them lacks them (read as not measured).
constexpr const char* kLatencySplit = "latency_split";
constexpr const char* kTrace = "trace";
constexpr const char* kConfusion = "confusion";
// The manifests' JSON texts back to back; each run row says where its own is. A table of
// bytes, not an attribute per evaluation: appending rows is all an SWMR writer may do.
constexpr const char* kManifests = "manifests";
constexpr std::size_t kCreatedLen = 32;
constexpr hsize_t kChunkRows = 256;
constexpr hsize_t kManifestChunk = 16 * 1024;

// Column order of each table as documented in evaluations.h; the enums index into them.
constexpr detail::FixedColumn kRunColumns[] = {
    {"eval_id", Kind::I64}, {"created", Kind::Str, kCreatedLen},  {"split", Kind::Str, kEvalSplitLen},
    {"device", Kind::Str, kEvalDeviceLen}, {"threads", Kind::I64}, {"trials", Kind::I64},
    {"manifest_offset", Kind::I64}, {"manifest_size", Kind::I64}};
enum RunCol { kRunId, kRunCreated, kRunSplit, kRunDevice, kRunThreads, kRunTrials, kRunOffset, kRunSize };

constexpr detail::FixedColumn kMetricColumns[] = {
    {"eval_id", Kind::I64}, {"trial_id", Kind::I64}, {"iteration", Kind::I64},
    {"metric", Kind::Str, kEvalMetricLen}, {"value", Kind::F64}};
enum MetricCol { kMetId, kMetTrial, kMetIteration, kMetName, kMetValue };

constexpr detail::FixedColumn kLatencyColumns[] = {
    {"eval_id", Kind::I64},  {"trial_id", Kind::I64}, {"iteration", Kind::I64}, {"batch_size", Kind::I64},
    {"batches", Kind::I64},  {"mean_ms", Kind::F64},  {"p50_ms", Kind::F64},    {"p90_ms", Kind::F64},
    {"p99_ms", Kind::F64},   {"max_ms", Kind::F64},   {"samples_per_s", Kind::F64}};
enum LatencyCol { kLatId, kLatTrial, kLatIteration, kLatBatchSize, kLatBatches, kLatMean, kLatP50, kLatP90,
                  kLatP99, kLatMax, kLatRate };

constexpr detail::FixedColumn kSplitColumns[] = {
    {"eval_id", Kind::I64},          {"trial_id", Kind::I64},         {"iteration", Kind::I64},
    {"batch_size", Kind::I64},       {kLatencyPartNames[0], Kind::F64}, {kLatencyPartNames[1], Kind::F64},
    {kLatencyPartNames[2], Kind::F64}, {kLatencyPartNames[3], Kind::F64}, {kLatencyPartNames[4], Kind::F64},
    {kLatencyPartNames[5], Kind::F64}, {kLatencyPartNames[6], Kind::F64}, {kLatencyPartNames[7], Kind::F64},
    {kLatencyPartNames[8], Kind::F64}};
enum SplitCol { kSplitId, kSplitTrial, kSplitIteration, kSplitBatchSize, kSplitFirstPart };

constexpr detail::FixedColumn kTraceColumns[] = {
    {"eval_id", Kind::I64},  {"trial_id", Kind::I64}, {"iteration", Kind::I64},    {"batch_size", Kind::I64},
    {"batch", Kind::I64},    {"start_ms", Kind::F64}, {"total_ms", Kind::F64},     {"pre_ms", Kind::F64},
    {"inference_ms", Kind::F64}, {"post_ms", Kind::F64}};
constexpr detail::FixedColumn kConfusionColumns[] = {
    {"eval_id", Kind::I64},    {"trial_id", Kind::I64},  {"iteration", Kind::I64},
    {"true_label", Kind::I64}, {"predicted", Kind::I64}, {"count", Kind::I64}};
enum ConfusionCol { kConId, kConTrial, kConIteration, kConTrue, kConPredicted, kConCount };

enum TraceCol { kTrId, kTrTrial, kTrIteration, kTrBatchSize, kTrBatch, kTrStart, kTrTotal, kTrPre, kTrInference,
                kTrPost };

constexpr detail::TableSpec kRunTable{kRuns, kRunColumns, 64};
constexpr detail::TableSpec kMetricTable{kMetrics, kMetricColumns, kChunkRows};
constexpr detail::TableSpec kLatencyTable{kLatency, kLatencyColumns, kChunkRows};
constexpr detail::TableSpec kSplitTable{kLatencySplit, kSplitColumns, kChunkRows};
constexpr detail::TableSpec kTraceTable{kTrace, kTraceColumns, 1024};
// Tables that a file from before them may lack.
constexpr detail::TableSpec kConfusionTable{kConfusion, kConfusionColumns, kChunkRows};
constexpr const detail::TableSpec* kLaterTables[] = {&kSplitTable, &kTraceTable, &kConfusionTable};

bool has(hid_t loc, const char* name) { return H5_CHECK(H5Lexists(loc, name, H5P_DEFAULT)) > 0; }

// Reads the table `spec` of /evaluations whole. `max_rows` bounds what a damaged extent
// could make us allocate (no row takes less than one byte of the file).
detail::RawTable read_rows(hid_t group, const detail::TableSpec& spec, std::uintmax_t max_rows) {
  {
    h5::Dataset ds{H5_CHECK(H5Dopen2(group, spec.name, H5P_DEFAULT))};
    if (detail::extent_of(ds.get()) > max_rows)
      throw StoreError(std::string(spec.name) + " claims more rows than the file can hold");
  }
  return detail::read_table(group, spec, max_rows);
}

// The highest eval_id in `t` (0 when empty).
std::int64_t highest_id(const detail::RawTable& t) {
  std::int64_t last = 0;
  for (std::size_t i = 0; i < t.rows; ++i) last = std::max(last, get_int(t.row(i), t.layout[0]));
  return last;
}

}  // namespace

std::int64_t append_evaluation(const std::string& path, Evaluation ev) {
  const h5::Quiet quiet;
  if (!is_hdf5_file(path)) throw StoreError(path + ": not an HDF5 results file");
  return detail::with_context(path + ": evaluations: ", [&] {
    // The writer's lock: a run cannot be writing the file, nor start on it, until we are done.
    // Its open refuses a file that is not ours, or that others may change (UnsafeFileError).
    const detail::WriterLock lock(path);
    lock.refuse_readers();  // before mending too: h5clear is an HDF5 writer
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
      lock.same_file(file.get());
      if (H5_CHECK(H5Lexists(file.get(), kGroup, H5P_DEFAULT)) == 0) {
        h5::Group g{H5_CHECK(H5Gcreate2(file.get(), kGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT))};
        for (const detail::TableSpec* spec : {&kRunTable, &kMetricTable, &kLatencyTable})
          detail::Table().create(g.get(), *spec, detail::fixed_layout(*spec));
        detail::create_byte_dataset(g.get(), kManifests, kManifestChunk);
        H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
      }
      // The tables added later, in a file whose /evaluations an older ranktune made too.
      h5::Group g{H5_CHECK(H5Gopen2(file.get(), kGroup, H5P_DEFAULT))};
      bool created = false;
      for (const detail::TableSpec* spec : kLaterTables)
        if (!has(g.get(), spec->name)) {
          detail::Table().create(g.get(), *spec, detail::fixed_layout(*spec));
          created = true;
        }
      if (created) H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
    }
    // The rows go in as an SWMR writer's appends, which keep the file readable (and
    // recoverable by a resume's mend) if we are killed half way. The run row comes last:
    // rows of an evaluation without one are never read.
    h5::File file{H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.get())};
    if (!file) throw StoreError("cannot open it for writing: " + h5::last_error());
    lock.same_file(file.get());
    H5_CHECK(H5Fstart_swmr_write(file.get()));
    detail::require_checksummed(file.get(), kGroup);
    h5::Group g{H5_CHECK(H5Gopen2(file.get(), kGroup, H5P_DEFAULT))};
    for (const char* table : {kRuns, kMetrics, kLatency, kManifests, kLatencySplit, kTrace, kConfusion})
      detail::require_checksummed(g.get(), table);

    // A new id above every id in any table, so that rows an interrupted evaluation left
    // behind never join this one.
    std::error_code ec;
    const std::uintmax_t max_rows = fs::file_size(path, ec);
    std::int64_t last = 0;
    for (const detail::TableSpec* spec :
         {&kRunTable, &kMetricTable, &kLatencyTable, &kSplitTable, &kTraceTable, &kConfusionTable})
      last = std::max(last, highest_id(read_rows(g.get(), *spec, max_rows)));
    ev.id = last + 1;
    if (ev.created.empty()) ev.created = detail::iso8601_utc_now();

    detail::Table runs, metrics, latency, split, trace, confusion;
    runs.open(g.get(), kRunTable);
    metrics.open(g.get(), kMetricTable);
    latency.open(g.get(), kLatencyTable);
    split.open(g.get(), kSplitTable);
    trace.open(g.get(), kTraceTable);
    confusion.open(g.get(), kConfusionTable);
    h5::Dataset manifests{H5_CHECK(H5Dopen2(g.get(), kManifests, H5P_DEFAULT))};
    // Fields in column order (kMetricColumns, kLatencyColumns, kRunColumns).
    for (const EvalMetricRow& r : ev.metrics)
      detail::put_row(metrics.add_row(), metrics.layout, {ev.id, r.trial, r.iteration, r.metric, r.value});
    for (const EvalLatencyRow& r : ev.latency)
      detail::put_row(latency.add_row(), latency.layout,
                      {ev.id, r.trial, r.iteration, r.batch_size, r.batches, r.mean_ms, r.p50_ms, r.p90_ms, r.p99_ms,
                       r.max_ms, r.samples_per_s});
    for (const EvalLatencyRow& r : ev.latency) {
      if (!r.has_split()) continue;  // no row: not measured
      std::byte* row = split.add_row();
      detail::put_row(row, split.layout, {ev.id, r.trial, r.iteration, r.batch_size});
      for (std::size_t i = 0; i < std::size(r.parts_ms); ++i)
        detail::put_f64(row, split.layout[kSplitFirstPart + i], r.parts_ms[i]);
    }
    for (const EvalTraceRow& r : ev.trace)
      detail::put_row(trace.add_row(), trace.layout,
                      {ev.id, r.trial, r.iteration, r.batch_size, r.batch, r.start_ms, r.total_ms, r.pre_ms,
                       r.inference_ms, r.post_ms});
    for (const EvalConfusionRow& r : ev.confusion)
      detail::put_row(confusion.add_row(), confusion.layout,
                      {ev.id, r.trial, r.iteration, r.true_label, r.predicted, r.count});
    const hsize_t manifest_at = detail::extent_of(manifests.get());
    detail::put_row(runs.add_row(), runs.layout,
                    {ev.id, ev.created, ev.split, ev.device, std::int64_t{ev.threads}, ev.trials,
                     static_cast<std::int64_t>(manifest_at), static_cast<std::int64_t>(ev.manifest.size())});

    detail::write_bytes(manifests.get(), manifest_at, ev.manifest, manifest_at + ev.manifest.size());
    metrics.append();
    latency.append();
    split.append();
    trace.append();
    confusion.append();
    H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
    runs.append();
    H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
    return ev.id;
  });
}

void check_recordable(const std::string& path) {
  const h5::Quiet quiet;
  if (!is_hdf5_file(path)) throw StoreError(path + ": not an HDF5 results file");
  detail::with_context(path + ": evaluations: ", [&] { detail::WriterLock(path).refuse_readers(); });
}

std::vector<Evaluation> read_evaluations(const std::string& path) {
  const h5::Quiet quiet;
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
    // The later tables, where the file has them; none: nothing of theirs was measured.
    const auto read_later = [&](const detail::TableSpec& spec) {
      if (!has(g.get(), spec.name)) return detail::RawTable{};
      detail::require_checksummed(g.get(), spec.name);
      return read_rows(g.get(), spec, size);
    };
    const detail::RawTable split = read_later(kSplitTable);
    const detail::RawTable trace = read_later(kTraceTable);
    const detail::RawTable confusion = read_later(kConfusionTable);
    const detail::RawTable runs = read_rows(g.get(), kRunTable, size);
    const detail::RawTable metrics = read_rows(g.get(), kMetricTable, size);
    const detail::RawTable latency = read_rows(g.get(), kLatencyTable, size);
    h5::Dataset manifests{H5_CHECK(H5Dopen2(g.get(), kManifests, H5P_DEFAULT))};
    const hsize_t manifest_bytes = detail::extent_of(manifests.get());

    std::map<std::int64_t, std::size_t> index;  // eval_id -> position in out
    for (std::size_t i = 0; i < runs.rows; ++i) {
      const std::byte* row = runs.row(i);
      const detail::Layout& L = runs.layout;
      Evaluation ev;
      ev.id = get_int(row, L[kRunId]);
      if (index.contains(ev.id)) throw StoreError("evaluation " + std::to_string(ev.id) + " is recorded twice");
      ev.created = get_str(row, L[kRunCreated]);
      ev.split = get_str(row, L[kRunSplit]);
      ev.device = get_str(row, L[kRunDevice]);
      ev.threads = static_cast<int>(get_int(row, L[kRunThreads]));
      ev.trials = get_int(row, L[kRunTrials]);
      const std::int64_t offset = get_int(row, L[kRunOffset]), bytes = get_int(row, L[kRunSize]);
      if (offset < 0 || bytes < 0 || static_cast<hsize_t>(offset) + static_cast<hsize_t>(bytes) > manifest_bytes)
        throw StoreError("evaluation " + std::to_string(ev.id) + ": its manifest lies outside /evaluations/manifests");
      ev.manifest = detail::read_bytes(manifests.get(), static_cast<hsize_t>(offset), static_cast<hsize_t>(bytes),
                                       "evaluations/manifests");
      index[ev.id] = out.size();
      out.push_back(std::move(ev));
    }
    // Rows of an evaluation without a run row (one that was interrupted) are left out.
    for (std::size_t i = 0; i < metrics.rows; ++i) {
      const std::byte* row = metrics.row(i);
      const detail::Layout& L = metrics.layout;
      if (auto it = index.find(get_int(row, L[kMetId])); it != index.end())
        out[it->second].metrics.push_back(
            {get_int(row, L[kMetTrial]), get_int(row, L[kMetIteration]), get_str(row, L[kMetName]), get_f64(row, L[kMetValue])});
    }
    for (std::size_t i = 0; i < latency.rows; ++i) {
      const std::byte* row = latency.row(i);
      const detail::Layout& L = latency.layout;
      if (auto it = index.find(get_int(row, L[kLatId])); it != index.end())
        out[it->second].latency.push_back({get_int(row, L[kLatTrial]), get_int(row, L[kLatIteration]),
                                           get_int(row, L[kLatBatchSize]), get_int(row, L[kLatBatches]),
                                           get_f64(row, L[kLatMean]), get_f64(row, L[kLatP50]), get_f64(row, L[kLatP90]),
                                           get_f64(row, L[kLatP99]), get_f64(row, L[kLatMax]), get_f64(row, L[kLatRate])});
    }
    for (std::size_t i = 0; i < split.rows; ++i) {
      const std::byte* row = split.row(i);
      const detail::Layout& L = split.layout;
      const auto it = index.find(get_int(row, L[kSplitId]));
      if (it == index.end()) continue;
      const search::TrialId trial = get_int(row, L[kSplitTrial]);
      const std::int64_t iteration = get_int(row, L[kSplitIteration]), batch_size = get_int(row, L[kSplitBatchSize]);
      // The latency row it splits; one without is left out, as a row without its run is.
      for (EvalLatencyRow& l : out[it->second].latency)
        if (l.trial == trial && l.iteration == iteration && l.batch_size == batch_size)
          for (std::size_t p = 0; p < std::size(l.parts_ms); ++p) l.parts_ms[p] = get_f64(row, L[kSplitFirstPart + p]);
    }
    for (std::size_t i = 0; i < trace.rows; ++i) {
      const std::byte* row = trace.row(i);
      const detail::Layout& L = trace.layout;
      if (auto it = index.find(get_int(row, L[kTrId])); it != index.end())
        out[it->second].trace.push_back({get_int(row, L[kTrTrial]), get_int(row, L[kTrIteration]),
                                         get_int(row, L[kTrBatchSize]), get_int(row, L[kTrBatch]),
                                         get_f64(row, L[kTrStart]), get_f64(row, L[kTrTotal]), get_f64(row, L[kTrPre]),
                                         get_f64(row, L[kTrInference]), get_f64(row, L[kTrPost])});
    }
    for (std::size_t i = 0; i < confusion.rows; ++i) {
      const std::byte* row = confusion.row(i);
      const detail::Layout& L = confusion.layout;
      if (auto it = index.find(get_int(row, L[kConId])); it != index.end())
        out[it->second].confusion.push_back({get_int(row, L[kConTrial]), get_int(row, L[kConIteration]),
                                             get_int(row, L[kConTrue]), get_int(row, L[kConPredicted]),
                                             get_int(row, L[kConCount])});
    }
    return out;
  });
}

}  // namespace ranktune::io
