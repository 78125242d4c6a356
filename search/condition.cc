// The condition language of conditional parameters: its parser, its checks against the
// space, its evaluation, and which parameters of a config are active (search/condition.h).
#include "search/condition.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>

#include "search/space.h"
#include "sys/text.h"

namespace ranktune::search {

namespace {

// A recursive-descent parser over the text; `pos` is the next character.
class ConditionParser {
 public:
  explicit ConditionParser(const std::string& text) : s_(text) {}

  bool parse(Condition& out, std::string& error) {
    try {
      out = disjunction();
      skip();
      if (pos_ < s_.size()) fail("expected 'and', 'or' or the end, got '" + rest() + "'");
      out.text = s_;
      return true;
    } catch (const std::string& e) {
      error = e;
      return false;
    }
  }

 private:
  const std::string& s_;
  std::size_t pos_ = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw "at character " + std::to_string(pos_ + 1) + ": " + what;
  }
  std::string rest() const { return sys::excerpt(s_.substr(pos_), 20); }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  // Consumes the keyword `word` when it stands alone (not the start of a longer name).
  bool keyword(const char* word) {
    skip();
    const std::size_t n = std::char_traits<char>::length(word);
    if (s_.compare(pos_, n, word) != 0) return false;
    if (pos_ + n < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_ + n])) || s_[pos_ + n] == '_'))
      return false;
    pos_ += n;
    return true;
  }
  bool symbol(const char* sym) {
    skip();
    const std::size_t n = std::char_traits<char>::length(sym);
    if (s_.compare(pos_, n, sym) != 0) return false;
    pos_ += n;
    return true;
  }

  Condition disjunction() {
    Condition first = conjunction();
    if (!keyword("or")) return first;
    Condition c;
    c.op = Condition::Op::Or;
    c.parts.push_back(std::move(first));
    do c.parts.push_back(conjunction());
    while (keyword("or"));
    return c;
  }

  Condition conjunction() {
    Condition first = atom();
    if (!keyword("and")) return first;
    Condition c;
    c.op = Condition::Op::And;
    c.parts.push_back(std::move(first));
    do c.parts.push_back(atom());
    while (keyword("and"));
    return c;
  }

  Condition atom() {
    skip();
    if (symbol("(")) {
      Condition c = disjunction();
      if (!symbol(")")) fail("expected ')'" + std::string(pos_ < s_.size() ? ", got '" + rest() + "'" : " before the end"));
      return c;
    }
    Condition c;
    c.name = name();
    if (keyword("not")) {
      if (!keyword("in")) fail("expected 'in' after 'not'");
      c.op = Condition::Op::NotIn;
      c.values = list();
      return c;
    }
    if (keyword("in")) {
      c.op = Condition::Op::In;
      c.values = list();
      return c;
    }
    static const std::pair<const char*, Condition::Op> ops[] = {
        {"==", Condition::Op::Eq}, {"!=", Condition::Op::Ne}, {"<=", Condition::Op::Le},
        {">=", Condition::Op::Ge}, {"<", Condition::Op::Lt},  {">", Condition::Op::Gt}};
    for (const auto& [sym, op] : ops) {
      if (symbol(sym)) {
        c.op = op;
        c.values.push_back(literal(sym));
        return c;
      }
    }
    skip();
    if (symbol("=")) fail("'=' is not a comparison; write '==' to compare '" + c.name + "' with a value");
    fail("expected a comparison (==, !=, <, <=, >, >=, in, not in) after '" + c.name + "'" +
         (pos_ < s_.size() ? ", got '" + rest() + "'" : ""));
  }

  std::string name() {
    skip();
    const std::size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == '.'))
      ++pos_;
    if (pos_ == start)
      fail(pos_ < s_.size() ? "expected a parameter name, got '" + rest() + "'" : "expected a parameter name before the end");
    if (std::isdigit(static_cast<unsigned char>(s_[start]))) {
      pos_ = start;
      fail("expected a parameter name on the left of a comparison, got '" + rest() + "'");
    }
    return s_.substr(start, pos_ - start);
  }

  std::vector<Value> list() {
    if (!symbol("[")) fail("expected '[' to start the list of values after 'in'");
    std::vector<Value> values;
    do values.push_back(literal("in"));
    while (symbol(","));
    if (!symbol("]")) fail("expected ',' or ']' in the list of values" + (pos_ < s_.size() ? ", got '" + rest() + "'" : ""));
    return values;
  }

  Value literal(const char* after) {
    skip();
    if (pos_ >= s_.size()) fail(std::string("expected a value after '") + after + "' before the end");
    const char q = s_[pos_];
    if (q == '\'' || q == '"') {
      const std::size_t close = s_.find(q, pos_ + 1);
      if (close == std::string::npos) fail(std::string("a string opened with ") + q + " is not closed");
      std::string text = s_.substr(pos_ + 1, close - pos_ - 1);
      pos_ = close + 1;
      return text;
    }
    const char* begin = s_.c_str() + pos_;
    char* end = nullptr;
    const double d = std::strtod(begin, &end);
    if (end == begin || !std::isfinite(d)) {
      fail(std::string("expected a number or a quoted string after '") + after + "', got '" + rest() +
           "' (quote strings: 'sgd')");
    }
    const std::string token(begin, static_cast<std::size_t>(end - begin));
    pos_ += token.size();
    const bool integral = token.find_first_of(".eEnN") == std::string::npos;
    if (integral) return static_cast<std::int64_t>(std::llround(d));
    return d;
  }
};

bool equal(const Value& a, const Value& b) {
  if (std::holds_alternative<std::string>(a) || std::holds_alternative<std::string>(b)) return a == b;
  return to_double(a) == to_double(b);
}

std::string shown(const Value& v) {
  return std::holds_alternative<std::string>(v) ? "'" + std::get<std::string>(v) + "'" : to_string(v);
}

}  // namespace

bool parse_condition(const std::string& text, Condition& out, std::string& error) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    error = "is empty; write a condition such as \"optimizer == 'sgd'\"";
    return false;
  }
  return ConditionParser(text).parse(out, error);
}

std::vector<std::string> condition_names(const Condition& c) {
  std::vector<std::string> out;
  if (c.op == Condition::Op::And || c.op == Condition::Op::Or) {
    for (const Condition& p : c.parts)
      for (auto& n : condition_names(p))
        if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(std::move(n));
  } else {
    out.push_back(c.name);
  }
  return out;
}

std::string check_condition(const Condition& c, const Space& space, const std::string& self) {
  if (c.op == Condition::Op::And || c.op == Condition::Op::Or) {
    for (const Condition& p : c.parts)
      if (std::string why = check_condition(p, space, self); !why.empty()) return why;
    return "";
  }
  if (c.name == self) return "'" + self + "' cannot depend on itself";
  const Param* p = space.find(c.name);
  if (p == nullptr) {
    std::vector<std::string> names;
    for (const Param& q : space.params)
      if (q.name != self) names.push_back(q.name);
    const std::string near = sys::closest_name(c.name, names);
    return "'" + c.name + "' is not a parameter of the search space" +
           (near.empty() ? "; valid: " + sys::comma_list(names) : "; did you mean '" + near + "'?");
  }
  const bool text_param = p->domain.type() == ValueType::String;
  const bool ordered = c.op == Condition::Op::Lt || c.op == Condition::Op::Le || c.op == Condition::Op::Gt ||
                       c.op == Condition::Op::Ge;
  if (ordered && text_param)
    return "'" + c.name + "' takes strings: compare it with ==, != or in [...], not <, <=, >, >=";
  for (const Value& v : c.values) {
    const bool text_value = std::holds_alternative<std::string>(v);
    if (text_value != text_param)
      return "'" + c.name + "' takes " + (text_param ? "strings" : "numbers") + ", but the condition compares it with " +
             shown(v) + (text_param ? " (quote it: '" + to_string(v) + "')" : "");
    if (p->domain.is_listed() && !ordered &&
        std::none_of(p->domain.values.begin(), p->domain.values.end(), [&](const Value& x) { return equal(x, v); })) {
      std::string values;
      for (const Value& x : p->domain.values) values += (values.empty() ? "" : ", ") + shown(x);
      return shown(v) + " is not a value of '" + c.name + "' (its values: " + values + ")";
    }
  }
  return "";
}

bool holds(const Condition& c, const Config& config) {
  switch (c.op) {
    case Condition::Op::And:
      return std::all_of(c.parts.begin(), c.parts.end(), [&](const Condition& p) { return holds(p, config); });
    case Condition::Op::Or:
      return std::any_of(c.parts.begin(), c.parts.end(), [&](const Condition& p) { return holds(p, config); });
    default: break;
  }
  const auto it = config.find(c.name);
  if (it == config.end()) return false;  // inactive: no comparison with it holds
  const Value& v = it->second;
  const auto in = [&] { return std::any_of(c.values.begin(), c.values.end(), [&](const Value& x) { return equal(v, x); }); };
  const Value& x = c.values.front();
  switch (c.op) {
    case Condition::Op::Eq: return equal(v, x);
    case Condition::Op::Ne: return !equal(v, x);
    case Condition::Op::In: return in();
    case Condition::Op::NotIn: return !in();
    default: break;
  }
  // Ordered comparisons apply to numbers only (check_condition); a string compares false.
  const double a = to_double(v), b = to_double(x);
  switch (c.op) {
    case Condition::Op::Lt: return a < b;
    case Condition::Op::Le: return a <= b;
    case Condition::Op::Gt: return a > b;
    case Condition::Op::Ge: return a >= b;
    default: return false;
  }
}

void drop_inactive(const Space& space, Config& config) {
  if (!space.conditional()) return;
  // 0: not yet decided, 1: deciding (a cycle, refused by the config), 2: decided.
  std::vector<int> state(space.params.size(), 0);
  std::function<void(std::size_t)> decide = [&](std::size_t i) {
    if (state[i] != 0) return;
    state[i] = 1;
    const Param& p = space.params[i];
    if (p.conditional()) {
      // Decide what the condition reads first, so it sees only active values.
      for (const std::string& n : condition_names(p.when))
        for (std::size_t j = 0; j < space.params.size(); ++j)
          if (space.params[j].name == n) decide(j);
      if (!holds(p.when, config)) config.erase(p.name);
    }
    state[i] = 2;
  };
  for (std::size_t i = 0; i < space.params.size(); ++i) decide(i);
}

std::string check_condition_cycles(const Space& space) {
  std::vector<int> state(space.params.size(), 0);
  std::vector<std::string> path;
  std::string cycle;
  std::function<bool(std::size_t)> visit = [&](std::size_t i) {
    if (state[i] == 2) return false;
    path.push_back(space.params[i].name);
    if (state[i] == 1) {
      const auto from = std::find(path.begin(), path.end(), path.back());
      for (auto it = from; it != path.end(); ++it) cycle += (it == from ? "" : " -> ") + *it;
      return true;
    }
    state[i] = 1;
    for (const std::string& n : condition_names(space.params[i].when)) {
      if (!space.params[i].conditional()) break;
      for (std::size_t j = 0; j < space.params.size(); ++j)
        if (space.params[j].name == n && visit(j)) return true;
    }
    state[i] = 2;
    path.pop_back();
    return false;
  };
  for (std::size_t i = 0; i < space.params.size(); ++i)
    if (visit(i)) return cycle;
  return "";
}

}  // namespace ranktune::search
