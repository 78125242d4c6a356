// Packed rows, typed tables, byte datasets and attributes in HDF5 (see io/h5_table.h).
#include "io/h5_table.h"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <limits>
#include <span>
#include <utility>

#include "io/crc32c.h"

namespace ranktune::io::detail {

// ------------------------------------------------------------------------ row layouts

void Layout::add(std::string name, Kind kind, std::size_t str_len) {
  std::size_t size = kind == Kind::Str ? str_len : kind == Kind::I32 ? 4 : 8;
  columns_.push_back({std::move(name), kind, size, row_size_});
  row_size_ += size;
}

h5::Datatype Layout::type() const {
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

Layout fixed_layout(const TableSpec& spec) {
  Layout layout;
  for (const FixedColumn& f : spec.fixed) layout.add(f.name, f.kind, f.length);
  for (const FixedColumn& f : spec.optional) layout.add(f.name, f.kind, f.length);
  layout.set_first_free(layout.size());
  return layout;
}

std::optional<std::size_t> column_index(const Layout& layout, std::string_view name) {
  for (std::size_t c = 0; c < layout.size(); ++c)
    if (layout[c].name == name) return c;
  return std::nullopt;
}

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

void put_row(std::byte* row, const Layout& L, std::initializer_list<Field> fields) {
  std::size_t i = 0;
  for (const Field& f : fields) {
    const Column& c = L[i++];
    if (const auto* s = std::get_if<std::string_view>(&f)) {
      put_str(row, c, *s);
    } else if (const auto* d = std::get_if<double>(&f)) {
      if (c.kind == Kind::F64) put_f64(row, c, *d);
      else put_int(row, c, static_cast<std::int64_t>(*d));
    } else {
      const std::int64_t v = std::get<std::int64_t>(f);
      if (c.kind == Kind::F64) put_f64(row, c, static_cast<double>(v));
      else put_int(row, c, v);
    }
  }
}

// ------------------------------------------------------------------------ reading tables

namespace {

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

}  // namespace

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
  // The optional and legacy columns this file has, in the spec's order.
  for (const std::span<const FixedColumn> some : {spec.optional, spec.legacy}) {
    for (const FixedColumn& f : some) {
      const int index = H5Tget_member_index(file_type, f.name);
      if (index < 0) continue;  // a file from before (optional) or after (legacy) the column
      h5::Datatype member{H5_CHECK(H5Tget_member_type(file_type, static_cast<unsigned>(index)))};
      auto kind = member_kind(member.get());
      if (!kind || !same_class(kind->first, f.kind))
        throw StoreError(std::string("column '") + f.name + "' has the wrong type");
      layout.add(f.name, f.kind, kind->second);
    }
  }
  int count = H5_CHECK(H5Tget_nmembers(file_type));
  // Derived columns (TableSpec::derived) where the file has them, in its order.
  for (unsigned i = 0; spec.derived != nullptr && i < static_cast<unsigned>(count); ++i) {
    const std::string name = member_name(file_type, i);
    if (!spec.derived(name)) continue;
    h5::Datatype member{H5_CHECK(H5Tget_member_type(file_type, i))};
    auto kind = member_kind(member.get());
    if (!kind) throw StoreError("column '" + name + "' has an unsupported type");
    layout.add(name, kind->first, kind->second);
  }
  layout.set_first_free(layout.size());
  for (unsigned i = 0; i < static_cast<unsigned>(count); ++i) {
    std::string name = member_name(file_type, i);
    const auto named = [&](const FixedColumn& f) { return name == f.name; };
    if (std::any_of(spec.fixed.begin(), spec.fixed.end(), named) ||
        std::any_of(spec.optional.begin(), spec.optional.end(), named) ||
        std::any_of(spec.legacy.begin(), spec.legacy.end(), named) || (spec.derived != nullptr && spec.derived(name)))
      continue;
    h5::Datatype member{H5_CHECK(H5Tget_member_type(file_type, i))};
    auto kind = member_kind(member.get());
    if (!kind) throw StoreError("column '" + name + "' has an unsupported type");
    layout.add(name, kind->first, kind->second);
  }
  return layout;
}

RawTable read_table(hid_t loc, const TableSpec& spec, std::uintmax_t file_size) {
  return with_context(std::string("/") + spec.name + ": ", [&] {
    h5::Dataset ds{H5_CHECK(H5Dopen2(loc, spec.name, H5P_DEFAULT))};
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

// ------------------------------------------------------------------------ writing tables

void Table::create(hid_t loc, const TableSpec& spec, Layout row_layout, bool deflate) {
  layout = std::move(row_layout);
  type = layout.type();
  chunk_rows = spec.chunk_rows;
  hsize_t zero = 0, unlimited = H5S_UNLIMITED, chunk = spec.chunk_rows;
  h5::Dataspace space{H5_CHECK(H5Screate_simple(1, &zero, &unlimited))};
  h5::PropList dcpl{H5_CHECK(H5Pcreate(H5P_DATASET_CREATE))};
  H5_CHECK(H5Pset_chunk(dcpl.get(), 1, &chunk));
  if (deflate) {
    // Shuffle first: it puts byte k of every row together, so the zero padding of strings
    // and the high bytes of ids and counts become long runs. Level 1: the higher levels
    // were hardly smaller and much slower (docs/architecture.md, "Results file size").
    H5_CHECK(H5Pset_shuffle(dcpl.get()));
    H5_CHECK(H5Pset_deflate(dcpl.get(), 1));
  }
  ds = h5::Dataset{H5_CHECK(H5Dcreate2(loc, spec.name, type.get(), space.get(), H5P_DEFAULT,
                                       dcpl.get(), H5P_DEFAULT))};
}

void Table::open(hid_t loc, const TableSpec& spec) {
  ds = h5::Dataset{H5_CHECK(H5Dopen2(loc, spec.name, H5P_DEFAULT))};
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
std::byte* Table::add_row() {
  const std::size_t n = layout.row_size();
  if (used + n > buffer.size()) buffer.resize(std::max(2 * buffer.size(), used + n));
  std::byte* row = buffer.data() + used;
  used += n;
  return row;
}

void Table::extend(hsize_t extent) {
  H5_CHECK(H5Dset_extent(ds.get(), &extent));
  rows = extent;
}

// Writes `count` packed rows to the elements selected in `file_space`.
void Table::write(hid_t file_space, hsize_t count, const void* data) {
  h5::Dataspace mem{H5_CHECK(H5Screate_simple(1, &count, nullptr))};
  H5_CHECK(H5Dwrite(ds.get(), type.get(), mem.get(), file_space, H5P_DEFAULT, data));
}

void Table::rewrite(std::map<hsize_t, std::vector<std::byte>>& dirty) {
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

void Table::append() {
  hsize_t count = pending();
  if (count == 0) return;
  hsize_t first = rows;
  extend(first + count);
  h5::Dataspace space{H5_CHECK(H5Dget_space(ds.get()))};
  H5_CHECK(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, &first, nullptr, &count, nullptr));
  write(space.get(), count, buffer.data());
  used = 0;
}

// ------------------------------------------------------------------------ byte datasets

h5::Dataset create_byte_dataset(hid_t loc, const char* name, hsize_t chunk) {
  hsize_t zero = 0, unlimited = H5S_UNLIMITED;
  h5::Dataspace space{H5_CHECK(H5Screate_simple(1, &zero, &unlimited))};
  h5::PropList dcpl{H5_CHECK(H5Pcreate(H5P_DATASET_CREATE))};
  H5_CHECK(H5Pset_chunk(dcpl.get(), 1, &chunk));
  return h5::Dataset{H5_CHECK(
      H5Dcreate2(loc, name, H5T_NATIVE_UINT8, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT))};
}

hsize_t extent_of(hid_t ds) {
  h5::Dataspace space{H5_CHECK(H5Dget_space(ds))};
  if (H5_CHECK(H5Sget_simple_extent_ndims(space.get())) != 1) throw StoreError("is not a one-dimensional table");
  hsize_t n = 0;
  H5_CHECK(H5Sget_simple_extent_dims(space.get(), &n, nullptr));
  return n;
}

std::string read_bytes(hid_t ds, hsize_t offset, hsize_t size, const char* name) {
  std::string bytes(size, '\0');
  if (size == 0) return bytes;
  h5::Dataspace file_space{H5_CHECK(H5Dget_space(ds))};
  hsize_t extent = 0;
  H5_CHECK(H5Sget_simple_extent_dims(file_space.get(), &extent, nullptr));
  if (offset > extent || size > extent - offset)
    throw StoreError("its bytes [" + std::to_string(offset) + ", " + std::to_string(offset + size) + ") lie outside /" +
                     name + " (" + std::to_string(extent) + " bytes): the file is damaged");
  H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &offset, nullptr, &size, nullptr));
  h5::Dataspace mem_space{H5_CHECK(H5Screate_simple(1, &size, nullptr))};
  H5_CHECK(H5Dread(ds, H5T_NATIVE_UINT8, mem_space.get(), file_space.get(), H5P_DEFAULT, bytes.data()));
  return bytes;
}

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

// ------------------------------------------------------------------------ attributes

std::string iso8601_utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

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

namespace {

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

}  // namespace

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

void require_checksummed(hid_t loc, const char* name) {
  H5O_info_t info{};
  H5_CHECK(H5Oget_info_by_name2(loc, name, &info, H5O_INFO_HDR, H5P_DEFAULT));
  if (info.hdr.version < 2)
    throw StoreError(std::string("not a ranktune results file: ") + (name[0] == '.' ? "the file" : name) +
                     " is in HDF5's old format, without metadata checksums, which ranktune never "
                     "writes and does not read (another tool rewrote it? read the file ranktune wrote)");
}

}  // namespace ranktune::io::detail
