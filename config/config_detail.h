#pragma once
// Inside io/ only: what the files of the config reader share (config_toml.cc prepares and
// parses the TOML text, config_parser.h reads typed keys, config.cc the sections,
// config_render.cc prints, trainable_keys.cc hands [trainable] to train/). Other layers
// include config/config.h.

#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <toml.hpp>

#include "config/config.h"
#include "search/space.h"

namespace ranktune::config::config_detail {

// Overrides are parsed as tiny TOML documents named "--set KEY=VALUE", so every value keeps
// its origin and errors in it point at the override instead of a line of the file.
extern const std::string kSetPrefix;

// Deeper than any config needs (a domain sits 5 levels deep), far below what toml11's
// recursive parser can take before it overflows the stack.
constexpr int kMaxDepth = 32;

bool contains(const std::vector<std::string>& v, const std::string& s);
std::string quoted_list(const std::vector<std::string>& v);
std::string trim(const std::string& s);
std::string human(double d);
std::string type_name(const toml::value& v);
// A short rendering of what the user wrote, for "(got ...)" in messages.
std::string human(const toml::value& v);

std::string toml_string(const std::string& s);
std::string toml_key(const std::string& k);
// Shortest text that reads back as the same double, and always as a TOML float.
std::string toml_float(double d);
// The name of a domain kind as a config writes it ("uniform").
const char* domain_kind_name(search::DomainKind k);


// Maps offsets of the text toml11 parsed back to lines of the file, which differ where
// prepare_toml() broke a line.
class LineMap {
 public:
  LineMap() : line_of_(1, 1) {}
  // The file's line (1-based) of byte `offset` of the parsed text.
  int line_at(std::size_t offset) const {
    const auto k = std::lower_bound(newlines_.begin(), newlines_.end(), offset) - newlines_.begin();
    return line_of_[static_cast<std::size_t>(k)];
  }
  // The file's line of line `parsed` (1-based) of the parsed text.
  int file_line(std::size_t parsed) const {
    return parsed == 0 ? 0 : line_of_[std::min(parsed, line_of_.size()) - 1];
  }
  void newline(std::size_t offset, int next_file_line) {
    newlines_.push_back(offset);
    line_of_.push_back(next_file_line);
  }

 private:
  std::vector<std::size_t> newlines_;  // offsets of '\n' in the parsed text
  std::vector<int> line_of_;           // line of the parsed text (0-based) -> line of the file
};

// Parses `text` as the document `name`; `map` (when given) gets the way back to its lines.
// Refuses nesting deeper than kMaxDepth. Throws toml::exception or ConfigError.
toml::value parse_toml(const std::string& text, const std::string& name, LineMap* map = nullptr);

// A toml11 syntax error as one ConfigError line at the file's line.
ConfigError syntax_error(const toml::exception& e, const std::string& file, const LineMap& map);

// The name of an override's document, "--set KEY=VALUE" (cut when long), for messages; or,
// for an override that a flag stands for, the flag as `shown` has it ("--results PATH").
std::string override_name(const std::string& ov, const std::map<std::string, std::string>& shown = {});

// Applies one "a.b.c=VALUE" to the tree; `name` is its document's (override_name). Throws
// ConfigError when it is malformed.
void apply_override(toml::value& root, const std::string& ov, const std::string& name);

// "" if `v` fits, else its text: toml11 reads a number that does not fit as the nearest limit.
std::string overflowed(const toml::value& v);

// ExperimentConfig::fail, naming the file `file`.
[[noreturn]] void fail_at(const ExperimentConfig& cfg, const std::string& file, const std::string& key,
                          const std::string& message);

// The file's name in messages ("<config>" when parse_config was given none).
std::string display_name(const std::string& path);

}  // namespace ranktune::config::config_detail
