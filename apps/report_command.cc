// `ranktune report`: the leaderboard of a results file, with its plots, schedules and
// HTML report.

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "io/store.h"
#include "io/evaluations.h"
#include "report/evaluations.h"
#include "report/html.h"
#include "report/importance.h"
#include "report/run_config.h"
#include "report/leaderboard.h"
#include "report/plots.h"
#include "report/schedule.h"

namespace ranktune::apps {
namespace {

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path.string() + ": check the folder exists and is writable");
  std::printf("wrote %s\n", path.c_str());
}

}  // namespace

int run_report(const ReportOptions& o) {
  const auto format = report::parse_format(o.format);
  if (!format) throw std::invalid_argument("unknown --format '" + o.format + "'; valid: table, csv, json, markdown");
  std::optional<search::importance::Method> method;
  if (!o.importance.empty()) {
    method = report::parse_importance_method(o.importance);
    if (!method) throw std::invalid_argument("unknown --importance '" + o.importance + "'; valid: ped-anova, fanova");
    if (*format == report::Format::Csv)
      throw std::invalid_argument("--importance does not fit the one table of --format csv: use table, markdown or json");
  }
  const io::ResultsFile file = io::ResultsFile::read(o.results);
  const report::RunConfig config = report::run_config(file);
  if (o.schedule_trial > 0) {
    const auto schedule = report::trial_schedule(file, o.schedule_trial);
    std::fputs(report::render_schedule(schedule, file.trial(o.schedule_trial)->iterations).c_str(), stdout);
  } else {
    std::string board = report::render_leaderboard(file, {o.top, *format});
    if (method) {
      const report::ImportanceReport importance = report::importance_of(file, {.method = *method}, &config);
      if (*format == report::Format::Json) {
        // One document still: the leaderboard's, with the importance under its own key.
        auto doc = nlohmann::json::parse(board);
        doc["importance"] = nlohmann::json::parse(report::importance_json(importance));
        board = doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      } else {
        board += "\n" + report::render_importance(importance, *format);
      }
    }
    std::fputs(board.c_str(), stdout);
    // The newest held-out evaluation under the leaderboard, for people (CSV and JSON stay
    // one document each: `ranktune eval --format json`, or h5py, give the evaluations).
    if (*format == report::Format::Table || *format == report::Format::Markdown) {
      const std::vector<io::Evaluation> evaluations = io::read_evaluations(o.results);
      if (!evaluations.empty()) {
        std::printf("\n%s", report::render_evaluation(file, evaluations.back(), *format).c_str());
        if (evaluations.size() > 1)
          std::printf("(%zu evaluations recorded; every one is in /evaluations)\n", evaluations.size());
      }
    }
  }
  if (!o.html.empty()) {
    report::HtmlOptions html;
    html.top = o.top;
    html.log_y = o.log_y ? report::LogChoice::Always : o.linear_y ? report::LogChoice::Never : report::LogChoice::Auto;
    if (method) html.importance = *method;
    html.config = &config;
    write_file(o.html, report::render_html(file, io::read_evaluations(o.results), html));
  }
  if (!o.plots.empty()) {
    const std::filesystem::path dir(o.plots);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw std::runtime_error("cannot create --plots folder " + o.plots + ": " + ec.message());
    write_file(dir / "curves.svg", report::learning_curves_svg(file, o.top == 0 ? 10 : o.top));
    // The schedule of the asked trial, else of the best trial when the run exploited.
    search::TrialId trial = o.schedule_trial;
    if (trial == 0) {
      const bool pbt = std::any_of(file.events.begin(), file.events.end(), [](const io::EventRow& e) { return e.kind == "exploit"; });
      const auto order = report::best_first(file);
      if (pbt && !order.empty()) trial = order.front()->id;
    }
    if (trial > 0) write_file(dir / ("schedule_trial_" + std::to_string(trial) + ".svg"), report::schedule_svg(file, trial));
  }
  return 0;
}

void setup_report(CLI::App& app) {
  const auto report = std::make_shared<ReportOptions>();
  auto* report_cmd = app.add_subcommand("report", "Print the leaderboard of a results file");
  report_cmd->add_option("results", report->results, "Results file (.h5)")->required();
  report_cmd->add_option("--top", report->top, "Rows to show (0 = all)")->capture_default_str();
  report_cmd->add_option("--format", report->format, "table, csv, json or markdown")->capture_default_str();
  report_cmd->add_option("--plots", report->plots,
                         "Write SVG charts into this folder: curves.svg (the best --top trials' learning curves) and, "
                         "for PBT, schedule_trial_T.svg (the best trial's hyperparameter schedule)");
  report_cmd->add_option("--html", report->html,
                         "Write a self-contained HTML report to this file: leaderboard, learning curves, best so far, "
                         "importance (--importance picks the method), parallel coordinates, scatter plots, the workers' "
                         "timeline, PBT lineage, evaluations, control, errors, stack");
  report_cmd->add_option("--importance", report->importance,
                         "Add which hyperparameters mattered: ped-anova (what set the top 10% apart; fast) or fanova "
                         "(variance shares of a random forest, as Optuna's default)");
  auto* log_y = report_cmd->add_flag("--log-y", report->log_y,
                                     "HTML charts of the metric on a log axis (default: when its values span over two decades)");
  report_cmd->add_flag("--linear-y", report->linear_y, "HTML charts of the metric on a linear axis")->excludes(log_y);
  report_cmd->add_option("--schedule", report->schedule_trial,
                         "Print trial T's hyperparameter schedule (PBT exploits), and plot it with --plots")
      ->check(CLI::PositiveNumber);
  on_run(report_cmd, [report] { return run_report(*report); });
}

}  // namespace ranktune::apps
