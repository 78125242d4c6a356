// How a subcommand's callback ends the process: its exit code, or the documented exit code
// and one-line message of the error it throws.

#include "apps/commands.h"

#include <cstdio>
#include <stdexcept>

#include <CLI/CLI.hpp>

#include "experiment/exit_codes.h"
#include "io/store.h"

namespace ranktune::apps {
namespace {

int g_exit_code = experiment::kExitUsage;

int run_reporting_errors(const std::function<int()>& command) {
  try {
    return command();
  } catch (const config::ConfigError& e) {
    std::fprintf(stderr, "ranktune: config error: %s\n", e.what());
    return experiment::kExitUsage;
  } catch (const io::StoreError& e) {
    std::fprintf(stderr, "ranktune: %s\n", e.what());
    return experiment::kExitBadFile;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "ranktune: %s\n", e.what());
    return experiment::kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ranktune: error: %s\n", e.what());
    return experiment::kExitInternal;
  }
}

}  // namespace

void on_run(CLI::App* sub, std::function<int()> command) {
  sub->callback([command = std::move(command)] { g_exit_code = run_reporting_errors(command); });
}

int exit_code() { return g_exit_code; }

}  // namespace ranktune::apps
