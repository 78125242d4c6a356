#pragma once
// Shared set-up of the config tests (config_test.cc, config_hostile_test.cc): configs with
// fixed lines, the error of parsing one, and parse_config / load_config as `ranktune check`
// reads a config (the [trainable] kind's own keys read by train/ too).

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "config/config.h"
#include "tests/unit/common/expect_text.h"
#include "train/command.h"
#include "train/registry.h"
#include "train/synthetic.h"

namespace ranktune::io::config_fixtures {
using namespace ranktune::config;

// parse_config and load_config as `ranktune check` reads a config: the [trainable] kind's
// own keys are read by train/ (train::read_trainable), which these tests cover too.
inline ExperimentConfig parse_config(const std::string& text, const std::string& path,
                                const std::vector<std::string>& overrides = {}) {
  ExperimentConfig cfg = config::parse_config(text, path, overrides);
  train::read_trainable(cfg);
  return cfg;
}

inline ExperimentConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {}) {
  ExperimentConfig cfg = config::load_config(path, overrides);
  train::read_trainable(cfg);
  return cfg;
}

// The kind's options, or that kind's defaults when the trainable is of another kind (as the
// spec had them when it carried every kind's fields).
template <class Options>
const Options& options_or_defaults(const TrainableSpec& t) {
  static const Options defaults;
  const Options* o = train::find_options<Options>(t);
  return o != nullptr ? *o : defaults;
}
inline const train::SyntheticOptions& synthetic_of(const TrainableSpec& t) { return options_or_defaults<train::SyntheticOptions>(t); }
inline const train::CommandOptions& command_of(const TrainableSpec& t) { return options_or_defaults<train::CommandOptions>(t); }

// A valid config whose lines are fixed, so error tests can name them:
//   line 5: extra [experiment] key, line 7: the one search parameter,
//   line 10: extra [trainable] key, line 11 on: `tail`.
inline std::string text(const std::string& exp_extra = "",
                 const std::string& param = "x = { uniform = [0.0, 1.0] }",
                 const std::string& train_extra = "", const std::string& tail = "") {
  auto or_comment = [](const std::string& s) { return s.empty() ? std::string("# -") : s; };
  return "[experiment]\n"
         "name = \"t\"\n"
         "metric = \"loss\"\n"
         "mode = \"min\"\n" +
         or_comment(exp_extra) + "\n[search.space]\n" + param +
         "\n[trainable]\n"
         "kind = \"synthetic\"\n" +
         or_comment(train_extra) + "\n" + tail;
}

// The error message of parsing `t`, or "" if it parsed.
inline std::string error_of(const std::string& t, const std::vector<std::string>& overrides = {}) {
  try {
    parse_config(t, "exp.toml", overrides);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

inline void expect_error(const std::string& msg, const std::string& where, const std::string& key,
                  const std::string& fragment) {
  ASSERT_FALSE(msg.empty()) << "expected an error about " << key;
  EXPECT_EQ(msg.rfind(where, 0), 0u) << msg;
  EXPECT_CONTAINS(msg, key + ":");
  EXPECT_CONTAINS(msg, fragment);
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

}  // namespace ranktune::io::config_fixtures

namespace ranktune::io {
namespace {

// In the tests' own namespace, so that these parse_config and load_config hide io's.
using config_fixtures::command_of;
using config_fixtures::error_of;
using config_fixtures::expect_error;
using config_fixtures::load_config;
using config_fixtures::parse_config;
using config_fixtures::synthetic_of;
using config_fixtures::text;

}  // namespace
}  // namespace ranktune::io
