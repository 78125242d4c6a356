#pragma once
/// The byte encoding of the wire's messages (mpi/wire.h): a plain little archive that runs
/// the messages' own `serialize(ar, version)` functions, the ones Boost.Serialization runs
/// for the Setup's broadcast.
///
/// Why not Boost.MPI's packed archives, which the wire used before: each message built an
/// archive whose buffer comes from MPI_Alloc_mem and whose save walks Boost's type
/// registries. A tight loop hides it (about 1 us per Result), but a worker that has slept
/// through a 50 ms trial runs that code cold, and the pack of its Result, the unpack of its
/// next Start and the pack of its Placed were most of the ~85 us it spent between two
/// trials (CHANGELOG.md, issue 16). This encoding is a few appends into a
/// reused buffer.
///
/// Layout: integers, doubles and bools as their bytes in the machine's order (every rank of
/// a job runs the same build on the same kind of host, and the Hello's wire version would
/// not match across byte orders); a string or vector as a uint64 count, then its elements;
/// a pair as its two members; a map as a count, then its keys and values; a variant as the
/// uint8 index of its alternative, then its value; a struct as what its serialize()
/// writes, in order. The reader
/// checks every count against the bytes left, so a short or damaged message is an error
/// (WireFormatError), never a read past its end or a huge allocation.

#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace ranktune::mpi {

/// A message whose bytes do not decode as the type expected.
class WireFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Writes a message into `out` (cleared first): `writer & value`, as serialize() does.
class WireWriter {
 public:
  explicit WireWriter(std::vector<char>& out) : out_(out) { out_.clear(); }

  template <class T>
  WireWriter& operator&(const T& value) {
    put(value);
    return *this;
  }

 private:
  template <class T>
  void put(const T& value) {
    if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      const char* p = reinterpret_cast<const char*>(&value);
      out_.insert(out_.end(), p, p + sizeof(T));
    } else {
      // A message struct (or search::Metrics): its own serialize(), which does not change it.
      const_cast<T&>(value).serialize(*this, 0u);
    }
  }
  void put(const std::string& s) {
    put(static_cast<std::uint64_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  template <class T, class A>
  void put(const std::vector<T, A>& v) {
    put(static_cast<std::uint64_t>(v.size()));
    for (const T& x : v) put(x);
  }
  template <class A, class B>
  void put(const std::pair<A, B>& p) {
    put(p.first);
    put(p.second);
  }
  template <class K, class V, class C, class A>
  void put(const std::map<K, V, C, A>& m) {
    put(static_cast<std::uint64_t>(m.size()));
    for (const auto& [k, v] : m) {
      put(k);
      put(v);
    }
  }
  template <class... Ts>
  void put(const std::variant<Ts...>& v) {
    static_assert(sizeof...(Ts) < 256);
    put(static_cast<std::uint8_t>(v.index()));
    std::visit([this](const auto& x) { put(x); }, v);
  }

  std::vector<char>& out_;
};

/// Reads a message from `size` bytes at `data`: `reader & value`, as serialize() does.
class WireReader {
 public:
  WireReader(const char* data, std::size_t size) : at_(data), end_(data + size) {}

  template <class T>
  WireReader& operator&(T& value) {
    get(value);
    return *this;
  }
  /// Bytes not read yet: a whole message leaves none.
  std::size_t left() const { return static_cast<std::size_t>(end_ - at_); }

 private:
  void need(std::size_t n, const char* what) const {
    if (n > left())
      throw WireFormatError(std::string("a message ends inside its ") + what + " (" + std::to_string(left()) +
                            " bytes left, " + std::to_string(n) + " needed)");
  }
  template <class T>
  void get(T& value) {
    if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      need(sizeof(T), "numbers");
      std::memcpy(&value, at_, sizeof(T));
      at_ += sizeof(T);
    } else {
      value.serialize(*this, 0u);
    }
  }
  void get(bool& value) {
    need(1, "flags");
    // Any byte but 0 and 1 is not a bool this writer wrote.
    if (static_cast<unsigned char>(*at_) > 1) throw WireFormatError("a message holds a flag that is neither 0 nor 1");
    value = *at_++ != 0;
  }
  /// A count of elements of at least `min_bytes` each, checked against what is left.
  std::size_t count(std::size_t min_bytes, const char* what) {
    std::uint64_t n = 0;
    get(n);
    if (min_bytes > 0 && n > left() / min_bytes)
      throw WireFormatError(std::string("a message announces ") + std::to_string(n) + " " + what + " in " +
                            std::to_string(left()) + " bytes");
    return static_cast<std::size_t>(n);
  }
  void get(std::string& s) {
    const std::size_t n = count(1, "characters");
    s.assign(at_, n);
    at_ += n;
  }
  template <class T, class A>
  void get(std::vector<T, A>& v) {
    // Every element takes at least one byte (a number its size, a string its count).
    const std::size_t n = count(std::is_arithmetic_v<T> ? sizeof(T) : 1, "elements");
    v.clear();
    v.resize(n);
    for (T& x : v) get(x);
  }
  template <class A, class B>
  void get(std::pair<A, B>& p) {
    get(p.first);
    get(p.second);
  }
  template <class K, class V, class C, class Al>
  void get(std::map<K, V, C, Al>& m) {
    const std::size_t n = count(2, "entries");
    m.clear();
    for (std::size_t i = 0; i < n; ++i) {
      K k{};
      V v{};
      get(k);
      get(v);
      m.emplace(std::move(k), std::move(v));
    }
  }

  template <class... Ts>
  void get(std::variant<Ts...>& v) {
    std::uint8_t index = 0;
    get(index);
    if (index >= sizeof...(Ts))
      throw WireFormatError("a message holds alternative " + std::to_string(index) + " of a value with " +
                            std::to_string(sizeof...(Ts)));
    get_alternative<0>(v, index);
  }
  template <std::size_t I, class... Ts>
  void get_alternative(std::variant<Ts...>& v, std::size_t index) {
    if constexpr (I < sizeof...(Ts)) {
      if (index != I) return get_alternative<I + 1>(v, index);
      get(v.template emplace<I>());
    }
  }

  const char* at_;
  const char* end_;
};

/// `msg` encoded into `out`.
template <class T>
void encode(const T& msg, std::vector<char>& out) {
  WireWriter w(out);
  w & msg;
}

/// The message of type T in `size` bytes at `data`. Throws WireFormatError when they are not
/// one whole T.
template <class T>
T decode(const char* data, std::size_t size) {
  WireReader r(data, size);
  T msg;
  r & msg;
  if (r.left() != 0)
    throw WireFormatError(std::to_string(r.left()) + " bytes follow the end of the message");
  return msg;
}

}  // namespace ranktune::mpi
