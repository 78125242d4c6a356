#include "io/store.h"

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "io/crc32c.h"
#include "io/hdf5.h"
#include "io/store_detail.h"
#include "ranktune/config.h"
#include "sys/run.h"

namespace ranktune::io {
using namespace detail;
namespace {

namespace fs = std::filesystem;

// What a full disk means for the run, in its own words: no write of `path` can succeed
// until space is freed, and nothing is wrong with the file (see ResultsWriter::flush).
// `needed`: the bytes a reservation asked for (0: unknown).
std::string disk_full_message(const std::string& path, std::uint64_t needed = 0) {
  const fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  struct statvfs st {};
  std::string free = ::statvfs(dir.c_str(), &st) == 0
                         ? std::to_string(static_cast<unsigned long long>(st.f_bavail) * st.f_frsize) + " bytes free"
                         : "free space unknown";
  if (needed > 0) free += ", fewer than the " + std::to_string(needed) + " its next writes need";
  return "the file system of " + path + " is full (" + free + "): every row committed before is in the file; "
         "free space there, then resume with `ranktune run CONFIG --resume`";
}

// Disk space that the writer holds ahead of HDF5's writes (see ResultsWriter::Impl::reserve),
// given back when the file is closed.
struct SpaceReserve {
  int fd = -1;             ///< the WriterLock's descriptor of the file
  std::uint64_t end = 0;   ///< reserved up to this offset (past the file's size)
  bool enabled = true;     ///< false where the file system has no fallocate(2)
  SpaceReserve() = default;
  SpaceReserve(const SpaceReserve&) = delete;
  SpaceReserve& operator=(const SpaceReserve&) = delete;
  ~SpaceReserve() {
    // Blocks reserved past the end of a closed file would stay allocated on ext4 and xfs.
    struct stat st {};
    if (fd >= 0 && end > 0 && ::fstat(fd, &st) == 0 && end > static_cast<std::uint64_t>(st.st_size))
      (void)::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, st.st_size,
                        static_cast<off_t>(end - static_cast<std::uint64_t>(st.st_size)));
  }
};

// Runs a write of the results file `path`, turning HDF5's failure from ENOSPC or EDQUOT
// (a failed write(2) or ftruncate(2) under it) into DiskFullError.
template <class F>
auto writing(const std::string& path, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const h5::CallError& e) {
    if (e.sys_errno() == ENOSPC || e.sys_errno() == EDQUOT) throw DiskFullError(disk_full_message(path));
    throw;
  }
}

// ------------------------------------------------------------------------ row layouts

enum class Kind { F64, I64, I32, Str };

struct Column {
  std::string name;
  Kind kind = Kind::F64;
  std::size_t size = 0;    // bytes
  std::size_t offset = 0;  // bytes from the start of the row
};

// A packed compound row (no padding): the buffered bytes are the file's layout, so a write
// converts nothing, and the same helper builds the memory type the reader asks for.
class Layout {
 public:
  void add(std::string name, Kind kind, std::size_t str_len = 0) {
    std::size_t size = kind == Kind::Str ? str_len : kind == Kind::I32 ? 4 : 8;
    columns_.push_back({std::move(name), kind, size, row_size_});
    row_size_ += size;
  }
  const Column& operator[](std::size_t i) const { return columns_[i]; }
  std::size_t size() const { return columns_.size(); }
  std::size_t row_size() const { return row_size_; }

  h5::Datatype type() const {
    h5::Datatype type{H5_CHECK(H5Tcreate(H5T_COMPOUND, row_size_))};
    for (const Column& c : columns_) {
      h5::Datatype string;
      hid_t member = H5T_NATIVE_DOUBLE;
      if (c.kind == Kind::I64) member = H5T_NATIVE_INT64;
      if (c.kind == Kind::I32) member = H5T_NATIVE_INT32;
      if (c.kind == Kind::Str) member = (string = h5::string_type(c.size)).get();
      H5_CHECK(H5Tinsert(type.get(), c.name.c_str(), c.offset, member));
    }
    return type;
  }

 private:
  std::vector<Column> columns_;
  std::size_t row_size_ = 0;
};

// Longest prefix of `s` that fits `max` bytes without splitting a UTF-8 sequence.
std::size_t utf8_prefix(std::string_view s, std::size_t max) {
  if (s.size() <= max) return s.size();
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

void put_f64(std::byte* row, const Column& c, double v) { std::memcpy(row + c.offset, &v, 8); }

void put_int(std::byte* row, const Column& c, std::int64_t v) {
  if (c.kind == Kind::I32) {
    auto narrow = static_cast<std::int32_t>(
        std::clamp<std::int64_t>(v, std::numeric_limits<std::int32_t>::min(),
                                 std::numeric_limits<std::int32_t>::max()));
    std::memcpy(row + c.offset, &narrow, 4);
  } else {
    std::memcpy(row + c.offset, &v, 8);
  }
}

void put_str(std::byte* row, const Column& c, std::string_view s) {
  std::size_t n = utf8_prefix(s, c.size);
  std::memcpy(row + c.offset, s.data(), n);
  std::memset(row + c.offset + n, 0, c.size - n);
}

std::int64_t get_int(const std::byte* row, const Column& c) {
  if (c.kind == Kind::I32) {
    std::int32_t v;
    std::memcpy(&v, row + c.offset, 4);
    return v;
  }
  std::int64_t v;
  std::memcpy(&v, row + c.offset, 8);
  return v;
}

// Reads any numeric column as a double (metrics may be stored as integers by other tools).
double get_f64(const std::byte* row, const Column& c) {
  if (c.kind != Kind::F64) return static_cast<double>(get_int(row, c));
  double v;
  std::memcpy(&v, row + c.offset, 8);
  return v;
}

std::string get_str(const std::byte* row, const Column& c) {
  const char* p = reinterpret_cast<const char*>(row + c.offset);
  return std::string(p, strnlen(p, c.size));
}

// ------------------------------------------------------------------------ the schema

struct FixedColumn {
  const char* name;
  Kind kind;
  std::size_t length = 0;  // Str only
};

// Column order of each table as documented in store.h; the enums below index into them.
constexpr FixedColumn kTrialColumns[] = {
    {"trial_id", Kind::I64},   {"status", Kind::Str, kStatusLen},
    {"attempt", Kind::I32},    {"iterations", Kind::I64},
    {"best", Kind::F64},       {"best_iteration", Kind::I64},
    {"last", Kind::F64},       {"start_time", Kind::F64},
    {"end_time", Kind::F64},   {"workers", Kind::Str, kWorkersLen},
    {"error", Kind::Str, kErrorLen}, {"log_tail", Kind::Str, kLogTailLen}};
enum TrialCol {
  kTrialId, kStatus, kAttempt, kIterations, kBest, kBestIteration, kLast, kStart, kEnd,
  kWorkers, kError, kLogTail, kTrialFixed
};
static_assert(std::size(kTrialColumns) == kTrialFixed);

constexpr FixedColumn kResultColumns[] = {
    {"trial_id", Kind::I64}, {"attempt", Kind::I32}, {"iteration", Kind::I64},
    {"time", Kind::F64}};
enum ResultCol { kResTrial, kResAttempt, kResIteration, kResTime, kResultFixed };
static_assert(std::size(kResultColumns) == kResultFixed);

constexpr FixedColumn kEventColumns[] = {
    {"time", Kind::F64}, {"trial_id", Kind::I64}, {"worker", Kind::I32},
    {"kind", Kind::Str, kEventKindLen}, {"message", Kind::Str, kEventMessageLen}};
enum EventCol { kEvTime, kEvTrial, kEvWorker, kEvKind, kEvMessage, kEventFixed };
static_assert(std::size(kEventColumns) == kEventFixed);

constexpr FixedColumn kWorkerColumns[] = {
    {"rank", Kind::I32}, {"host", Kind::Str, kHostLen}, {"local_index", Kind::I32},
    {"device", Kind::Str, kDeviceLen}, {"device_name", Kind::Str, kDeviceNameLen}};
enum WorkerCol { kWkRank, kWkHost, kWkLocal, kWkDevice, kWkDeviceName, kWorkerFixed };
static_assert(std::size(kWorkerColumns) == kWorkerFixed);

struct TableSpec {
  const char* name;
  std::span<const FixedColumn> fixed;
  hsize_t chunk_rows;
};
// Chunks of roughly 32-64 KiB: a flush rewrites every partly filled chunk it touches, so
// a 256-row chunk of 2.4 KiB trial rows (the log tail dominates) cost 600 KiB per flush.
constexpr TableSpec kTrials{"trials", kTrialColumns, 16};
constexpr TableSpec kResults{"results", kResultColumns, 1024};
constexpr TableSpec kEvents{"events", kEventColumns, 128};
constexpr TableSpec kWorkersTable{"workers", kWorkerColumns, 256};

// Checkpoints: an index table (with each checkpoint's CRC-32C), and the bytes appended one after another to a 1-D dataset
// of unsigned bytes (an append-only layout, like every other table, so SWMR readers and
// recovery after kill -9 work the same way).
constexpr FixedColumn kCheckpointColumns[] = {
    {"trial_id", Kind::I64}, {"attempt", Kind::I32}, {"iteration", Kind::I64}, {"time", Kind::F64},
    {"offset", Kind::I64},   {"size", Kind::I64},    {"crc32c", Kind::I64}};
enum CheckpointCol { kCkTrial, kCkAttempt, kCkIteration, kCkTime, kCkOffset, kCkSize, kCkCrc, kCheckpointFixed };
static_assert(std::size(kCheckpointColumns) == kCheckpointFixed);
constexpr TableSpec kCheckpoints{"checkpoints", kCheckpointColumns, 128};
constexpr const char* kCheckpointData = "checkpoint_data";
constexpr hsize_t kCheckpointChunk = 1 << 20;  // bytes
// Schema v2 columns of /checkpoints. They are not in kCheckpointColumns, which the reader
// requires, so that schema v1 files (without them) still open.
constexpr const char* kCkScoreName = "score";
constexpr const char* kCkDroppedName = "dropped";

constexpr std::int64_t kMissingInt = std::numeric_limits<std::int64_t>::min();
constexpr std::size_t kMaxParamWidth = 64 * 1024;

Layout fixed_layout(const TableSpec& spec) {
  Layout layout;
  for (const FixedColumn& f : spec.fixed) layout.add(f.name, f.kind, f.length);
  return layout;
}

Layout checkpoint_layout() {
  Layout layout = fixed_layout(kCheckpoints);
  layout.add(kCkScoreName, Kind::F64);
  layout.add(kCkDroppedName, Kind::I32);
  return layout;
}

std::optional<std::size_t> column_index(const Layout& layout, std::string_view name) {
  for (std::size_t c = 0; c < layout.size(); ++c)
    if (layout[c].name == name) return c;
  return std::nullopt;
}

Kind kind_of(search::ValueType t) {
  switch (t) {
    case search::ValueType::Float: return Kind::F64;
    case search::ValueType::Int: return Kind::I64;
    case search::ValueType::String: return Kind::Str;
  }
  return Kind::F64;
}

// Compound member names must be unique; a parameter called "best" or a metric called
// "time" would otherwise fail deep inside HDF5 with a cryptic message.
void check_extra_names(const TableSpec& spec, const std::vector<std::string>& names,
                       const char* what) {
  std::vector<std::string> seen;
  for (const FixedColumn& f : spec.fixed) seen.emplace_back(f.name);
  for (const std::string& n : names) {
    if (n.empty() || std::find(seen.begin(), seen.end(), n) != seen.end())
      throw StoreError(std::string(what) + " name '" + n + "' is empty, repeated or clashes " +
                       "with a fixed /" + spec.name + " column");
    seen.push_back(n);
  }
}

std::string join_ranks(const std::vector<int>& ranks, std::size_t width) {
  std::string s;
  for (int r : ranks) {
    std::string item = std::to_string(r);
    if (s.size() + !s.empty() + item.size() > width) break;  // cut between numbers
    if (!s.empty()) s.push_back(',');
    s.append(item);
  }
  return s;
}

std::vector<int> parse_ranks(std::string_view s) {
  std::vector<int> ranks;
  while (!s.empty()) {
    std::string_view item = s.substr(0, s.find(','));
    int r = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), r);
    if (ec != std::errc() || end != item.data() + item.size())
      throw StoreError("bad workers list '" + std::string(s) + "'");
    ranks.push_back(r);
    s.remove_prefix(std::min(s.size(), item.size() + 1));
  }
  return ranks;
}

void put_value(std::byte* row, const Column& c, const search::Value* v) {
  if (c.kind == Kind::F64) {
    double d = NAN;
    if (v && std::holds_alternative<double>(*v)) d = std::get<double>(*v);
    if (v && std::holds_alternative<std::int64_t>(*v)) d = static_cast<double>(std::get<std::int64_t>(*v));
    put_f64(row, c, d);
  } else if (c.kind == Kind::I64) {
    std::int64_t i = kMissingInt;
    if (v && std::holds_alternative<std::int64_t>(*v)) i = std::get<std::int64_t>(*v);
    if (v && std::holds_alternative<double>(*v) && std::isfinite(std::get<double>(*v)))
      i = std::llround(std::get<double>(*v));
    put_int(row, c, i);
  } else {
    put_str(row, c, v ? (std::holds_alternative<std::string>(*v) ? std::get<std::string>(*v)
                                                                  : search::to_string(*v))
                      : std::string());
  }
}

}  // namespace

namespace detail {

std::string iso8601_utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// ------------------------------------------------------------------------ attributes

void write_string_attr(hid_t loc, const char* name, std::string_view text) {
  std::string padded(text);
  padded.resize(std::max<std::size_t>(1, text.size()));  // HDF5 strings are >= 1 byte
  h5::Datatype type = h5::string_type(padded.size());
  h5::Dataspace scalar{H5_CHECK(H5Screate(H5S_SCALAR))};
  h5::Attribute attr{
      H5_CHECK(H5Acreate2(loc, name, type.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT))};
  H5_CHECK(H5Awrite(attr.get(), type.get(), padded.data()));
}

// Large texts go to a dataset: object headers hold attributes of at most 64 KiB.
void write_text(hid_t loc, const char* name, std::string_view text) {
  if (text.size() <= kMaxTextAttribute) return write_string_attr(loc, name, text);
  h5::Datatype type = h5::string_type(text.size());
  h5::Dataspace scalar{H5_CHECK(H5Screate(H5S_SCALAR))};
  h5::Dataset ds{H5_CHECK(H5Dcreate2(loc, name, type.get(), scalar.get(), H5P_DEFAULT,
                                     H5P_DEFAULT, H5P_DEFAULT))};
  H5_CHECK(H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, text.data()));
}

void write_int_attr(hid_t loc, const char* name, int value) {
  h5::Dataspace scalar{H5_CHECK(H5Screate(H5S_SCALAR))};
  h5::Attribute attr{H5_CHECK(
      H5Acreate2(loc, name, H5T_STD_I32LE, scalar.get(), H5P_DEFAULT, H5P_DEFAULT))};
  H5_CHECK(H5Awrite(attr.get(), H5T_NATIVE_INT, &value));
}

constexpr std::size_t kMaxTextRead = 64u << 20;

// One reader for string attributes and string datasets: same checks, different H5xread.
template <class Read>
std::string read_scalar_string(hid_t file_type, hid_t space, const std::string& what,
                               Read read) {
  if (H5Tget_class(file_type) != H5T_STRING || H5_CHECK(H5Tis_variable_str(file_type)) > 0)
    throw StoreError(what + " is not a fixed-length string");
  if (H5_CHECK(H5Sget_simple_extent_npoints(space)) != 1)
    throw StoreError(what + " is not a single value");
  std::size_t size = H5Tget_size(file_type);
  if (size == 0 || size > kMaxTextRead) throw StoreError(what + " has an implausible size");
  h5::Datatype mem = h5::string_type(size);
  std::string buf(size, '\0');
  H5_CHECK(read(mem.get(), buf.data()));
  buf.resize(strnlen(buf.data(), size));
  return buf;
}

std::optional<std::string> read_string_attr(hid_t loc, const char* name) {
  if (H5_CHECK(H5Aexists(loc, name)) == 0) return std::nullopt;
  h5::Attribute attr{H5_CHECK(H5Aopen(loc, name, H5P_DEFAULT))};
  h5::Datatype type{H5_CHECK(H5Aget_type(attr.get()))};
  h5::Dataspace space{H5_CHECK(H5Aget_space(attr.get()))};
  return read_scalar_string(type.get(), space.get(), std::string("attribute ") + name,
                            [&](hid_t mem, void* buf) { return H5Aread(attr.get(), mem, buf); });
}

// The attribute, else the dataset write_text() falls back to, else nullopt.
std::optional<std::string> read_text(hid_t loc, const char* name) {
  if (auto attr = read_string_attr(loc, name)) return attr;
  if (H5_CHECK(H5Lexists(loc, name, H5P_DEFAULT)) == 0) return std::nullopt;
  h5::Dataset ds{H5_CHECK(H5Dopen2(loc, name, H5P_DEFAULT))};
  h5::Datatype type{H5_CHECK(H5Dget_type(ds.get()))};
  h5::Dataspace space{H5_CHECK(H5Dget_space(ds.get()))};
  return read_scalar_string(type.get(), space.get(), std::string("/") + name, [&](hid_t mem, void* buf) {
    return H5Dread(ds.get(), mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
  });
}

long long read_int_attr(hid_t loc, const char* name) {
  h5::Attribute attr{H5_CHECK(H5Aopen(loc, name, H5P_DEFAULT))};
  h5::Datatype type{H5_CHECK(H5Aget_type(attr.get()))};
  h5::Dataspace space{H5_CHECK(H5Aget_space(attr.get()))};
  if (H5Tget_class(type.get()) != H5T_INTEGER ||
      H5_CHECK(H5Sget_simple_extent_npoints(space.get())) != 1)
    throw StoreError(std::string("attribute ") + name + " is not a single integer");
  long long value = 0;
  H5_CHECK(H5Aread(attr.get(), H5T_NATIVE_LLONG, &value));
  return value;
}
}  // namespace detail

namespace {


std::vector<std::string> attribute_names(hid_t loc) {
  std::vector<std::string> names;
  auto collect = [](hid_t, const char* name, const H5A_info_t*, void* data) -> herr_t {
    try {
      static_cast<std::vector<std::string>*>(data)->emplace_back(name);
      return 0;
    } catch (...) {
      return -1;  // exceptions must not unwind through HDF5's C frames
    }
  };
  H5_CHECK(H5Aiterate2(loc, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names));
  return names;
}

// ------------------------------------------------------------------------ reading tables

std::string member_name(hid_t type, unsigned i) {
  char* raw = H5Tget_member_name(type, i);
  if (!raw) h5::fail("H5Tget_member_name", __FILE__, __LINE__);
  std::string name(raw);
  H5free_memory(raw);
  return name;
}

// The kind a file member is read as, or nullopt for classes the store never writes.
std::optional<std::pair<Kind, std::size_t>> member_kind(hid_t member) {
  switch (H5Tget_class(member)) {
    case H5T_INTEGER: return std::pair{Kind::I64, std::size_t{0}};
    case H5T_FLOAT: return std::pair{Kind::F64, std::size_t{0}};
    case H5T_STRING: {
      std::size_t size = H5Tget_size(member);
      if (H5Tis_variable_str(member) != 0 || size == 0 || size > kMaxParamWidth) return std::nullopt;
      return std::pair{Kind::Str, size};
    }
    default: return std::nullopt;
  }
}

bool same_class(Kind a, Kind b) {
  auto cls = [](Kind k) { return k == Kind::I32 ? Kind::I64 : k; };
  return cls(a) == cls(b);
}

// The memory layout for reading `file_type`: the fixed columns (each must exist with the
// right class; HDF5 converts widths by name) followed by every other member in file order.
Layout layout_from_file(hid_t file_type, const TableSpec& spec) {
  if (H5Tget_class(file_type) != H5T_COMPOUND) throw StoreError("not a table of records");
  Layout layout;
  for (const FixedColumn& f : spec.fixed) {
    int index = H5Tget_member_index(file_type, f.name);
    if (index < 0) throw StoreError(std::string("no column '") + f.name + "'");
    h5::Datatype member{H5_CHECK(H5Tget_member_type(file_type, static_cast<unsigned>(index)))};
    auto kind = member_kind(member.get());
    if (!kind || !same_class(kind->first, f.kind))
      throw StoreError(std::string("column '") + f.name + "' has the wrong type");
    layout.add(f.name, f.kind, kind->second);
  }
  int count = H5_CHECK(H5Tget_nmembers(file_type));
  for (unsigned i = 0; i < static_cast<unsigned>(count); ++i) {
    std::string name = member_name(file_type, i);
    bool fixed = std::any_of(spec.fixed.begin(), spec.fixed.end(),
                             [&](const FixedColumn& f) { return name == f.name; });
    if (fixed) continue;
    h5::Datatype member{H5_CHECK(H5Tget_member_type(file_type, i))};
    auto kind = member_kind(member.get());
    if (!kind) throw StoreError("column '" + name + "' has an unsupported type");
    layout.add(name, kind->first, kind->second);
  }
  return layout;
}

struct RawTable {
  Layout layout;
  std::vector<std::byte> bytes;
  std::size_t rows = 0;
  const std::byte* row(std::size_t i) const { return bytes.data() + i * layout.row_size(); }
};

RawTable read_table(hid_t file, const TableSpec& spec, std::uintmax_t file_size) {
  return with_context(std::string("/") + spec.name + ": ", [&] {
    h5::Dataset ds{H5_CHECK(H5Dopen2(file, spec.name, H5P_DEFAULT))};
    h5::Dataspace space{H5_CHECK(H5Dget_space(ds.get()))};
    hsize_t dims[H5S_MAX_RANK];
    int rank = H5_CHECK(H5Sget_simple_extent_dims(space.get(), dims, nullptr));
    if (rank != 1) throw StoreError("has rank " + std::to_string(rank) + ", expected 1");
    h5::Datatype file_type{H5_CHECK(H5Dget_type(ds.get()))};
    RawTable table;
    table.layout = layout_from_file(file_type.get(), spec);
    // Unwritten chunks read as fill values, so a table may exceed the file, but not by
    // orders of magnitude: a corrupted extent must not make us allocate terabytes.
    const double bytes = static_cast<double>(dims[0]) * static_cast<double>(table.layout.row_size());
    if (dims[0] > 1'000'000'000 || bytes > std::max(1e9, 64.0 * static_cast<double>(file_size)))
      throw StoreError("has an implausible size (" + std::to_string(dims[0]) + " rows)");
    table.rows = dims[0];
    table.bytes.resize(table.rows * table.layout.row_size());
    if (table.rows > 0) {
      h5::Datatype mem = table.layout.type();
      H5_CHECK(H5Dread(ds.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, table.bytes.data()));
    }
    return table;
  });
}

search::Mode parse_mode(const std::string& s) {
  if (s == "max") return search::Mode::Max;
  if (s == "min") return search::Mode::Min;
  throw StoreError("attribute mode is '" + s + "', expected 'max' or 'min'");
}

StoreMeta read_meta(hid_t file) {
  StoreMeta meta;
  meta.schema_version = static_cast<int>(read_int_attr(file, "schema_version"));
  auto text = [&](const char* name) { return read_text(file, name).value_or(""); };
  meta.ranktune_version = text("ranktune_version");
  meta.experiment = text("experiment");
  meta.metric = text("metric");
  meta.mode = parse_mode(text("mode"));
  meta.config_text = text("config");
  meta.overrides = text("overrides");
  meta.command_line = text("command_line");
  meta.created = text("created");
  if (H5_CHECK(H5Aexists(file, "created_unix")) > 0) meta.created_unix = read_int_attr(file, "created_unix");
  if (H5_CHECK(H5Lexists(file, "stack", H5P_DEFAULT)) > 0) {
    h5::Group stack{H5_CHECK(H5Gopen2(file, "stack", H5P_DEFAULT))};
    for (const std::string& name : attribute_names(stack.get()))
      meta.stack[name] = read_string_attr(stack.get(), name.c_str()).value_or("");
  }
  return meta;
}

std::vector<search::Trial> read_trials(const RawTable& t, StoreSchema& schema) {
  const Layout& L = t.layout;
  for (std::size_t c = kTrialFixed; c < L.size(); ++c) {
    auto type = L[c].kind == Kind::Str   ? search::ValueType::String
                : L[c].kind == Kind::I64 ? search::ValueType::Int
                                         : search::ValueType::Float;
    schema.params.push_back({L[c].name, type, L[c].kind == Kind::Str ? L[c].size : 0});
  }
  std::vector<search::Trial> trials;
  for (std::size_t i = 0; i < t.rows; ++i) {
    const std::byte* row = t.row(i);
    search::Trial trial;
    trial.id = get_int(row, L[kTrialId]);
    if (trial.id == 0) continue;  // a row below the highest id that was never written
    auto where = [&] { return "/trials row " + std::to_string(i) + ": "; };
    if (trial.id < 0) throw StoreError(where() + "negative trial_id");
    // The writer puts trial N in row N - 1 and nowhere else, so any other id there is
    // damage (a flipped bit, a copied row): read on, it would show a trial twice or
    // under another trial's results.
    if (trial.id != static_cast<search::TrialId>(i + 1))
      throw StoreError(where() + "holds trial_id " + std::to_string(trial.id) + ", but row " + std::to_string(i) +
                       " is trial " + std::to_string(i + 1) + "'s (rows are by id): the file is damaged; "
                       "restore it from a copy");
    std::string status = get_str(row, L[kStatus]);
    auto parsed = search::parse_trial_status(status);
    if (!parsed) throw StoreError(where() + "unknown status '" + status + "'");
    trial.status = *parsed;
    trial.attempt = static_cast<int>(get_int(row, L[kAttempt]));
    trial.iterations = get_int(row, L[kIterations]);
    trial.best = get_f64(row, L[kBest]);
    trial.best_iteration = get_int(row, L[kBestIteration]);
    trial.last = get_f64(row, L[kLast]);
    trial.start_time = get_f64(row, L[kStart]);
    trial.end_time = get_f64(row, L[kEnd]);
    trial.workers = with_context(where(), [&] { return parse_ranks(get_str(row, L[kWorkers])); });
    trial.error = get_str(row, L[kError]);
    trial.log_tail = get_str(row, L[kLogTail]);
    for (std::size_t c = kTrialFixed; c < L.size(); ++c) {
      const Column& col = L[c];
      if (col.kind == Kind::F64) {
        if (double d = get_f64(row, col); !std::isnan(d)) trial.config[col.name] = d;
      } else if (col.kind == Kind::I64) {
        if (std::int64_t v = get_int(row, col); v != kMissingInt) trial.config[col.name] = v;
      } else if (std::string s = get_str(row, col); !s.empty()) {
        trial.config[col.name] = std::move(s);
      }
    }
    trials.push_back(std::move(trial));
  }
  return trials;
}

std::vector<ResultRow> read_results(const RawTable& t, StoreSchema& schema) {
  const Layout& L = t.layout;
  for (std::size_t c = kResultFixed; c < L.size(); ++c) {
    if (L[c].kind == Kind::Str)
      throw StoreError("/results: metric column '" + L[c].name + "' is not numeric");
    schema.metrics.push_back(L[c].name);
  }
  std::vector<ResultRow> rows(t.rows);
  for (std::size_t i = 0; i < t.rows; ++i) {
    const std::byte* row = t.row(i);
    ResultRow& r = rows[i];
    r.trial = get_int(row, L[kResTrial]);
    r.attempt = static_cast<int>(get_int(row, L[kResAttempt]));
    r.iteration = get_int(row, L[kResIteration]);
    r.time = get_f64(row, L[kResTime]);
    for (std::size_t c = kResultFixed; c < L.size(); ++c) r.values.push_back(get_f64(row, L[c]));
  }
  return rows;
}

std::vector<EventRow> read_events(const RawTable& t) {
  const Layout& L = t.layout;
  std::vector<EventRow> events(t.rows);
  for (std::size_t i = 0; i < t.rows; ++i) {
    const std::byte* row = t.row(i);
    events[i] = {get_f64(row, L[kEvTime]), get_int(row, L[kEvTrial]),
                 static_cast<int>(get_int(row, L[kEvWorker])), get_str(row, L[kEvKind]),
                 get_str(row, L[kEvMessage])};
  }
  return events;
}

std::vector<WorkerInfo> read_workers(const RawTable& t) {
  const Layout& L = t.layout;
  std::vector<WorkerInfo> workers(t.rows);
  for (std::size_t i = 0; i < t.rows; ++i) {
    const std::byte* row = t.row(i);
    workers[i] = {static_cast<int>(get_int(row, L[kWkRank])), get_str(row, L[kWkHost]),
                  static_cast<int>(get_int(row, L[kWkLocal])), get_str(row, L[kWkDevice]),
                  get_str(row, L[kWkDeviceName])};
  }
  return workers;
}

std::vector<CheckpointRow> read_checkpoint_rows(const RawTable& t) {
  const Layout& L = t.layout;
  const auto score = column_index(L, kCkScoreName), dropped = column_index(L, kCkDroppedName);
  std::vector<CheckpointRow> rows(t.rows);
  for (std::size_t i = 0; i < t.rows; ++i) {
    const std::byte* row = t.row(i);
    CheckpointRow& r = rows[i];
    r.trial = get_int(row, L[kCkTrial]);
    r.attempt = static_cast<int>(get_int(row, L[kCkAttempt]));
    r.iteration = get_int(row, L[kCkIteration]);
    r.time = get_f64(row, L[kCkTime]);
    r.offset = get_int(row, L[kCkOffset]);
    r.size = get_int(row, L[kCkSize]);
    r.crc32c = static_cast<std::uint32_t>(get_int(row, L[kCkCrc]));
    r.score = score ? get_f64(row, L[*score]) : NAN;
    r.dropped = dropped && get_int(row, L[*dropped]) != 0;
  }
  return rows;
}

void pack_checkpoint_row(const Layout& L, const CheckpointRow& r, std::byte* row) {
  put_int(row, L[kCkTrial], r.trial);
  put_int(row, L[kCkAttempt], r.attempt);
  put_int(row, L[kCkIteration], r.iteration);
  put_f64(row, L[kCkTime], r.time);
  put_int(row, L[kCkOffset], r.offset);
  put_int(row, L[kCkSize], r.size);
  put_int(row, L[kCkCrc], r.crc32c);
  // A schema v1 table has neither column; the caller refuses to drop rows there.
  if (const auto c = column_index(L, kCkScoreName)) put_f64(row, L[*c], r.score);
  if (const auto c = column_index(L, kCkDroppedName)) put_int(row, L[*c], r.dropped ? 1 : 0);
}

// The bytes [offset, offset + size) of the 1-D uint8 dataset `ds`.
std::string read_bytes(hid_t ds, hsize_t offset, hsize_t size) {
  std::string bytes(size, '\0');
  if (size == 0) return bytes;
  h5::Dataspace file_space{H5_CHECK(H5Dget_space(ds))};
  hsize_t extent = 0;
  H5_CHECK(H5Sget_simple_extent_dims(file_space.get(), &extent, nullptr));
  if (offset > extent || size > extent - offset)
    throw StoreError("its bytes [" + std::to_string(offset) + ", " + std::to_string(offset + size) +
                     ") lie outside /checkpoint_data (" + std::to_string(extent) + " bytes): the file is damaged");
  H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &offset, nullptr, &size, nullptr));
  h5::Dataspace mem_space{H5_CHECK(H5Screate_simple(1, &size, nullptr))};
  H5_CHECK(H5Dread(ds, H5T_NATIVE_UINT8, mem_space.get(), file_space.get(), H5P_DEFAULT, bytes.data()));
  return bytes;
}

// Writes `bytes` at `offset` of the 1-D uint8 dataset `ds`, growing it to `extent` first
// when that is larger than its size.
void write_bytes(hid_t ds, hsize_t offset, std::string_view bytes, hsize_t extent) {
  hsize_t size = bytes.size();
  if (size == 0) return;
  h5::Dataspace current{H5_CHECK(H5Dget_space(ds))};
  hsize_t now = 0;
  H5_CHECK(H5Sget_simple_extent_dims(current.get(), &now, nullptr));
  if (extent > now) H5_CHECK(H5Dset_extent(ds, &extent));
  h5::Dataspace file_space{H5_CHECK(H5Dget_space(ds))};
  H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &offset, nullptr, &size, nullptr));
  h5::Dataspace mem_space{H5_CHECK(H5Screate_simple(1, &size, nullptr))};
  H5_CHECK(H5Dwrite(ds, H5T_NATIVE_UINT8, mem_space.get(), file_space.get(), H5P_DEFAULT, bytes.data()));
}

std::uint32_t crc_of(std::string_view bytes) { return crc32c(std::as_bytes(std::span(bytes.data(), bytes.size()))); }

std::string checkpoint_name(search::TrialId trial, std::int64_t iteration) {
  return trial == 0 ? "experiment state " + std::to_string(iteration)
                    : "checkpoint of trial " + std::to_string(trial) + " at iteration " + std::to_string(iteration);
}

// The end-of-file address a version 2/3 superblock (the only kind ranktune writes) records,
// or 0 when the first bytes are not one. Only used to word an error HDF5 already found.
std::uint64_t superblock_eof(const std::string& path) {
  unsigned char sb[48] = {};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return 0;
  const std::size_t n = std::fread(sb, 1, sizeof sb, f);
  std::fclose(f);
  if (n < sizeof sb || std::memcmp(sb, "\x89HDF\r\n\x1a\n", 8) != 0 || (sb[8] != 2 && sb[8] != 3) ||
      sb[9] != 8)
    return 0;
  std::uint64_t base = 0, eof = 0;
  for (int i = 7; i >= 0; --i) {
    base = base << 8 | sb[12 + i];
    eof = eof << 8 | sb[28 + i];
  }
  return base + eof;
}

// A one-line reason for a file that HDF5 will not open, with what to do about it. Both
// attempts' messages are kept: SWMR_READ and plain opens refuse for different reasons.
std::string open_failure(const std::string& path, std::uintmax_t file_size, const std::string& swmr_error,
                         const std::string& plain_error) {
  auto says = [&](const char* text) {
    return swmr_error.find(text) != std::string::npos || plain_error.find(text) != std::string::npos;
  };
  if (file_size < 48)  // the signature is there (H5Fis_hdf5 found it), the superblock is not
    return "truncated: the file has " + std::to_string(file_size) +
           " bytes, fewer than an HDF5 header; copy it again from the original";
  if (says("truncated file")) {
    const std::uint64_t expected = superblock_eof(path);
    std::string sizes = std::to_string(file_size) + " bytes";
    if (expected > file_size) sizes += " of the " + std::to_string(expected) + " its header records";
    return "truncated: the file has " + sizes +
           " (a copy cut short, or a full disk); copy it again from the original";
  }
  if (says("already open for write"))
    return "the file is open for writing by a program that does not allow live reading "
           "(or one that was killed): wait for it to finish, or read a copy";
  if (says("checksum"))
    return "corrupted: HDF5 metadata fails its checksum (" + plain_error +
           "); the file cannot be read, restore it from a copy";
  return "not an HDF5 file (or it is truncated/corrupted): " + (plain_error.empty() ? swmr_error : plain_error);
}

}  // namespace

namespace detail {

// The file consistency flags of a version 2/3 superblock (non-zero while a writer holds the
// file, or after its writer died), or nullopt when the first bytes are not one.
std::optional<unsigned> superblock_flags(const std::string& path) {
  unsigned char sb[12] = {};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return std::nullopt;
  const std::size_t n = std::fread(sb, 1, sizeof sb, f);
  std::fclose(f);
  if (n < sizeof sb || std::memcmp(sb, "\x89HDF\r\n\x1a\n", 8) != 0 || (sb[8] != 2 && sb[8] != 3)) return std::nullopt;
  return sb[11];
}

// Opens a results file read-only (SWMR_READ first, so a running writer does not stop us).
h5::File open_for_reading(const std::string& path, std::uintmax_t file_size) {
  // Two metadata attempts: the default retries a bad checksum for minutes.
  h5::PropList fapl{H5_CHECK(H5Pcreate(H5P_FILE_ACCESS))};
  H5_CHECK(H5Pset_metadata_read_attempts(fapl.get(), 2));
  h5::File file{H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl.get())};
  if (!file) {
    // Files from other tools may only open plainly.
    const std::string swmr_error = h5::last_error();
    file = h5::File{H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get())};
    if (!file) throw StoreError(open_failure(path, file_size, swmr_error, h5::last_error()));
  }
  return file;
}

}  // namespace detail

namespace {

ResultsFile read_file(const std::string& path, bool with_results) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) throw StoreError("no such file");
  if (!fs::is_regular_file(st)) throw StoreError("not a regular file");
  const std::uintmax_t file_size = fs::file_size(path, ec);

  if (file_size == 0) throw StoreError("empty file (0 bytes): not an HDF5 file");
  if (::access(path.c_str(), R_OK) != 0)
    throw StoreError(std::string("cannot read it: ") + std::strerror(errno));
  const std::string not_hdf5 = "not an HDF5 file (or it is truncated/corrupted): ";
  if (const htri_t is_hdf5 = H5Fis_hdf5(path.c_str()); is_hdf5 <= 0)
    throw StoreError(is_hdf5 == 0 ? not_hdf5 + "no HDF5 signature" : open_failure(path, file_size, h5::last_error(), ""));
  h5::File file = open_for_reading(path, file_size);

  // HDF5 1.10.8 reads past buffers (H5O_attr_decode) and crashes (H5Aiterate2 on a half-built
  // table) on damaged metadata in the old format, object header version 1, which has no
  // checksums; the fuzzer found both, and h5py crashes on such files too. ranktune writes
  // version 2 headers only, whose checksums stop damage before HDF5 decodes it, so a file
  // is read only when every object the reader opens has one. The root is checked first:
  // its links locate the others.
  for (const char* name : {".", "stack", "trials", "results", "events", "workers", "checkpoints", "checkpoint_data"}) {
    if (name[0] != '.' && H5_CHECK(H5Lexists(file.get(), name, H5P_DEFAULT)) == 0) continue;
    require_checksummed(file.get(), name);
  }
  if (H5_CHECK(H5Aexists(file.get(), "schema_version")) == 0)
    throw StoreError("not a ranktune results file (no schema_version attribute)");
  const long long version = read_int_attr(file.get(), "schema_version");
  if (version < kMinSchemaVersion || version > kSchemaVersion)
    throw StoreError("schema version " + std::to_string(version) + ", but ranktune " +
                     RANKTUNE_VERSION + " reads schema version " + std::to_string(kSchemaVersion) +
                     " and older (down to " + std::to_string(kMinSchemaVersion) + ") only");

  for (const TableSpec* spec : {&kTrials, &kResults, &kEvents, &kWorkersTable})
    if (H5_CHECK(H5Lexists(file.get(), spec->name, H5P_DEFAULT)) == 0)
      throw StoreError(std::string("not a ranktune results file (no /") + spec->name + " table)");

  ResultsFile out;
  out.path = path;
  out.meta = read_meta(file.get());
  {
    const RawTable trials = read_table(file.get(), kTrials, file_size);
    out.trial_rows = trials.rows;
    out.trials = read_trials(trials, out.schema);
  }
  if (with_results) out.results = read_results(read_table(file.get(), kResults, file_size), out.schema);
  out.events = read_events(read_table(file.get(), kEvents, file_size));
  out.workers = read_workers(read_table(file.get(), kWorkersTable, file_size));
  if (H5_CHECK(H5Lexists(file.get(), kCheckpoints.name, H5P_DEFAULT)) > 0)
    out.checkpoints = read_checkpoint_rows(read_table(file.get(), kCheckpoints, file_size));
  return out;
}

// ------------------------------------------------------------------------ writing tables

// One appendable table: rows are packed into `buffer` and written by append().
struct Table {
  Layout layout;
  h5::Datatype type;
  h5::Dataset ds;
  std::vector<std::byte> buffer;
  std::size_t used = 0;  ///< bytes of `buffer` that hold rows not yet written
  hsize_t rows = 0;  // rows in the file
  hsize_t chunk_rows = 0;

  void create(hid_t file, const TableSpec& spec, Layout row_layout) {
    layout = std::move(row_layout);
    type = layout.type();
    chunk_rows = spec.chunk_rows;
    hsize_t zero = 0, unlimited = H5S_UNLIMITED, chunk = spec.chunk_rows;
    h5::Dataspace space{H5_CHECK(H5Screate_simple(1, &zero, &unlimited))};
    h5::PropList dcpl{H5_CHECK(H5Pcreate(H5P_DATASET_CREATE))};
    H5_CHECK(H5Pset_chunk(dcpl.get(), 1, &chunk));
    ds = h5::Dataset{H5_CHECK(H5Dcreate2(file, spec.name, type.get(), space.get(), H5P_DEFAULT,
                                         dcpl.get(), H5P_DEFAULT))};
  }

  // Opens an existing table to append to it; the layout is the file's.
  void open(hid_t file, const TableSpec& spec) {
    ds = h5::Dataset{H5_CHECK(H5Dopen2(file, spec.name, H5P_DEFAULT))};
    chunk_rows = spec.chunk_rows;
    h5::Datatype file_type{H5_CHECK(H5Dget_type(ds.get()))};
    layout = layout_from_file(file_type.get(), spec);
    type = layout.type();
    h5::Dataspace space{H5_CHECK(H5Dget_space(ds.get()))};
    H5_CHECK(H5Sget_simple_extent_dims(space.get(), &rows, nullptr));
  }

  // `buffer` keeps its size across commits and `used` says how much of it holds rows:
  // growing it with resize() per row would zero each row before it is filled, a cost paid
  // on every result.
  std::byte* add_row() {
    const std::size_t n = layout.row_size();
    if (used + n > buffer.size()) buffer.resize(std::max(2 * buffer.size(), used + n));
    std::byte* row = buffer.data() + used;
    used += n;
    return row;
  }
  std::size_t pending() const { return used / layout.row_size(); }
  // At most what appending `rows` rows can make HDF5 allocate: the chunks they fill.
  std::uint64_t bytes_for(std::size_t new_rows) const {
    return static_cast<std::uint64_t>(new_rows + chunk_rows) * layout.row_size();
  }

  void extend(hsize_t extent) {
    H5_CHECK(H5Dset_extent(ds.get(), &extent));
    rows = extent;
  }

  // Writes `count` packed rows to the elements selected in `file_space`.
  void write(hid_t file_space, hsize_t count, const void* data) {
    h5::Dataspace mem{H5_CHECK(H5Screate_simple(1, &count, nullptr))};
    H5_CHECK(H5Dwrite(ds.get(), type.get(), mem.get(), file_space, H5P_DEFAULT, data));
  }

  // Overwrites existing rows (row index -> packed row) with one point selection, so
  // rewrites cost one write like an append does; grows the table to the highest row first.
  void rewrite(std::map<hsize_t, std::vector<std::byte>>& dirty) {
    if (dirty.empty()) return;
    const hsize_t highest = dirty.rbegin()->first + 1;
    if (highest > rows) extend(highest);
    std::vector<hsize_t> coords;
    std::vector<std::byte> packed;
    for (const auto& [row, bytes] : dirty) {
      coords.push_back(row);
      packed.insert(packed.end(), bytes.begin(), bytes.end());
    }
    h5::Dataspace space{H5_CHECK(H5Dget_space(ds.get()))};
    H5_CHECK(H5Sselect_elements(space.get(), H5S_SELECT_SET, coords.size(), coords.data()));
    write(space.get(), coords.size(), packed.data());
    dirty.clear();
  }

  // Group commit: one set_extent and one write for every row buffered since the last call.
  void append() {
    hsize_t count = pending();
    if (count == 0) return;
    hsize_t first = rows;
    extend(first + count);
    h5::Dataspace space{H5_CHECK(H5Dget_space(ds.get()))};
    H5_CHECK(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, &first, nullptr, &count, nullptr));
    write(space.get(), count, buffer.data());
    used = 0;
  }
};

}  // namespace

// ------------------------------------------------------------------------ public API

StoreMeta experiment_meta(const ExperimentConfig& cfg, const std::string& command_line) {
  StoreMeta meta;
  meta.experiment = cfg.name;
  meta.metric = cfg.metric;
  meta.mode = cfg.mode;
  meta.config_text = cfg.text;
  for (const auto& o : cfg.overrides) meta.overrides += o + "\n";
  meta.command_line = command_line;
  return meta;
}

StoreSchema StoreSchema::from(const search::Space& space, std::vector<std::string> metrics) {
  StoreSchema schema;
  schema.metrics = std::move(metrics);
  for (const search::Param& p : space.params) {
    ParamColumn column{p.name, p.domain.type(), 0};
    if (column.type == search::ValueType::String) {
      column.length = 8;
      for (const search::Value& v : p.domain.values)
        if (const auto* s = std::get_if<std::string>(&v)) column.length = std::max(column.length, s->size());
    }
    schema.params.push_back(std::move(column));
  }
  return schema;
}

ResultsFile ResultsFile::read(const std::string& path, bool results) {
  h5::quiet();
  try {
    return read_file(path, results);
  } catch (const h5::CallError& e) {
    throw StoreError(path + ": corrupted or unreadable (restore it from a copy): " + e.what());
  } catch (const std::exception& e) {  // bad_alloc and filesystem errors too: one line
    throw StoreError(path + ": " + e.what());
  }
}

namespace {

// Status flags of a version 2/3 superblock (HDF5's H5F_SUPER_*).
constexpr unsigned kSuperWriteAccess = 0x1, kSuperSwmrWriteAccess = 0x4;

// What a resumed writer builds on, and every file ranktune leaves at rest holds (see
// read_for_resume). Cheap: one pass over each table, and a sort of the result keys.
void check_at_rest(const ResultsFile& f) {
  const auto n = static_cast<search::TrialId>(f.trials.size());
  if (f.trials.size() != f.trial_rows) {
    std::size_t row = 0;
    while (row < f.trials.size() && f.trials[row].id == static_cast<search::TrialId>(row + 1)) ++row;
    throw StoreError("/trials row " + std::to_string(row) + " was never written (its trial_id is 0), though /trials has " +
                     std::to_string(f.trial_rows) + " rows: a run writes every trial's row when it creates the trial, "
                     "so its ids are 1.." + std::to_string(f.trial_rows) + "; the file is damaged");
  }
  struct Key {
    search::TrialId trial;
    int attempt;
    std::int64_t iteration;
    std::size_t row;
  };
  std::vector<Key> keys;
  keys.reserve(f.results.size());
  for (std::size_t i = 0; i < f.results.size(); ++i) {
    const ResultRow& r = f.results[i];
    const std::string where = "/results row " + std::to_string(i) + " ";
    if (r.trial < 1 || r.trial > n)
      throw StoreError(where + "is about trial " + std::to_string(r.trial) + ", which /trials does not hold (it has trials 1.." +
                       std::to_string(n) + ")" +
                       (r.trial == 0 && r.iteration == 0 ? ": a row of zeros, as a file cut short and filled up again has" : "") +
                       "; the file is damaged");
    if (r.attempt < 0 || r.iteration < 1)
      throw StoreError(where + "(trial " + std::to_string(r.trial) + ") has attempt " + std::to_string(r.attempt) +
                       " and iteration " + std::to_string(r.iteration) +
                       " (attempts count from 0, iterations from 1); the file is damaged");
    keys.push_back({r.trial, r.attempt, r.iteration, i});
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    return std::tie(a.trial, a.attempt, a.iteration, a.row) < std::tie(b.trial, b.attempt, b.iteration, b.row);
  });
  for (std::size_t i = 1; i < keys.size(); ++i) {
    const Key &a = keys[i - 1], &b = keys[i];
    if (a.trial == b.trial && a.attempt == b.attempt && a.iteration == b.iteration)
      throw StoreError("/results rows " + std::to_string(a.row) + " and " + std::to_string(b.row) + " both record trial " +
                       std::to_string(a.trial) + ", attempt " + std::to_string(a.attempt) + ", iteration " +
                       std::to_string(a.iteration) + " (a run records each once); the file is damaged");
  }
  for (std::size_t i = 0; i < f.checkpoints.size(); ++i) {
    const CheckpointRow& c = f.checkpoints[i];
    if (!c.dropped && (c.trial < 0 || c.trial > n))
      throw StoreError("/checkpoints row " + std::to_string(i) + " is a checkpoint of trial " + std::to_string(c.trial) +
                       ", which /trials does not hold (it has trials 1.." + std::to_string(n) + "); the file is damaged");
  }
}

}  // namespace

std::optional<ResultsFile> read_for_resume(const std::string& path) {
  h5::quiet();
  std::error_code ec;
  if (fs::exists(path, ec) && fs::is_regular_file(path, ec)) {
    // First, so that a live run's file is refused for what it is, not for a row in flight.
    try {
      const WriterLock probe(path);
    } catch (const StoreError& e) {
      throw StoreError(path + ": cannot resume: " + e.what());
    }
    if (const auto flags = superblock_flags(path);
        flags && (*flags & kSuperWriteAccess) != 0 && (*flags & kSuperSwmrWriteAccess) == 0) {
      // Its writer died between opening it and starting SWMR writing, when it had written
      // nothing yet (ResultsWriter allocates no space before H5Fstart_swmr_write): so its
      // end-of-file mark is exact, and a shorter file was cut short.
      const std::uint64_t size = fs::file_size(path, ec), expected = superblock_eof(path);
      if (expected > size)
        throw StoreError(path + ": cannot resume: truncated: the file has " + std::to_string(size) + " bytes of the " +
                         std::to_string(expected) + " its header records (a copy cut short, or a full disk); copy it "
                         "again from the original");
      return std::nullopt;
    }
  }
  ResultsFile file = ResultsFile::read(path);
  try {
    check_at_rest(file);
  } catch (const StoreError& e) {
    throw StoreError(path + ": cannot resume: " + e.what() + "; restore it from a copy, or start afresh with --results NEW");
  }
  return file;
}


struct ResultsWriter::Impl {
  std::string path;
  StoreSchema schema;
  WriterLock lock;  // released after the file is closed
  SpaceReserve space;  // given back after the file is closed, before the lock's fd closes
  h5::File file;  // declared first: closed after every dataset
  Table trials, results, events, workers;
  std::map<hsize_t, std::vector<std::byte>> dirty_trials;  // row (id - 1) -> packed row
  std::vector<std::size_t> metrics_by_name;  // metric columns of `results`, sorted by name
  Table checkpoints;
  h5::Dataset checkpoint_data;
  hsize_t checkpoint_bytes = 0;  // extent of checkpoint_data
  struct Stored {
    CheckpointRow row;
    hsize_t index = 0;  // row of /checkpoints (rows past checkpoints.rows are still buffered)
  };
  std::map<CheckpointKey, Stored> checkpoint_index;  // live checkpoints only
  std::map<hsize_t, std::vector<std::byte>> dirty_checkpoints;  // flushed rows now dropped
  // Schema v1 tables cannot flag a row dropped, so such a file never frees bytes.
  bool can_drop = true;
  bool data_unflushed = false;  ///< checkpoint bytes written since the last flush()
  FreeSpace free_space;
  std::vector<std::pair<hsize_t, hsize_t>> freed_unflushed;  // free after the next flush
  // (offset, size) of the checkpoints a CheckpointSource is reading: a dropped range among
  // them stays in freed_unflushed until the read ends, so its bytes cannot change under it.
  mutable std::multiset<std::pair<hsize_t, hsize_t>> reading;
  RetentionPolicy retention;
  // The experiment metric at each trial's latest result (index = id), for keep_best.
  std::string metric;
  std::size_t metric_column = 0;  ///< its column in `results` (layout size when absent)
  std::vector<std::pair<std::int64_t, double>> last_score;

  void create(const StoreMeta& meta, const std::vector<WorkerInfo>& worker_list, bool& created);
  void open_existing(ResumeInfo& info);
  void reserve(std::uint64_t more);
  void create_checkpoint_tables(hid_t root);
  void drop(std::map<CheckpointKey, Stored>::iterator it);
  void index_metrics();
  void pack_trial(const search::Trial& t, std::byte* row) const;
};

void ResultsWriter::Impl::create(const StoreMeta& meta, const std::vector<WorkerInfo>& worker_list,
                                 bool& created) {
  std::vector<std::string> param_names, metric_names = schema.metrics;
  for (ParamColumn& p : schema.params) {
    param_names.push_back(p.name);
    if (p.type == search::ValueType::String && p.length == 0) p.length = 8;
    if (p.length > kMaxParamWidth) throw StoreError("parameter '" + p.name + "' is wider than 64 KiB");
  }
  check_extra_names(kTrials, param_names, "parameter");
  check_extra_names(kResults, metric_names, "metric");

  std::error_code ec;
  if (fs::exists(path, ec)) throw StoreError("already exists (refusing to overwrite it)");
  // SWMR needs the latest format; it also gives checksummed metadata, so the reader
  // detects corruption instead of following garbage.
  h5::PropList fapl{H5_CHECK(H5Pcreate(H5P_FILE_ACCESS))};
  H5_CHECK(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST));
  file = h5::File{H5_CHECK(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()))};
  created = true;
  lock = WriterLock(path);
  space.fd = lock.fd();
  reserve(0);
  metric = meta.metric;

  const hid_t root = file.get();
  write_int_attr(root, "schema_version", kSchemaVersion);
  write_string_attr(root, "ranktune_version", RANKTUNE_VERSION);
  write_text(root, "experiment", meta.experiment);
  write_text(root, "metric", meta.metric);
  write_string_attr(root, "mode", search::to_string(meta.mode));
  write_text(root, "config", meta.config_text);
  write_text(root, "overrides", meta.overrides);
  write_text(root, "command_line", meta.command_line);
  write_string_attr(root, "created", meta.created.empty() ? iso8601_utc_now() : meta.created);
  {
    // The same instant as a number (Unix epoch seconds): times in the file count from it,
    // across resumed runs. Files from before it have only "created" and still read.
    std::int64_t unix_seconds = meta.created_unix;
    std::tm tm{};
    if (unix_seconds == 0 && !meta.created.empty() && strptime(meta.created.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) != nullptr)
      unix_seconds = timegm(&tm);
    if (unix_seconds == 0) unix_seconds = std::time(nullptr);  // within the second "created" was read
    h5::Dataspace scalar{H5_CHECK(H5Screate(H5S_SCALAR))};
    h5::Attribute attr{H5_CHECK(H5Acreate2(root, "created_unix", H5T_STD_I64LE, scalar.get(), H5P_DEFAULT, H5P_DEFAULT))};
    H5_CHECK(H5Awrite(attr.get(), H5T_NATIVE_INT64, &unix_seconds));
  }
  {
    h5::Group stack{H5_CHECK(H5Gcreate2(root, "stack", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT))};
    for (const auto& [key, value] : meta.stack)
      write_string_attr(stack.get(), key.c_str(),
                        std::string_view(value).substr(0, utf8_prefix(value, kMaxTextAttribute)));
  }  // attributes and groups must be closed before SWMR writing starts

  Layout trial_layout = fixed_layout(kTrials);
  for (const ParamColumn& p : schema.params) trial_layout.add(p.name, kind_of(p.type), p.length);
  Layout result_layout = fixed_layout(kResults);
  for (const std::string& m : schema.metrics) result_layout.add(m, Kind::F64);
  trials.create(root, kTrials, std::move(trial_layout));
  results.create(root, kResults, std::move(result_layout));
  index_metrics();
  events.create(root, kEvents, fixed_layout(kEvents));
  workers.create(root, kWorkersTable, fixed_layout(kWorkersTable));
  create_checkpoint_tables(root);

  for (const WorkerInfo& w : worker_list) {
    std::byte* row = workers.add_row();
    const Layout& L = workers.layout;
    put_int(row, L[kWkRank], w.rank);
    put_str(row, L[kWkHost], w.host);
    put_int(row, L[kWkLocal], w.local_index);
    put_str(row, L[kWkDevice], w.device);
    put_str(row, L[kWkDeviceName], w.device_name);
  }
  workers.append();
  H5_CHECK(H5Fstart_swmr_write(root));
}

void ResultsWriter::Impl::index_metrics() {
  metrics_by_name.clear();
  metric_column = results.layout.size();
  for (std::size_t c = kResultFixed; c < results.layout.size(); ++c) {
    metrics_by_name.push_back(c);
    if (results.layout[c].name == metric) metric_column = c;
  }
  std::sort(metrics_by_name.begin(), metrics_by_name.end(),
            [&](std::size_t a, std::size_t b) { return results.layout[a].name < results.layout[b].name; });
}

namespace {

h5::Dataset create_byte_dataset(hid_t root, hsize_t chunk = kCheckpointChunk) {
  hsize_t zero = 0, unlimited = H5S_UNLIMITED;
  h5::Dataspace space{H5_CHECK(H5Screate_simple(1, &zero, &unlimited))};
  h5::PropList dcpl{H5_CHECK(H5Pcreate(H5P_DATASET_CREATE))};
  H5_CHECK(H5Pset_chunk(dcpl.get(), 1, &chunk));
  return h5::Dataset{H5_CHECK(
      H5Dcreate2(root, kCheckpointData, H5T_NATIVE_UINT8, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT))};
}

}  // namespace

void ResultsWriter::Impl::create_checkpoint_tables(hid_t root) {
  checkpoints.create(root, kCheckpoints, checkpoint_layout());
  checkpoint_data = create_byte_dataset(root);
}

void ResultsWriter::Impl::drop(std::map<CheckpointKey, Stored>::iterator it) {
  if (!can_drop) {  // schema v1: forgotten for this run, but its row cannot say so
    checkpoint_index.erase(it);
    return;
  }
  Stored& s = it->second;
  s.row.dropped = true;
  if (s.index >= checkpoints.rows) {  // still buffered: flag it there
    pack_checkpoint_row(checkpoints.layout, s.row,
                        checkpoints.buffer.data() + (s.index - checkpoints.rows) * checkpoints.layout.row_size());
  } else {
    std::vector<std::byte>& packed = dirty_checkpoints[s.index];
    packed.assign(checkpoints.layout.row_size(), std::byte{0});
    pack_checkpoint_row(checkpoints.layout, s.row, packed.data());
  }
  if (s.row.size > 0) freed_unflushed.emplace_back(s.row.offset, s.row.size);
  checkpoint_index.erase(it);
}

namespace detail {

void require_checksummed(hid_t loc, const char* name) {
  H5O_info_t info{};
  H5_CHECK(H5Oget_info_by_name2(loc, name, &info, H5O_INFO_HDR, H5P_DEFAULT));
  if (info.hdr.version < 2)
    throw StoreError(std::string("not a ranktune results file: ") + (name[0] == '.' ? "the file" : name) +
                     " is in HDF5's old format, without metadata checksums, which ranktune never "
                     "writes and does not read (another tool rewrote it? read the file ranktune wrote)");
}

std::string mend_status_flags(const std::string& path) {
  // No shell: the path goes to h5clear as one argument, whatever characters it holds.
  sys::RunOptions options;
  options.merge_stderr = true;
  options.timeout_s = 120;  // it rewrites a superblock: a hang is a stuck file system
  const sys::RunResult r = sys::run_program({"h5clear", "-s", "--increment", path}, options);
  if (r.timed_out) return "h5clear did not finish within 120 s";
  if (r.status < 0) return r.err + " (h5clear comes with hdf5-tools)";
  if (r.status != 0) return "h5clear failed" + (r.out.empty() ? std::string() : ": " + r.out.substr(0, r.out.find('\n')));
  return {};
}

}  // namespace detail

const search::Trial* ResultsFile::trial(search::TrialId id) const {
  const auto it = std::find_if(trials.begin(), trials.end(), [&](const search::Trial& t) { return t.id == id; });
  return it == trials.end() ? nullptr : &*it;
}

bool marked_open_for_writing(const std::string& path) {
  const auto flags = superblock_flags(path);
  return flags && *flags != 0;
}

bool is_hdf5_file(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) == 0) return false;
  h5::quiet();
  return H5Fis_hdf5(path.c_str()) > 0;
}

void ResultsWriter::Impl::open_existing(ResumeInfo& info) {
  if (!is_hdf5_file(path)) throw StoreError("not an HDF5 file: nothing to resume");
  lock = WriterLock(path);  // before mending: never clear the flags of a live writer
  space.fd = lock.fd();
  h5::PropList fapl{H5_CHECK(H5Pcreate(H5P_FILE_ACCESS))};
  H5_CHECK(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST));
  file = h5::File{H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.get())};
  if (!file) {
    // Most likely the writer died (kill -9, node failure) while it held the file open for
    // SWMR writing: the superblock still says so, and HDF5 refuses to open it again.
    const std::string first = h5::last_error();
    if (const std::string why = mend_status_flags(path); !why.empty())
      throw StoreError("cannot open it to resume (" + first + "), and mending it failed: " + why);
    info.mended = true;
    file = h5::File{H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.get())};
    if (!file) throw StoreError("cannot open it to resume even after clearing its status flags: " + h5::last_error());
  }
  const hid_t root = file.get();
  trials.open(root, kTrials);
  results.open(root, kResults);
  events.open(root, kEvents);
  workers.open(root, kWorkersTable);
  metric = read_text(root, "metric").value_or("");
  if (H5_CHECK(H5Lexists(root, kCheckpoints.name, H5P_DEFAULT)) > 0) {
    checkpoints.open(root, kCheckpoints);
    can_drop = column_index(checkpoints.layout, kCkDroppedName).has_value();
    checkpoint_data = h5::Dataset{H5_CHECK(H5Dopen2(root, kCheckpointData, H5P_DEFAULT))};
    h5::Dataspace space{H5_CHECK(H5Dget_space(checkpoint_data.get()))};
    H5_CHECK(H5Sget_simple_extent_dims(space.get(), &checkpoint_bytes, nullptr));
    const std::vector<CheckpointRow> rows = read_checkpoint_rows(read_table(root, kCheckpoints, fs::file_size(path)));
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const CheckpointRow& r = rows[i];
      if (r.dropped || r.offset < 0 || r.size < 0 || static_cast<hsize_t>(r.offset + r.size) > checkpoint_bytes)
        continue;  // dropped, or torn by a crash
      const CheckpointKey key{r.trial, r.iteration};
      // A later row for the same checkpoint supersedes the earlier one, as it did for the
      // writer that stored them; the earlier row is flagged at the next flush.
      if (auto old = checkpoint_index.find(key); old != checkpoint_index.end()) drop(old);
      checkpoint_index[key] = {r, i};
    }
    if (can_drop) {
      // Free is what no live checkpoint holds: dropped bytes, and bytes a crash left
      // without a row. Everything here was flushed, so all of it is free at once.
      std::vector<std::pair<std::uint64_t, std::uint64_t>> used;
      for (const auto& [key, stored] : checkpoint_index)
        used.emplace_back(static_cast<std::uint64_t>(stored.row.offset), static_cast<std::uint64_t>(stored.row.size));
      free_space = FreeSpace::gaps(std::move(used), checkpoint_bytes);
      freed_unflushed.clear();
    }
  } else {
    create_checkpoint_tables(root);  // a file from before checkpoints existed
  }
  for (std::size_t c = kTrialFixed; c < trials.layout.size(); ++c) {
    const Column& col = trials.layout[c];
    schema.params.push_back({col.name,
                             col.kind == Kind::Str   ? search::ValueType::String
                             : col.kind == Kind::F64 ? search::ValueType::Float
                                                     : search::ValueType::Int,
                             col.kind == Kind::Str ? col.size : 0});
  }
  for (std::size_t c = kResultFixed; c < results.layout.size(); ++c) schema.metrics.push_back(results.layout[c].name);
  index_metrics();
  for (const auto& [key, stored] : checkpoint_index) {
    if (key.first == 0) info.state_sequence = std::max(info.state_sequence, key.second);
  }
  H5_CHECK(H5Fstart_swmr_write(root));
  reserve(0);  // a resume onto a full disk stops here, before its first row
}

// Holds disk space for what HDF5 will write next: fallocate(2) (FALLOC_FL_KEEP_SIZE) from the
// end of the file's data to `more` bytes (and kSpareBytes) past HDF5's end of allocation.
// HDF5 goes on flushing metadata after a data write fails (H5Fflush), so on a full disk it
// committed table extents over rows that never reached the file (zero rows, a /trials row
// "never written"): a write that a reservation covers cannot fail, and a reservation that
// fails throws DiskFullError before HDF5 writes anything, leaving the file as the last
// commit left it. Where the file system has no fallocate, HDF5's own errors are all there is.
void ResultsWriter::Impl::reserve(std::uint64_t more) {
  constexpr std::uint64_t kSpareBytes = 512 << 10;  // metadata (object headers, chunk indexes)
  if (!space.enabled || space.fd < 0 || !file) return;
  haddr_t eoa = 0;
  struct stat st {};
  if (H5Fget_eoa(file.get(), &eoa) < 0 || ::fstat(space.fd, &st) != 0) return;
  const std::uint64_t from = std::min<std::uint64_t>(static_cast<std::uint64_t>(st.st_size), eoa);
  const std::uint64_t to = eoa + more + kSpareBytes;
  if (::fallocate(space.fd, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(from), static_cast<off_t>(to - from)) == 0) {
    space.end = std::max(space.end, to);
    return;
  }
  if (errno == ENOSPC || errno == EDQUOT) throw DiskFullError(disk_full_message(path, to - from));
  space.enabled = false;  // EOPNOTSUPP (some network file systems), or EINTR: not worth retrying
}

void ResultsWriter::Impl::pack_trial(const search::Trial& t, std::byte* row) const {
  const Layout& L = trials.layout;
  put_int(row, L[kTrialId], t.id);
  put_str(row, L[kStatus], search::to_string(t.status));
  put_int(row, L[kAttempt], t.attempt);
  put_int(row, L[kIterations], t.iterations);
  put_f64(row, L[kBest], t.best);
  put_int(row, L[kBestIteration], t.best_iteration);
  put_f64(row, L[kLast], t.last);
  put_f64(row, L[kStart], t.start_time);
  put_f64(row, L[kEnd], t.end_time);
  // The ranks running it, or once it stopped, those that ran its last attempt.
  put_str(row, L[kWorkers], join_ranks(t.workers.empty() ? t.ran_on : t.workers, L[kWorkers].size));
  put_str(row, L[kError], t.error);
  put_str(row, L[kLogTail], t.log_tail);
  for (std::size_t c = kTrialFixed; c < L.size(); ++c) {
    auto it = t.config.find(L[c].name);
    put_value(row, L[c], it == t.config.end() ? nullptr : &it->second);
  }
}


ResultsWriter::ResultsWriter(const std::string& path, const StoreMeta& meta,
                             const StoreSchema& schema, const std::vector<WorkerInfo>& workers)
    : impl_(std::make_unique<Impl>()) {
  h5::quiet();
  impl_->path = path;
  impl_->schema = schema;
  bool created = false;
  try {
    writing(path, [&] { impl_->create(meta, workers, created); });
  } catch (const std::exception& e) {
    impl_.reset();  // closes every handle before the half-made file is removed
    std::error_code ec;
    if (created) fs::remove(path, ec);
    if (dynamic_cast<const DiskFullError*>(&e) != nullptr) throw DiskFullError(path + ": " + e.what());
    throw StoreError(path + ": " + e.what());
  }
}

ResultsWriter::ResultsWriter(const std::string& path, ResumeInfo& info) : impl_(std::make_unique<Impl>()) {
  h5::quiet();
  impl_->path = path;
  try {
    writing(path, [&] { impl_->open_existing(info); });
  } catch (const DiskFullError& e) {
    throw DiskFullError(path + ": cannot resume: " + e.what());
  } catch (const h5::CallError& e) {
    throw StoreError(path + ": cannot resume: " + e.what());
  } catch (const std::exception& e) {
    throw StoreError(path + ": cannot resume: " + e.what());
  }
  state_sequence_ = info.state_sequence;
}

void ResultsWriter::append_state(double time, std::string_view state) {
  append_checkpoint(0, 0, ++state_sequence_, time, state);
  // Only the newest state is ever read back (resume), and the new one reaches the file in
  // the same flush that flags the old one dropped.
  if (impl_->retention.enabled()) drop_checkpoint(0, state_sequence_ - 1);
}

std::optional<std::string> ResultsWriter::latest_state() const {
  if (state_sequence_ == 0) return std::nullopt;
  return read_checkpoint(0, state_sequence_);
}

std::map<search::TrialId, std::int64_t> ResultsWriter::latest_checkpoints() const {
  std::map<search::TrialId, std::int64_t> latest;
  for (const auto& [key, stored] : impl_->checkpoint_index) {
    if (key.first > 0) latest[key.first] = std::max(latest[key.first], key.second);
  }
  return latest;
}

ResultsWriter::~ResultsWriter() {
  try {
    flush();
  } catch (...) {  // destructors never throw; flush() errors were already reportable
  }
}

void ResultsWriter::write_trial(const search::Trial& trial) {
  // Ids bound the table's extent, so a garbage id must not grow the file to petabytes.
  if (trial.id < 1 || trial.id > 1'000'000'000)
    throw StoreError(impl_->path + ": trial id " + std::to_string(trial.id) + " is out of range");
  std::vector<std::byte>& row = impl_->dirty_trials[static_cast<hsize_t>(trial.id - 1)];
  row.assign(impl_->trials.layout.row_size(), std::byte{0});
  impl_->pack_trial(trial, row.data());
}

std::size_t ResultsWriter::append_result(search::TrialId trial, int attempt, std::int64_t iteration,
                                         double time, const search::Metrics& metrics) {
  Table& t = impl_->results;
  std::byte* row = t.add_row();
  put_int(row, t.layout[kResTrial], trial);
  put_int(row, t.layout[kResAttempt], attempt);
  put_int(row, t.layout[kResIteration], iteration);
  put_f64(row, t.layout[kResTime], time);
  // Both sides are sorted by name (metrics_by_name orders the columns once), so one merge
  // pass matches them: a string comparison per column, no lookups.
  std::size_t recorded = 0;
  bool scored = false;
  double score = NAN;
  auto m = metrics.begin();
  for (const std::size_t c : impl_->metrics_by_name) {
    const std::string& name = t.layout[c].name;
    int order = 1;
    while (m != metrics.end() && (order = m->first.compare(name)) < 0) ++m;
    const bool found = order == 0;
    recorded += found;
    const double v = found ? m->second : NAN;
    put_f64(row, t.layout[c], v);
    if (c == impl_->metric_column) {
      scored = found;
      score = v;
    }
  }
  // The checkpoint of this iteration, if one comes, is judged by this value (keep_best).
  if (scored && trial > 0 && trial <= 1'000'000'000) {
    auto& scores = impl_->last_score;
    if (static_cast<std::size_t>(trial) >= scores.size()) scores.resize(static_cast<std::size_t>(trial) + 1, {0, NAN});
    scores[static_cast<std::size_t>(trial)] = {iteration, score};
  }
  return recorded;
}

void ResultsWriter::append_event(const EventRow& event) {
  Table& t = impl_->events;
  std::byte* row = t.add_row();
  put_f64(row, t.layout[kEvTime], event.time);
  put_int(row, t.layout[kEvTrial], event.trial);
  put_int(row, t.layout[kEvWorker], event.worker);
  put_str(row, t.layout[kEvKind], event.kind);
  put_str(row, t.layout[kEvMessage], event.message);
}

ResultsWriter::CheckpointSink ResultsWriter::begin_checkpoint(search::TrialId trial, int attempt,
                                                              std::int64_t iteration, std::uint64_t size) {
  h5::quiet();
  return writing(impl_->path, [&] { return with_context(impl_->path + ": " + checkpoint_name(trial, iteration) + ": ", [&] {
    Impl& m = *impl_;
    if (size > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      throw StoreError("a size of " + std::to_string(size) + " bytes is out of range");
    const hsize_t offset = size == 0 ? 0 : m.free_space.allocate(size, m.checkpoint_bytes);
    // Its bytes may all land in chunks not allocated yet (HDF5 allocates chunks whole).
    if (size > 0) {
      try {
        m.reserve(((offset + size - 1) / kCheckpointChunk - offset / kCheckpointChunk + 1) * kCheckpointChunk);
      } catch (...) {
        m.free_space.release(offset, size);
        throw;
      }
    }
    // The dataset grows to hold the whole range now, so that the next checkpoint to begin,
    // while this one is still arriving, is placed after it.
    if (const hsize_t extent = offset + size; extent > m.checkpoint_bytes) {
      try {
        H5_CHECK(H5Dset_extent(m.checkpoint_data.get(), &extent));
      } catch (...) {
        m.free_space.release(offset, size);
        throw;
      }
      m.checkpoint_bytes = extent;
    }
    CheckpointRow row{trial, attempt, iteration, 0.0, static_cast<std::int64_t>(offset), static_cast<std::int64_t>(size)};
    return CheckpointSink(impl_.get(), row);
  }); });
}

void ResultsWriter::append_checkpoint(search::TrialId trial, int attempt, std::int64_t iteration, double time,
                                      std::string_view bytes) {
  CheckpointSink sink = begin_checkpoint(trial, attempt, iteration, bytes.size());
  sink.write(0, bytes);
  sink.finish(time);
}

ResultsWriter::CheckpointSink::CheckpointSink(ResultsWriter::Impl* impl, CheckpointRow row)
    : impl_(impl), row_(row), size_(static_cast<std::uint64_t>(row.size)) {}

ResultsWriter::CheckpointSink::CheckpointSink(CheckpointSink&& other) noexcept
    : impl_(std::exchange(other.impl_, nullptr)), row_(other.row_), size_(other.size_), written_(other.written_),
      crc_(other.crc_) {}

ResultsWriter::CheckpointSink& ResultsWriter::CheckpointSink::operator=(CheckpointSink&& other) noexcept {
  if (this != &other) {
    abandon();
    impl_ = std::exchange(other.impl_, nullptr);
    row_ = other.row_;
    size_ = other.size_;
    written_ = other.written_;
    crc_ = other.crc_;
  }
  return *this;
}

ResultsWriter::CheckpointSink::~CheckpointSink() { abandon(); }

void ResultsWriter::CheckpointSink::abandon() noexcept {
  // No row points at the range (rows are added by finish() only), so nothing that a live
  // reader or a crash recovery trusts can see its bytes change: it is free at once.
  if (impl_ != nullptr && size_ > 0) impl_->free_space.release(static_cast<hsize_t>(row_.offset), size_);
  impl_ = nullptr;
}

void ResultsWriter::CheckpointSink::write(std::uint64_t at, std::string_view bytes) {
  if (impl_ == nullptr) throw StoreError("checkpoint sink used after finish()");
  const std::string what = impl_->path + ": " + checkpoint_name(row_.trial, row_.iteration);
  if (at != written_ || bytes.size() > size_ - written_)
    throw StoreError(what + ": a piece of " + std::to_string(bytes.size()) + " bytes at byte " + std::to_string(at) +
                     " does not follow the " + std::to_string(written_) + " of " + std::to_string(size_) +
                     " bytes stored so far (pieces must come in order and fit the announced size)");
  h5::quiet();
  impl_->data_unflushed = true;
  writing(impl_->path, [&] { with_context(what + ": ", [&] {
    write_bytes(impl_->checkpoint_data.get(), static_cast<hsize_t>(row_.offset) + at, bytes, impl_->checkpoint_bytes);
  }); });
  crc_ = io::crc32c(std::as_bytes(std::span(bytes.data(), bytes.size())), crc_);
  written_ += bytes.size();
}

void ResultsWriter::CheckpointSink::finish(double time) {
  if (impl_ == nullptr) throw StoreError("checkpoint sink used after finish()");
  Impl& m = *impl_;
  if (written_ != size_)
    throw StoreError(m.path + ": " + checkpoint_name(row_.trial, row_.iteration) + " ended after " +
                     std::to_string(written_) + " of its " + std::to_string(size_) + " bytes");
  CheckpointRow r = row_;
  r.time = time;
  r.crc32c = crc_;
  if (r.trial > 0 && static_cast<std::size_t>(r.trial) < m.last_score.size() &&
      m.last_score[static_cast<std::size_t>(r.trial)].first == r.iteration)
    r.score = m.last_score[static_cast<std::size_t>(r.trial)].second;
  const CheckpointKey key{r.trial, r.iteration};
  // A second checkpoint of the same iteration (a retry that saved again) replaces the first.
  if (auto old = m.checkpoint_index.find(key); old != m.checkpoint_index.end()) m.drop(old);
  const hsize_t index = m.checkpoints.rows + m.checkpoints.pending();
  pack_checkpoint_row(m.checkpoints.layout, r, m.checkpoints.add_row());
  m.checkpoint_index[key] = {r, index};
  impl_ = nullptr;  // the range now belongs to the row
}

ResultsWriter::CheckpointSource ResultsWriter::open_checkpoint(search::TrialId trial, std::int64_t iteration) const {
  const auto it = impl_->checkpoint_index.find({trial, iteration});
  if (it == impl_->checkpoint_index.end())
    throw StoreError(impl_->path + ": no checkpoint of trial " + std::to_string(trial) + " at iteration " +
                     std::to_string(iteration));
  const CheckpointRow& r = it->second.row;
  if (static_cast<hsize_t>(r.offset + r.size) > impl_->checkpoint_bytes)
    throw StoreError(impl_->path + ": " + checkpoint_name(trial, iteration) + ": its bytes [" +
                     std::to_string(r.offset) + ", " + std::to_string(r.offset + r.size) +
                     ") lie outside /checkpoint_data (" + std::to_string(impl_->checkpoint_bytes) +
                     " bytes): the file is damaged");
  return CheckpointSource(impl_.get(), r);
}

std::string ResultsWriter::read_checkpoint(search::TrialId trial, std::int64_t iteration) const {
  CheckpointSource source = open_checkpoint(trial, iteration);
  std::string bytes = source.read(source.size());
  source.verify();
  return bytes;
}

ResultsWriter::CheckpointSource::CheckpointSource(const ResultsWriter::Impl* impl, CheckpointRow row)
    : impl_(impl), row_(row) {
  impl_->reading.emplace(static_cast<hsize_t>(row_.offset), static_cast<hsize_t>(row_.size));
}

ResultsWriter::CheckpointSource::CheckpointSource(CheckpointSource&& other) noexcept
    : impl_(std::exchange(other.impl_, nullptr)), row_(other.row_), read_(other.read_), crc_(other.crc_) {}

ResultsWriter::CheckpointSource& ResultsWriter::CheckpointSource::operator=(CheckpointSource&& other) noexcept {
  if (this != &other) {
    release();
    impl_ = std::exchange(other.impl_, nullptr);
    row_ = other.row_;
    read_ = other.read_;
    crc_ = other.crc_;
  }
  return *this;
}

ResultsWriter::CheckpointSource::~CheckpointSource() { release(); }

void ResultsWriter::CheckpointSource::release() noexcept {
  if (impl_ == nullptr) return;
  const auto it = impl_->reading.find({static_cast<hsize_t>(row_.offset), static_cast<hsize_t>(row_.size)});
  if (it != impl_->reading.end()) impl_->reading.erase(it);
  impl_ = nullptr;
}

std::string ResultsWriter::CheckpointSource::read(std::uint64_t max_bytes) {
  if (impl_ == nullptr) throw StoreError("checkpoint source used after a move");
  const hsize_t n = std::min<std::uint64_t>(max_bytes, size() - read_);
  h5::quiet();
  std::string bytes = with_context(impl_->path + ": " + checkpoint_name(row_.trial, row_.iteration) + ": ", [&] {
    return read_bytes(impl_->checkpoint_data.get(), static_cast<hsize_t>(row_.offset) + read_, n);
  });
  crc_ = io::crc32c(std::as_bytes(std::span(bytes.data(), bytes.size())), crc_);
  read_ += n;
  return bytes;
}

void ResultsWriter::CheckpointSource::verify() const {
  const std::string what = (impl_ ? impl_->path : std::string("results file")) + ": " +
                           checkpoint_name(row_.trial, row_.iteration);
  if (!done())
    throw StoreError(what + ": only " + std::to_string(read_) + " of its " + std::to_string(size()) +
                     " bytes were read before checking them");
  if (crc_ != row_.crc32c) throw StoreError(what + " fails its checksum (the file is damaged)");
}

void ResultsWriter::set_retention(const RetentionPolicy& policy) {
  if (policy.enabled() && !impl_->can_drop)
    throw StoreError(impl_->path + ": schema version 1 file: its /checkpoints table cannot mark checkpoints "
                     "dropped, so [checkpoint] keep_last/keep_best cannot apply. Run `ranktune compact " +
                     impl_->path + "` to upgrade it, or remove keep_last/keep_best");
  impl_->retention = policy;
}

std::vector<CheckpointKey> ResultsWriter::apply_retention(const std::set<CheckpointKey>& pinned) {
  std::vector<CheckpointKey> dropped;
  if (!impl_->retention.enabled()) return dropped;
  auto& index = impl_->checkpoint_index;
  // The index is ordered by (trial, iteration): one pass hands the policy each trial's run.
  std::vector<CheckpointScore> live;
  std::set<std::int64_t> pins;
  for (auto it = index.lower_bound({1, std::numeric_limits<std::int64_t>::min()}); it != index.end();) {
    const search::TrialId trial = it->first.first;
    live.clear();
    pins.clear();
    for (; it != index.end() && it->first.first == trial; ++it) {
      live.push_back({it->first.second, it->second.row.score});
      if (pinned.count(it->first) > 0) pins.insert(it->first.second);
    }
    for (const std::int64_t iteration : checkpoints_to_drop(live, impl_->retention, pins))
      dropped.emplace_back(trial, iteration);
  }
  for (const CheckpointKey& key : dropped) impl_->drop(index.find(key));
  return dropped;
}

bool ResultsWriter::drop_checkpoint(search::TrialId trial, std::int64_t iteration) {
  const auto it = impl_->checkpoint_index.find({trial, iteration});
  if (it == impl_->checkpoint_index.end()) return false;
  impl_->drop(it);
  return true;
}

std::int64_t ResultsWriter::previous_checkpoint(search::TrialId trial, std::int64_t iteration) const {
  const auto& index = impl_->checkpoint_index;
  auto it = index.lower_bound({trial, iteration});
  if (it == index.begin()) return 0;
  --it;
  return it->first.first == trial ? it->first.second : 0;
}

CheckpointSpace ResultsWriter::checkpoint_space() const {
  CheckpointSpace space;
  space.extent = impl_->checkpoint_bytes;
  space.free = impl_->free_space.total();
  for (const auto& [key, stored] : impl_->checkpoint_index) space.live += static_cast<std::uint64_t>(stored.row.size);
  return space;
}

void ResultsWriter::flush() {
  h5::quiet();
  writing(impl_->path, [&] { with_context(impl_->path + ": ", [&] {
    // Checkpoint bytes reach the file before any row that points at them: H5Dflush writes
    // the dataset's cached chunks and their index, so a write that fails here (a full
    // disk) throws before a new /checkpoints row is even handed to HDF5, and a row is
    // never committed over bytes that are not in the file. The rows stay buffered: the
    // next flush that gets through commits them.
    Impl& m = *impl_;
    m.reserve(m.results.bytes_for(m.results.pending()) + m.events.bytes_for(m.events.pending()) +
              m.checkpoints.bytes_for(m.checkpoints.pending()) + m.trials.bytes_for(m.dirty_trials.size()));
    if (impl_->data_unflushed) {
      H5_CHECK(H5Dflush(impl_->checkpoint_data.get()));
      impl_->data_unflushed = false;
    }
    impl_->results.append();
    impl_->events.append();
    impl_->checkpoints.append();
    // Dropped flags go out only once the rows that supersede them are in the file: within
    // one H5Fflush HDF5 writes a rewritten chunk and a dataset's new extent in no set order,
    // and after kill -9 in between, the kill loop test found the newest experiment state
    // flagged dropped while the row replacing it was past the extent (no state left: the
    // resumed searcher started over and sampled extra trials).
    if (!impl_->dirty_checkpoints.empty()) H5_CHECK(H5Fflush(impl_->file.get(), H5F_SCOPE_GLOBAL));
    impl_->checkpoints.rewrite(impl_->dirty_checkpoints);
    impl_->trials.rewrite(impl_->dirty_trials);
    // H5Fflush, not only H5Dflush: recovery after kill -9 keeps only what this wrote.
    H5_CHECK(H5Fflush(impl_->file.get(), H5F_SCOPE_GLOBAL));
    // The file now says these bytes are dropped, so overwriting them cannot hurt a row
    // that a crash recovery or a live reader would still trust.
    // A range that a CheckpointSource still reads waits for a later flush.
    auto& freed = impl_->freed_unflushed;
    const auto being_read = [&](const std::pair<hsize_t, hsize_t>& range) {
      for (const auto& [offset, size] : impl_->reading)
        if (offset < range.first + range.second && range.first < offset + size) return true;
      return false;
    };
    const auto kept = std::stable_partition(freed.begin(), freed.end(), being_read);
    for (auto it = kept; it != freed.end(); ++it) impl_->free_space.release(it->first, it->second);
    freed.erase(kept, freed.end());
  }); });
}

std::size_t ResultsWriter::pending() const {
  return impl_->results.pending() + impl_->events.pending() + impl_->checkpoints.pending() +
         impl_->dirty_trials.size() + impl_->dirty_checkpoints.size();
}

const std::string& ResultsWriter::path() const { return impl_->path; }

std::string read_checkpoint_bytes(const ResultsFile& file, const CheckpointRow& row) {
  h5::quiet();
  const std::string what = file.path + ": " + checkpoint_name(row.trial, row.iteration);
  if (row.dropped) throw StoreError(what + " was dropped (by retention, or after failing its checksum): its bytes are gone");
  if (row.offset < 0 || row.size < 0)
    throw StoreError(what + " has no bytes (offset " + std::to_string(row.offset) + ", size " + std::to_string(row.size) + ")");
  std::string bytes = with_context(what + ": ", [&] {
    std::error_code ec;
    const h5::File f = open_for_reading(file.path, fs::file_size(file.path, ec));
    const h5::Dataset ds{H5_CHECK(H5Dopen2(f.get(), kCheckpointData, H5P_DEFAULT))};
    return read_bytes(ds.get(), static_cast<hsize_t>(row.offset), static_cast<hsize_t>(row.size));
  });
  if (crc_of(bytes) != row.crc32c) throw StoreError(what + " fails its checksum (the file is damaged)");
  return bytes;
}

namespace {

// Copies every attribute of `from` to `to` byte for byte, in its own file type.
void copy_attributes(hid_t from, hid_t to) {
  for (const std::string& name : attribute_names(from)) {
    h5::Attribute src{H5_CHECK(H5Aopen(from, name.c_str(), H5P_DEFAULT))};
    h5::Datatype type{H5_CHECK(H5Aget_type(src.get()))};
    h5::Dataspace space{H5_CHECK(H5Aget_space(src.get()))};
    const auto points = H5_CHECK(H5Sget_simple_extent_npoints(space.get()));
    std::vector<std::byte> buffer(H5Tget_size(type.get()) * static_cast<std::size_t>(points));
    H5_CHECK(H5Aread(src.get(), type.get(), buffer.data()));
    h5::Attribute dst{H5_CHECK(H5Acreate2(to, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT))};
    H5_CHECK(H5Awrite(dst.get(), type.get(), buffer.data()));
  }
}

std::vector<std::string> link_names(hid_t group) {
  std::vector<std::string> names;
  auto collect = [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
    try {
      static_cast<std::vector<std::string>*>(data)->emplace_back(name);
      return 0;
    } catch (...) {
      return -1;  // exceptions must not unwind through HDF5's C frames
    }
  };
  H5_CHECK(H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names));
  return names;
}

// Removes a file on scope exit unless release()d: a failed compact leaves nothing behind.
class RemoveOnFailure {
 public:
  explicit RemoveOnFailure(fs::path path) : path_(std::move(path)) {}
  RemoveOnFailure(const RemoveOnFailure&) = delete;
  RemoveOnFailure& operator=(const RemoveOnFailure&) = delete;
  ~RemoveOnFailure() {
    std::error_code ec;
    if (!path_.empty()) fs::remove(path_, ec);
  }
  void release() { path_.clear(); }

 private:
  fs::path path_;
};

// Writes the compacted copy of `src` to `tmp`; the caller renames it into place.
CompactSummary write_compacted(const ResultsFile& src, const std::string& tmp) {
  CompactSummary summary;
  std::error_code ec;
  const h5::File in = open_for_reading(src.path, fs::file_size(src.path, ec));
  h5::PropList fapl{H5_CHECK(H5Pcreate(H5P_FILE_ACCESS))};
  // The latest format, as the writer uses: a resumed run needs it for SWMR.
  H5_CHECK(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST));
  const h5::File out{H5_CHECK(H5Fcreate(tmp.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()))};
  copy_attributes(in.get(), out.get());
  {
    // The copy has the dropped flags whatever the source's schema was.
    h5::Attribute version{H5_CHECK(H5Aopen(out.get(), "schema_version", H5P_DEFAULT))};
    const int v = kSchemaVersion;
    H5_CHECK(H5Awrite(version.get(), H5T_NATIVE_INT, &v));
  }
  for (const std::string& name : link_names(in.get())) {
    if (name == kCheckpoints.name || name == kCheckpointData) continue;
    H5_CHECK(H5Ocopy(in.get(), name.c_str(), out.get(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT));
  }
  h5::Dataset data_in;
  if (H5_CHECK(H5Lexists(in.get(), kCheckpointData, H5P_DEFAULT)) > 0)
    data_in = h5::Dataset{H5_CHECK(H5Dopen2(in.get(), kCheckpointData, H5P_DEFAULT))};
  Table rows;
  rows.create(out.get(), kCheckpoints, checkpoint_layout());
  // Chunks are allocated whole: a few small checkpoints in 1 MiB chunks would keep the
  // compacted file as large as before, so small data gets smaller chunks (64 KiB at least).
  hsize_t live_bytes = 0;
  for (const CheckpointRow& r : src.checkpoints)
    if (!r.dropped && r.size > 0) live_bytes += static_cast<hsize_t>(r.size);
  hsize_t chunk = 64 * 1024;
  while (chunk < live_bytes && chunk < kCheckpointChunk) chunk *= 2;
  const h5::Dataset data_out = create_byte_dataset(out.get(), chunk);
  hsize_t cursor = 0;
  for (CheckpointRow r : src.checkpoints) {
    bool live = !r.dropped && r.offset >= 0 && r.size >= 0 && data_in;
    if (live) {
      try {
        const std::string bytes = read_bytes(data_in.get(), static_cast<hsize_t>(r.offset), static_cast<hsize_t>(r.size));
        if (crc_of(bytes) != r.crc32c) throw StoreError("checksum mismatch");
        write_bytes(data_out.get(), cursor, bytes, cursor + bytes.size());
        r.offset = static_cast<std::int64_t>(cursor);
        cursor += bytes.size();
        ++summary.live;
      } catch (const StoreError&) {
        // A damaged checkpoint could never be restored; copying its bytes would only
        // move the damage. Its row stays, dropped, like any other lost checkpoint.
        live = false;
        ++summary.damaged;
      }
    } else {
      ++summary.dropped;
    }
    if (!live) {
      r.dropped = true;
      r.offset = -1;  // its bytes are not in this file
    }
    pack_checkpoint_row(rows.layout, r, rows.add_row());
  }
  rows.append();
  H5_CHECK(H5Fflush(out.get(), H5F_SCOPE_GLOBAL));
  return summary;
}

struct FileStamp {
  std::uintmax_t size = 0;
  fs::file_time_type mtime{};
  bool operator==(const FileStamp&) const = default;
};

FileStamp stamp(const std::string& path) {
  std::error_code ec;
  return {fs::file_size(path, ec), fs::last_write_time(path, ec)};
}

}  // namespace

CompactSummary compact_results(const std::string& in, const std::string& out) {
  h5::quiet();
  const ResultsFile src = ResultsFile::read(in);  // foreign, truncated, damaged: refused here
  if (const auto flags = superblock_flags(in); flags && *flags != 0)
    throw StoreError(in + ": a writer holds it (its HDF5 superblock says it is open for writing): a run is "
                     "writing it, or one was killed. Wait for the run to end, or resume the killed run "
                     "(`ranktune run --resume` mends the file), then compact it");
  const fs::path target = out.empty() ? fs::path(in) : fs::path(out);
  std::error_code ec;
  if (!out.empty() && fs::exists(target, ec))
    throw StoreError(out + ": already exists (refusing to overwrite it; choose another -o path)");
  const FileStamp before = stamp(in);
  const fs::path tmp = target.parent_path() / ("." + target.filename().string() + ".compact-" +
                                               std::to_string(::getpid()) + ".tmp");
  RemoveOnFailure cleanup(tmp);
  CompactSummary summary;
  try {
    summary = write_compacted(src, tmp.string());
  } catch (const std::exception& e) {
    throw StoreError(in + ": cannot compact into " + tmp.string() + ": " + e.what());
  }
  // rename(2) is atomic, but only durable once the new file's bytes are on disk.
  if (const sys::UniqueFd fd(::open(tmp.c_str(), O_RDONLY | O_CLOEXEC)); fd && ::fsync(fd.get()) != 0)
    throw StoreError(tmp.string() + ": fsync failed: " + std::strerror(errno));
  if (!(stamp(in) == before))
    throw StoreError(in + ": changed while it was being compacted (did a run start writing it?); nothing was "
                     "replaced. Compact it again once the run has ended");
  if (::rename(tmp.c_str(), target.c_str()) != 0)
    throw StoreError(target.string() + ": cannot replace it with the compacted copy: " + std::strerror(errno));
  cleanup.release();
  summary.bytes_before = before.size;
  summary.bytes_after = fs::file_size(target, ec);
  return summary;
}

}  // namespace ranktune::io
