#pragma once
/// The one text form of a searcher's or scheduler's saved state (for resume): StateWriter
/// writes it and StateReader reads it, so no algorithm formats or parses text by hand; each
/// lists its fields in order. Also the length-prefixed text the controller's state nests
/// the two in.
///
/// The form: a header "TAG VERSION", then fields separated by spaces, with lines where the
/// algorithm starts one (a row of a table, a named field). A named field is its name and
/// its values ("next 5"); a table is a count and that many rows ("runs 2" then 2 lines).
/// Values are integers, doubles (shortest form that reads back bit for bit; inf, -inf and
/// nan included), texts ("LENGTH text", which may hold spaces and newlines), config values
/// (a type tag and the value), and last, a wrapped searcher's whole state
/// ("inner LENGTH", a newline and its bytes). The reader skips any run of spaces and
/// newlines between values, so the line breaks are only for people reading the state.
///
/// The version rule, the same for every algorithm: VERSION counts the layouts of one TAG,
/// from 1. A reader reads every version from 1 up to the newest it writes, asking
/// version() where a layout differs, and refuses a newer one (a newer ranktune wrote it).
/// Changing a layout (a field added, removed or read differently) makes a new version; the
/// layouts written before it stay readable, so an old results file resumes. The layouts of
/// the state each algorithm wrote before this writer existed are its version 1, unchanged;
/// the schedulers whose version 1 named no field (ASHA, its promotion variant, HyperBand,
/// PBT, median stopping) write version 2, the same layout with the names, and read both.
///
/// Every read checks what it reads and throws std::invalid_argument "OWNER: saved state:
/// ..." naming the field, so a damaged state is refused instead of half-restored: restore()
/// reads everything into locals and assigns the members only at the end.

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>

#include "search/types.h"

namespace ranktune::search {

/// A state's header, as an algorithm whose layout is chosen at run time (HyperBand's ranking)
/// declares it once for save() and restore(): StateWriter(tag, version) and
/// StateReader(state, tag, version, owner, named_since).
struct StateHeader {
  const char* tag;
  int version;
  const char* owner;
  int named_since = 1;
};

class StateWriter {
 public:
  /// Starts a state with the header "TAG VERSION".
  StateWriter(std::string_view tag, int version);
  /// Starts a named field on a new line: "\nNAME".
  StateWriter& field(std::string_view name);
  /// Ends the current line (a table's count line or row).
  StateWriter& line();
  StateWriter& integer(std::int64_t v);
  StateWriter& number(double v);
  StateWriter& text(std::string_view s);
  /// A config value: `tags` holds the type tag written for a double, an integer and a
  /// string, in that order (each algorithm keeps the tags its version 1 used).
  StateWriter& value(const Value& v, const char (&tags)[4]);
  /// The state of a wrapped searcher, last: "\ninner LENGTH\n" and its bytes.
  StateWriter& inner(const std::string& state);
  /// The state written so far.
  std::string str() const { return out_.str(); }

 private:
  void separate();
  std::ostringstream out_;
  bool line_start_ = false;
};

class StateReader {
 public:
  /// Reads the header: TAG must be `tag` and VERSION in 1..newest. `owner` names the
  /// algorithm in errors ("tpe searcher"). Field names are in the text from version
  /// `named_since` on: before it, field() reads nothing, so that one restore() reads the
  /// unnamed layout of an older version and the named one of the current version alike.
  StateReader(const std::string& state, std::string_view tag, int newest, std::string owner,
              int named_since = 1);
  /// A state without a header (random search's index; its only layout).
  static StateReader untagged(const std::string& state, std::string owner);

  int version() const { return version_; }
  /// The next word must be `name`: a named field starts (from version named_since on).
  void field(std::string_view name);
  /// A named field holding one integer ("next 5"), or a table's count ("runs 2").
  std::int64_t integer_field(std::string_view name, std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                             std::int64_t max = std::numeric_limits<std::int64_t>::max());
  std::size_t count_field(std::string_view name);
  std::int64_t integer(std::string_view what, std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                       std::int64_t max = std::numeric_limits<std::int64_t>::max());
  /// A table's row count: an integer >= 0 and no more than the values left could hold.
  std::size_t count(std::string_view what);
  /// An integer written as 0 or 1.
  bool flag(std::string_view what);
  double number(std::string_view what);
  /// A double that must be finite (a score, a point coordinate).
  double finite(std::string_view what);
  std::string text(std::string_view what);
  /// A config value written by StateWriter::value with the same `tags`.
  Value value(std::string_view what, const char (&tags)[4]);
  /// The wrapped searcher's state; nothing may follow it.
  std::string inner();
  /// Nothing but spaces and newlines may be left.
  void finish();
  /// Throws "OWNER: saved state: WHY" unless `ok`.
  void require(bool ok, const std::string& why) const;
  [[noreturn]] void fail(const std::string& why) const;

 private:
  StateReader(const std::string& state, std::string owner);
  /// The next space-separated word; fails naming `what` when none is left.
  std::string_view word(std::string_view what);
  void skip_space();
  std::string text_;
  std::size_t pos_ = 0;
  int version_ = 0;
  bool named_ = true;
  std::string owner_;
};

/// Writes "LENGTH text": the controller nests the searcher's and scheduler's states so.
void write_text(std::ostream& out, const std::string& s);
/// Reads what write_text wrote.
std::string read_text(std::istream& in, const std::string& what);

}  // namespace ranktune::search
