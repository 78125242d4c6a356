#include "search/saved_state.h"

#include <charconv>
#include <istream>
#include <ostream>
#include <stdexcept>

namespace ranktune::search {

void write_double(std::ostream& out, double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.write(buf, r.ptr - buf);
}

double read_double(std::istream& in, const std::string& what) {
  std::string word;
  if (!(in >> word)) throw std::invalid_argument("saved state: missing " + what);
  double v = 0;
  const auto r = std::from_chars(word.data(), word.data() + word.size(), v);
  if (r.ec != std::errc() || r.ptr != word.data() + word.size()) {
    throw std::invalid_argument("saved state: bad " + what + " '" + word + "'");
  }
  return v;
}

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

void write_inner(std::ostream& out, const std::string& inner) {
  out << "\ninner " << inner.size() << '\n' << inner;
}

std::string read_inner(std::istream& in) {
  std::string word;
  long long size = -1;
  if (!(in >> word >> size) || word != "inner" || size < 0 || in.get() != '\n') {
    throw std::invalid_argument("saved state: expected 'inner LENGTH' and a newline");
  }
  std::string inner(static_cast<std::size_t>(size), '\0');
  if (!in.read(inner.data(), size)) {
    throw std::invalid_argument("saved state: the inner state is shorter than its length");
  }
  if (in.peek() != std::char_traits<char>::eof()) {
    throw std::invalid_argument("saved state: unexpected text after the inner state");
  }
  return inner;
}

}  // namespace ranktune::search
