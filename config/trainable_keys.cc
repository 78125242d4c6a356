// TrainableKeys (config/config.h): the [trainable] table as written, read on train/'s behalf by
// the config's own reader (config_parser.h), so a kind's errors name file:line:key with the
// same words as the rest of the config.

#include "config/config.h"

#include "config/config_parser.h"

namespace ranktune::config {

using namespace config_detail;

namespace {

const std::string kTable = "trainable";

// Reads through the reader when there is a table; a spec built in code has none.
template <class F>
auto with_table(const std::shared_ptr<const TrainableKeys::Impl>& impl, F&& f) {
  if (!impl) {
    static const Parser empty(display_name(""), LineMap(), {}, {});
    return f(empty, Parser::Table{nullptr, kTable});
  }
  return f(impl->parser, Parser::Table{&impl->table, kTable});
}

}  // namespace

// The body of a method that asks the reader about the table: `call` sees the reader `p`
// and the table `t`.
#define RANKTUNE_ASK(call) \
  return with_table(impl_, [&](const Parser& p, const Parser::Table& t) { return call; })

std::vector<std::string> TrainableKeys::names() const {
  return with_table(impl_, [](const Parser& p, const Parser::Table& t) {
    std::vector<std::string> out;
    for (const auto& [k, v] : p.entries(t)) out.push_back(*k);
    return out;
  });
}

bool TrainableKeys::has(const std::string& key) const { RANKTUNE_ASK(p.find(t, key) != nullptr); }

std::string TrainableKeys::got(const std::string& key) const {
  RANKTUNE_ASK(p.find(t, key) ? human(*p.find(t, key)) : std::string());
}

void TrainableKeys::fail(const std::string& key, const std::string& message) const {
  if (!impl_) throw ConfigError(display_name(""), 0, kTable + "." + key, message);
  const Parser::Table t{&impl_->table, kTable};
  const toml::value* v = impl_->parser.find(t, key);
  impl_->parser.fail(v ? v : t.v, t.key(key), message);
}

void TrainableKeys::fail_config(const ExperimentConfig& cfg, const std::string& key, const std::string& message) const {
  fail_at(cfg, impl_ ? impl_->parser.file() : display_name(cfg.path), key, message);
}

void TrainableKeys::check_keys(const std::vector<std::string>& allowed) const { RANKTUNE_ASK(p.check_keys(t, allowed)); }

bool TrainableKeys::read(const std::string& key, std::string& out) const { RANKTUNE_ASK(p.read(t, key, out)); }
bool TrainableKeys::read(const std::string& key, double& out) const { RANKTUNE_ASK(p.read(t, key, out)); }
bool TrainableKeys::read(const std::string& key, bool& out) const { RANKTUNE_ASK(p.read(t, key, out)); }
bool TrainableKeys::read(const std::string& key, std::int64_t& out) const { RANKTUNE_ASK(p.read(t, key, out)); }
bool TrainableKeys::read(const std::string& key, int& out) const { RANKTUNE_ASK(p.read(t, key, out)); }
bool TrainableKeys::read(const std::string& key, std::vector<std::string>& out) const { RANKTUNE_ASK(p.read(t, key, out)); }
bool TrainableKeys::read(const std::string& key, std::map<std::string, std::string>& out) const {
  RANKTUNE_ASK(p.read(t, key, out));
}

void TrainableKeys::read_required(const std::string& key, std::vector<std::string>& out,
                                  const std::string& example) const {
  RANKTUNE_ASK(p.read_required(t, key, out, example));
}

void TrainableKeys::read_min(const std::string& key, double& out, double min, bool strict) const {
  RANKTUNE_ASK(p.read_min(t, key, out, min, strict));
}
void TrainableKeys::read_min(const std::string& key, std::int64_t& out, std::int64_t min) const {
  RANKTUNE_ASK(p.read_min(t, key, out, min));
}
void TrainableKeys::read_min(const std::string& key, int& out, int min) const { RANKTUNE_ASK(p.read_min(t, key, out, min)); }
void TrainableKeys::read_range(const std::string& key, double& out, double min, double max) const {
  RANKTUNE_ASK(p.read_range(t, key, out, min, max));
}
void TrainableKeys::read_range(const std::string& key, std::int64_t& out, std::int64_t min, std::int64_t max) const {
  RANKTUNE_ASK(p.read_range(t, key, out, min, max));
}

bool TrainableKeys::read_enum(const std::string& key, const std::vector<std::string>& valid, std::string& out,
                              bool required) const {
  RANKTUNE_ASK(p.read_enum(t, key, valid, out, required));
}

#undef RANKTUNE_ASK

}  // namespace ranktune::config
