#pragma once
/// Tables of packed rows in HDF5, and the attributes around them: how a row of the columns
/// that io/schema.h lists is laid out in memory and in the file, packed and unpacked,
/// appended, rewritten in place and read back whole; 1-D byte datasets; string and integer
/// attributes. Used by every table of the results file (io/results_*.cc, io/evaluations.cc).
/// Internal to io/.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <initializer_list>
#include <string_view>
#include <variant>
#include <vector>

#include "io/hdf5.h"
#include "io/schema.h"

namespace ranktune::io::detail {

/// Runs `f`, prefixing any StoreError it throws with `context` and keeping its type.
template <class F>
auto with_context(const std::string& context, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const h5::CallError& e) {
    throw h5::CallError(context + e.what(), e.sys_errno());
  } catch (const DiskFullError& e) {
    throw DiskFullError(context + e.what());
  } catch (const FileBusyError& e) {
    throw FileBusyError(context + e.what());
  } catch (const StoreError& e) {
    throw StoreError(context + e.what());
  }
}

// ------------------------------------------------------------------------ row layouts

struct Column {
  std::string name;
  Kind kind = Kind::F64;
  std::size_t size = 0;    // bytes
  std::size_t offset = 0;  // bytes from the start of the row
};

/// A packed compound row (no padding): the buffered bytes are the file's layout, so a write
/// converts nothing, and the same helper builds the memory type the reader asks for.
class Layout {
 public:
  void add(std::string name, Kind kind, std::size_t str_len = 0);
  const Column& operator[](std::size_t i) const { return columns_[i]; }
  std::size_t size() const { return columns_.size(); }
  /// The first column that is neither fixed nor optional (TableSpec): a hyperparameter of
  /// /trials, a metric of /results.
  std::size_t first_free() const { return first_free_; }
  void set_first_free(std::size_t i) { first_free_ = i; }
  std::size_t row_size() const { return row_size_; }
  /// The HDF5 compound type of the row.
  h5::Datatype type() const;

 private:
  std::vector<Column> columns_;
  std::size_t row_size_ = 0;
  std::size_t first_free_ = 0;
};

/// The fixed columns of `spec`, then its optional ones, in order.
Layout fixed_layout(const TableSpec& spec);
std::optional<std::size_t> column_index(const Layout& layout, std::string_view name);

/// Longest prefix of `s` that fits `max` bytes without splitting a UTF-8 sequence.
std::size_t utf8_prefix(std::string_view s, std::size_t max);

void put_f64(std::byte* row, const Column& c, double v);
/// An I32 column clamps `v` to its range.
void put_int(std::byte* row, const Column& c, std::int64_t v);
/// Truncated to the column's width (between UTF-8 sequences), NUL-padded.
void put_str(std::byte* row, const Column& c, std::string_view s);
std::int64_t get_int(const std::byte* row, const Column& c);
/// Any numeric column as a double (metrics may be stored as integers by other tools).
double get_f64(const std::byte* row, const Column& c);
std::string get_str(const std::byte* row, const Column& c);

/// One value of a row packed by put_row.
using Field = std::variant<std::int64_t, double, std::string_view>;
/// Packs `fields` into `row`, the i-th into column i of `L` (numbers are converted to the
/// column's kind; a string goes into a string column).
void put_row(std::byte* row, const Layout& L, std::initializer_list<Field> fields);

// ------------------------------------------------------------------------ reading tables

/// The memory layout for reading `file_type`: the fixed columns of `spec` (each must exist
/// with the right class; HDF5 converts widths by name) followed by every other member in
/// file order. Throws StoreError.
Layout layout_from_file(hid_t file_type, const TableSpec& spec);

/// A table read whole, rows packed as `layout` says.
struct RawTable {
  Layout layout;
  std::vector<std::byte> bytes;
  std::size_t rows = 0;
  const std::byte* row(std::size_t i) const { return bytes.data() + i * layout.row_size(); }
};

/// Reads the 1-D table `spec.name` below `loc` whole. `file_size` bounds what a damaged
/// extent may make it allocate. Errors are prefixed "/NAME: ".
RawTable read_table(hid_t loc, const TableSpec& spec, std::uintmax_t file_size);

// ------------------------------------------------------------------------ writing tables

/// One appendable table: rows are packed into `buffer` and written by append().
struct Table {
  Layout layout;
  h5::Datatype type;
  h5::Dataset ds;
  std::vector<std::byte> buffer;
  std::size_t used = 0;  ///< bytes of `buffer` that hold rows not yet written
  hsize_t rows = 0;      ///< rows in the file
  hsize_t chunk_rows = 0;

  /// Creates the empty, chunked, unlimited table `spec.name` below `loc`, its chunks
  /// compressed (shuffle, then deflate) when `deflate` is set. HDF5 never frees the old copy
  /// of a compressed chunk that is rewritten while SWMR writing, so that pays only where each
  /// flush fills whole chunks (see WriterOptions in io/store.h).
  void create(hid_t loc, const TableSpec& spec, Layout row_layout, bool deflate = false);
  /// Opens an existing table to append to it; the layout is the file's.
  void open(hid_t loc, const TableSpec& spec);
  /// Room for one more row at the end of the buffer, to be filled by the caller.
  std::byte* add_row();
  std::size_t pending() const { return used / layout.row_size(); }
  /// At most what appending `new_rows` rows can make HDF5 allocate: the chunks they fill.
  std::uint64_t bytes_for(std::size_t new_rows) const {
    return static_cast<std::uint64_t>(new_rows + chunk_rows) * layout.row_size();
  }
  void extend(hsize_t extent);
  /// Overwrites existing rows (row index -> packed row) with one point selection, so
  /// rewrites cost one write like an append does; grows the table to the highest row first.
  void rewrite(std::map<hsize_t, std::vector<std::byte>>& dirty);
  /// Group commit: one set_extent and one write for every row buffered since the last call.
  void append();

 private:
  void write(hid_t file_space, hsize_t count, const void* data);
};

// ------------------------------------------------------------------------ byte datasets

/// An empty, chunked, unlimited 1-D uint8 dataset `name` below `loc`.
h5::Dataset create_byte_dataset(hid_t loc, const char* name, hsize_t chunk);
/// The size of the 1-D dataset `ds`.
hsize_t extent_of(hid_t ds);
/// The bytes [offset, offset + size) of the 1-D uint8 dataset `ds` (called `name` in the
/// message of a range outside it).
std::string read_bytes(hid_t ds, hsize_t offset, hsize_t size, const char* name);
/// Writes `bytes` at `offset` of the 1-D uint8 dataset `ds`, growing it to `extent` first
/// when that is larger than its size.
void write_bytes(hid_t ds, hsize_t offset, std::string_view bytes, hsize_t extent);
std::uint32_t crc_of(std::string_view bytes);

// ------------------------------------------------------------------------ attributes

/// Now, as ISO-8601 UTC ("2026-11-29T17:20:41Z").
std::string iso8601_utc_now();

/// A fixed-length string attribute `name` on `loc`.
void write_string_attr(hid_t loc, const char* name, std::string_view text);
/// A text as a string attribute, or as a scalar string dataset `name` when it is larger than
/// kMaxTextAttribute (object headers hold attributes of at most 64 KiB).
void write_text(hid_t loc, const char* name, std::string_view text);
void write_int_attr(hid_t loc, const char* name, int value);
/// The string attribute `name`, or nullopt when there is none. Throws StoreError when it is
/// not a fixed-length string of plausible size.
std::optional<std::string> read_string_attr(hid_t loc, const char* name);
/// What write_text() wrote: the attribute, else the dataset, else nullopt.
std::optional<std::string> read_text(hid_t loc, const char* name);
/// A scalar integer attribute. Throws StoreError (also when it is missing).
long long read_int_attr(hid_t loc, const char* name);
/// The names of the attributes of `loc`, and of the links in the group `group`.
std::vector<std::string> attribute_names(hid_t loc);
std::vector<std::string> link_names(hid_t group);

/// Throws StoreError unless the object `name` (relative to `loc`; "." for `loc` itself) has
/// a version 2 object header. HDF5 1.10.8 reads past buffers and crashes on damaged
/// metadata in the old format (version 1, no checksums); ranktune writes version 2 only,
/// whose checksums stop damage before HDF5 decodes it, so every object a reader opens is
/// checked first.
void require_checksummed(hid_t loc, const char* name);

}  // namespace ranktune::io::detail
