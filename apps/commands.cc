// How a subcommand's callback ends the process: its exit code, or the documented exit code
// and one-line message of the error it throws.

#include "apps/commands.h"

#include <cstdio>
#include <stdexcept>

#include <CLI/CLI.hpp>

#include "experiment/exit_codes.h"
#include "io/store.h"
#include "sys/printable.h"

namespace ranktune::apps {
namespace {

int g_exit_code = experiment::kExitUsage;

// Messages quote names and values from files and trials (a metric name, a config string):
// their control characters are shown, not obeyed by the terminal.
void print_error(const char* prefix, const std::exception& e) {
  std::fprintf(stderr, "ranktune: %s%s\n", prefix, sys::printable(e.what(), sys::Lines::Keep).c_str());
}

int run_reporting_errors(const std::function<int()>& command) {
  try {
    return command();
  } catch (const config::ConfigError& e) {
    print_error("config error: ", e);
    return experiment::kExitUsage;
  } catch (const io::StoreError& e) {
    print_error("", e);
    return experiment::kExitBadFile;
  } catch (const std::invalid_argument& e) {
    print_error("", e);
    return experiment::kExitUsage;
  } catch (const std::exception& e) {
    print_error("error: ", e);
    return experiment::kExitInternal;
  }
}

}  // namespace

void on_run(CLI::App* sub, std::function<int()> command) {
  sub->callback([command = std::move(command)] { g_exit_code = run_reporting_errors(command); });
}

int exit_code() { return g_exit_code; }

}  // namespace ranktune::apps
