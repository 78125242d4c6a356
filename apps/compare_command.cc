// `ranktune compare`: the evaluations of the same models under different stacks side by
// side. The work is in report/compare.h; this file reads the inputs and prints.

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/commands.h"
#include "io/errors.h"
#include "io/evaluations.h"
#include "report/compare.h"
#include "report/html.h"
#include "sys/printable.h"

namespace ranktune::apps {

std::vector<report::CompareInput> read_compare_inputs(const std::vector<std::string>& given_inputs,
                                                      std::vector<report::CompareInput> inputs) {
  std::map<std::string, std::vector<io::Evaluation>> read;  // each file once
  for (const std::string& given : given_inputs) {
    // A file whose own name ends in @N is taken whole.
    std::error_code ec;
    const report::InputSpec spec = std::filesystem::exists(given, ec) ? report::InputSpec{given, std::nullopt}
                                                                      : report::parse_input_spec(given);
    if (!std::filesystem::exists(spec.path, ec))
      throw io::StoreError(sys::printable(spec.path) + ": no such file; give a results file that `ranktune eval` " +
                           "recorded into (FILE, or FILE@ID for its evaluation ID)");
    if (!read.contains(spec.path)) read[spec.path] = io::read_evaluations(spec.path);
    inputs.push_back({given, report::pick_evaluation(given, read[spec.path], spec.id)});
  }
  return inputs;
}

int run_compare(const CompareOptions& o) {
  const bool html = o.format == "html";
  const std::optional<report::Format> format = html ? report::Format::Table : report::parse_format(o.format);
  if (!format) throw std::invalid_argument("unknown --format '" + o.format + "'; valid: table, csv, json, markdown, html");
  if (o.inputs.size() < 2)
    throw std::invalid_argument("compare needs 2 or more evaluations: FILE (its newest) or FILE@ID each, e.g. "
                                "`ranktune compare m.h5@1 m.h5@2`");
  const std::vector<report::CompareInput> inputs = read_compare_inputs(o.inputs);
  const report::Comparison c = report::compare_evaluations(inputs);
  const std::string text = html ? report::html_page("ranktune compare", report::comparison_html_section(c))
                                : report::render_comparison(c, *format);
  std::fputs(text.c_str(), stdout);
  return 0;
}

void setup_compare(CLI::App& app) {
  const auto opt = std::make_shared<CompareOptions>();
  auto* cmd = app.add_subcommand(
      "compare", "The held-out evaluations of the same models under different stacks side by side: latency and "
                 "throughput ratios, metric differences, and the stack fields that differ");
  cmd->add_option("evaluations", opt->inputs,
                  "Results files, each FILE (its newest evaluation) or FILE@ID (evaluation ID); the first is the baseline")
      ->required();
  cmd->add_option("--format", opt->format, "table, csv, json, markdown or html (a page in the report's style)")
      ->capture_default_str();
  on_run(cmd, [opt] { return run_compare(*opt); });
}

}  // namespace ranktune::apps
