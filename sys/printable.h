#pragma once
/// Text from a trial (metric names it reported, its error, its log tail, event messages) made
/// safe to print on a terminal. A trial's program writes whatever bytes it likes; printed raw,
/// an escape sequence in them moves the cursor, rewrites the window title, hides lines or
/// worse (some terminals answer queries into their input). Every printer of such text (rank
/// 0's warnings, `ranktune report` in its text formats, error messages) passes it through
/// printable().

#include <string>
#include <string_view>

namespace ranktune::sys {

/// Whether newlines and tabs stay as they are (a log tail) or are escaped like the others.
enum class Lines { Escape, Keep };

/// `s` with every control character shown visibly instead: C0 controls (ESC as "\x1b";
/// newline and tab too, unless `lines` is Keep; carriage return always, "\x0d", since it
/// lets a line overwrite another), DEL as "\x7f", C1 controls (U+0080 to U+009F, which some
/// terminals obey as ESC [ and the like) as "\u009b", and bytes that are not UTF-8 as "\xff".
/// Valid UTF-8 otherwise passes unchanged; so does a backslash.
std::string printable(std::string_view s, Lines lines = Lines::Escape);

/// A JSON text with the C1 controls inside its strings written as "\u009b" escapes: the same
/// JSON, safe on a terminal. (JSON writers escape C0 controls, ESC among them, but leave
/// U+0080 to U+009F raw.) Bytes that are not UTF-8 are left for the writer to have replaced.
std::string printable_json(std::string_view json);

}  // namespace ranktune::sys
