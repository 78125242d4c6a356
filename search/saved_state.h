#pragma once
/// The text forms shared by the save()/restore() of searchers and schedulers: doubles that
/// read back bit for bit, length-prefixed strings, and a wrapped searcher's state. Readers
/// throw std::invalid_argument naming what was expected, so a damaged state is refused
/// instead of half-restored.

#include <iosfwd>
#include <string>

namespace ranktune::search {

/// Writes `v` so that read_double gives back the same bits (shortest round-trip form;
/// "inf", "-inf" and "nan" included).
void write_double(std::ostream& out, double v);
/// Reads one whitespace-separated double written by write_double.
double read_double(std::istream& in, const std::string& what);

/// Writes "LENGTH text": the text may hold spaces and newlines.
void write_text(std::ostream& out, const std::string& s);
/// Reads what write_text wrote.
std::string read_text(std::istream& in, const std::string& what);

/// Writes a wrapped searcher's state as the last part of a decorator's state:
/// "inner LENGTH\n" and the bytes, copied whatever they contain.
void write_inner(std::ostream& out, const std::string& inner);
/// Reads what write_inner wrote; nothing may follow it.
std::string read_inner(std::istream& in);

}  // namespace ranktune::search
