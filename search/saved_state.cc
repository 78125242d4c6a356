// StateWriter and StateReader: the one text form of an algorithm's saved state, written
// and checked field by field (search/saved_state.h: the form and its version rule).
#include "search/saved_state.h"

#include <charconv>
#include <cmath>
#include <initializer_list>
#include <istream>
#include <ostream>
#include <stdexcept>

namespace ranktune::search {

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// Concatenates by append: GCC 12 warns (-Wrestrict, falsely) on some chains of operator+.
std::string cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (const std::string_view p : parts) out.append(p);
  return out;
}

}  // namespace

// ---------------------------------------------------------------- StateWriter

StateWriter::StateWriter(std::string_view tag, int version) { out_ << tag << ' ' << version; }

void StateWriter::separate() {
  if (!line_start_) out_ << ' ';
  line_start_ = false;
}

StateWriter& StateWriter::field(std::string_view name) {
  if (!line_start_) out_ << '\n';
  out_ << name;
  line_start_ = false;
  return *this;
}

StateWriter& StateWriter::line() {
  out_ << '\n';
  line_start_ = true;
  return *this;
}

StateWriter& StateWriter::integer(std::int64_t v) {
  separate();
  out_ << v;
  return *this;
}

StateWriter& StateWriter::number(double v) {
  separate();
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  out_.write(buf, r.ptr - buf);
  return *this;
}

StateWriter& StateWriter::text(std::string_view s) {
  separate();
  out_ << s.size() << ' ' << s;
  return *this;
}

StateWriter& StateWriter::value(const Value& v, const char (&tags)[4]) {
  separate();
  out_ << tags[v.index()];
  if (const auto* d = std::get_if<double>(&v)) return number(*d);
  if (const auto* i = std::get_if<std::int64_t>(&v)) return integer(*i);
  return text(std::get<std::string>(v));
}

StateWriter& StateWriter::inner(const std::string& state) {
  out_ << "\ninner " << state.size() << '\n' << state;
  line_start_ = false;
  return *this;
}

// ---------------------------------------------------------------- StateReader

StateReader::StateReader(const std::string& state, std::string owner)
    : text_(state), version_(1), owner_(std::move(owner)) {}

StateReader::StateReader(const std::string& state, std::string_view tag, int newest, std::string owner,
                         int named_since)
    : StateReader(state, std::move(owner)) {
  const auto expected = [&] { return "expected a '" + std::string(tag) + " VERSION' header"; };
  skip_space();
  if (pos_ == text_.size() || word("header") != tag) fail(expected());
  std::string_view v = word("the version");
  int version = 0;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), version);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size() || version < 1) fail(expected());
  if (version > newest) {
    fail("version " + std::to_string(version) + " was written by a newer ranktune (this one reads " +
         std::string(tag) + " versions 1 to " + std::to_string(newest) + "); resume with that version");
  }
  version_ = version;
  named_ = version >= named_since;
}

StateReader StateReader::untagged(const std::string& state, std::string owner) {
  return StateReader(state, std::move(owner));
}

void StateReader::fail(const std::string& why) const {
  throw std::invalid_argument(owner_ + ": saved state: " + why);
}

void StateReader::require(bool ok, const std::string& why) const {
  if (!ok) fail(why);
}

void StateReader::skip_space() {
  while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
}

std::string_view StateReader::word(std::string_view what) {
  skip_space();
  if (pos_ == text_.size()) fail("ends where " + std::string(what) + " was expected");
  const std::size_t begin = pos_;
  while (pos_ < text_.size() && !is_space(text_[pos_])) ++pos_;
  return std::string_view(text_).substr(begin, pos_ - begin);
}

void StateReader::field(std::string_view name) {
  if (!named_) return;  // an older layout, without the names
  const std::string_view w = word(cat({"'", name, "'"}));
  if (w != name) fail(cat({"expected '", name, "', found '", w, "'"}));
}

std::int64_t StateReader::integer_field(std::string_view name, std::int64_t min, std::int64_t max) {
  field(name);
  return integer(name, min, max);
}

std::size_t StateReader::count_field(std::string_view name) {
  field(name);
  return count(name);
}

std::int64_t StateReader::integer(std::string_view what, std::int64_t min, std::int64_t max) {
  const std::string_view w = word(what);
  std::int64_t v = 0;
  const auto r = std::from_chars(w.data(), w.data() + w.size(), v);
  if (r.ec != std::errc() || r.ptr != w.data() + w.size()) {
    fail("expected an integer for " + std::string(what) + ", found '" + std::string(w) + "'");
  }
  if (v < min || v > max) {
    fail(std::string(what) + " = " + std::to_string(v) + " is out of range (" + std::to_string(min) + " to " +
         std::to_string(max) + ")");
  }
  return v;
}

std::size_t StateReader::count(std::string_view what) {
  // Each counted item takes at least one character: a larger count is damage, and is
  // refused before a caller sizes anything by it.
  return static_cast<std::size_t>(integer(what, 0, static_cast<std::int64_t>(text_.size() - pos_)));
}

bool StateReader::flag(std::string_view what) { return integer(what, 0, 1) == 1; }

double StateReader::number(std::string_view what) {
  const std::string_view w = word(what);
  double v = 0;
  const auto r = std::from_chars(w.data(), w.data() + w.size(), v);
  if (r.ec != std::errc() || r.ptr != w.data() + w.size()) {
    fail("expected a number for " + std::string(what) + ", found '" + std::string(w) + "'");
  }
  return v;
}

double StateReader::finite(std::string_view what) {
  const double v = number(what);
  require(std::isfinite(v), std::string(what) + " must be finite");
  return v;
}

std::string StateReader::text(std::string_view what) {
  const auto n = static_cast<std::size_t>(integer(cat({what, "'s length"}), 0));
  if (pos_ == text_.size() || text_[pos_] != ' ') fail("expected 'LENGTH text' for " + std::string(what));
  ++pos_;
  if (n > text_.size() - pos_) fail(std::string(what) + " is shorter than its length");
  std::string s = text_.substr(pos_, n);
  pos_ += n;
  return s;
}

Value StateReader::value(std::string_view what, const char (&tags)[4]) {
  const std::string_view tag = word(cat({what, "'s type"}));
  if (tag.size() == 1 && tag[0] == tags[0]) return number(what);
  if (tag.size() == 1 && tag[0] == tags[1]) return integer(what);
  if (tag.size() == 1 && tag[0] == tags[2]) return text(what);
  fail("unknown value type '" + std::string(tag) + "' for " + std::string(what) + " (expected " +
       std::string(tags, 3) + ")");
}

std::string StateReader::inner() {
  field("inner");
  const auto n = static_cast<std::size_t>(integer("the inner state's length", 0));
  if (pos_ == text_.size() || text_[pos_] != '\n') fail("expected a newline after 'inner LENGTH'");
  ++pos_;
  if (n > text_.size() - pos_) fail("the inner state is shorter than its length");
  if (n < text_.size() - pos_) fail("unexpected text after the inner state");
  std::string s = text_.substr(pos_);
  pos_ = text_.size();
  return s;
}

void StateReader::finish() {
  skip_space();
  if (pos_ != text_.size()) {
    const std::size_t end = text_.find_first_of(" \n", pos_);
    const std::string_view rest = std::string_view(text_).substr(pos_, end == std::string::npos ? end : end - pos_);
    fail(cat({"unexpected '", rest, "' after the last field"}));
  }
}

// ---------------------------------------------------------------- nested texts

void write_text(std::ostream& out, const std::string& s) { out << s.size() << ' ' << s; }

std::string read_text(std::istream& in, const std::string& what) {
  long long n = -1;
  if (!(in >> n) || n < 0 || in.get() != ' ') {
    throw std::invalid_argument("saved state: expected 'LENGTH text' for " + what);
  }
  std::string s(static_cast<std::size_t>(n), '\0');
  if (!in.read(s.data(), n)) throw std::invalid_argument("saved state: " + what + " shorter than its length");
  return s;
}

}  // namespace ranktune::search
