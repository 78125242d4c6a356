// `ranktune report`: the leaderboard of a results file, one trial whole, the plots, schedules
// and HTML report (also rewritten while a run goes: --watch); and `ranktune leaderboard`,
// the trials of several experiments ranked together.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "io/evaluations.h"
#include "io/store.h"
#include "report/cross_leaderboard.h"
#include "report/evaluations.h"
#include "report/sensitivity.h"
#include "report/html.h"
#include "report/importance.h"
#include "report/leaderboard.h"
#include "report/pareto_front.h"
#include "report/plots.h"
#include "report/run_config.h"
#include "report/schedule.h"
#include "report/trial_view.h"
#include "sys/safe_fs.h"
#include "sys/printable.h"

namespace ranktune::apps {
namespace {

// Every page and chart goes through sys::replace_file (a temporary file of ours, renamed over
// the name): a link another user planted at the name is replaced, never written through.
// `dirfd`: the --plots folder, checked once and written into by its descriptor.
void write_file(const std::string& path, const std::string& text, int dirfd = -1) {
  try {
    if (dirfd >= 0) {
      sys::replace_file_at(dirfd, sys::split_path(path).second, text, path);
    } else {
      sys::replace_file(path, text);
    }
  } catch (const sys::FsError& e) {
    throw std::runtime_error(std::string(e.what()) + ": check the folder exists and is writable");
  }
  std::printf("wrote %s\n", path.c_str());
}

/// --top when given; else every row for the formats people export (CSV, JSON) and 10 for
/// the ones they read.
std::size_t rows_for(const std::optional<std::size_t>& top, report::Format format) {
  if (top) return *top;
  return format == report::Format::Csv || format == report::Format::Json ? 0 : 10;
}

report::Format format_of(const std::string& name) {
  const auto format = report::parse_format(name);
  if (!format) throw std::invalid_argument("unknown --format '" + name + "'; valid: table, csv, json, markdown");
  return *format;
}

// The Pareto view of a multi-objective experiment, from the objectives of its stored config;
// nullopt for one objective. A file whose /trials has Pareto columns but whose stored config no
// longer parses cannot say its modes: it is reported by its first objective, and stderr says why.
std::optional<report::ParetoView> pareto_of(const io::ResultsFile& file, const report::RunConfig& config,
                                            const std::vector<double>& reference) {
  if (!config.parsed && !file.schema.objectives.empty())
    std::fprintf(stderr,
                 "ranktune report: %s is a multi-objective experiment (/trials has the objectives %s), but its stored "
                 "config does not parse (%s), and the objectives' modes are in it: the report ranks the trials by %s "
                 "alone, without the Pareto front\n",
                 sys::printable(file.path).c_str(), sys::printable(report::join(file.schema.objectives, ", ", report::as_is)).c_str(),
                 sys::printable(config.error).c_str(), sys::printable(file.meta.metric).c_str());
  const auto view = report::pareto_view(file, config.objectives, reference);
  if (!view && !reference.empty())
    throw std::invalid_argument("--reference: " + file.path + " is a single-objective experiment (metric " + file.meta.metric +
                                "): there is no front to measure");
  return view;
}

volatile std::sig_atomic_t g_stop_watching = 0;
extern "C" void on_watch_signal(int) { g_stop_watching = 1; }

}  // namespace

int run_report(const ReportOptions& o) {
  const report::Format format = format_of(o.format);
  std::optional<analysis::Method> method;
  if (o.importance_given) {
    method = report::parse_importance_method(o.importance);
    if (!method) throw std::invalid_argument("unknown --importance '" + o.importance + "'; valid: auto, ped-anova, fanova");
    if (format == report::Format::Csv && o.trial == 0)
      throw std::invalid_argument("--importance does not fit the one table of --format csv: use table, markdown or json");
  }
  if (o.watch_s > 0 && o.html.empty()) throw std::invalid_argument("--watch rewrites the page of --html: give --html OUT.html");
  report::HtmlOptions html;
  html.top = o.top ? *o.top : 100;
  html.log_y = o.log_y ? report::LogChoice::Always : o.linear_y ? report::LogChoice::Never : report::LogChoice::Auto;
  if (method) html.importance = *method;

  const std::vector<double> reference = o.reference.empty() ? std::vector<double>{} : report::parse_reference(o.reference);
  if (!o.compare.empty() && o.html.empty())
    throw std::invalid_argument("--compare adds a section to the page of --html: give --html OUT.html (or use "
                                "`ranktune compare`)");
  // The page's comparison: this file's newest evaluation (the baseline) against --compare's.
  const auto comparison = [&o](const std::vector<io::Evaluation>& evaluations) -> std::string {
    if (o.compare.empty()) return "";
    const io::Evaluation& own = report::pick_evaluation(o.results, evaluations, std::nullopt);
    const std::vector<report::CompareInput> inputs =
        read_compare_inputs(o.compare, {{o.results + "@" + std::to_string(own.id), own}});
    return report::comparison_html_section(report::compare_evaluations(inputs));
  };

  if (o.watch_s > 0) {
    // A login node's view of a run: the live file read as SWMR does, the page rewritten
    // every S seconds with a refresh tag while a writer holds the file, and once more
    // without it when the run has ended (or on Ctrl-C).
    std::signal(SIGINT, on_watch_signal);
    std::signal(SIGTERM, on_watch_signal);
    std::printf("watching %s: %s every %g s (Ctrl-C stops)\n", o.results.c_str(), o.html.c_str(), o.watch_s);
    std::fflush(stdout);
    bool died = false;
    while (true) {
      bool live = io::marked_open_for_writing(o.results) && !g_stop_watching;
      // A writer killed with kill -9 never clears the mark: without this the page said
      // RUNNING and reloaded itself forever. Its lock, which the kernel freed, tells.
      if (live && io::writer_died(o.results)) live = !(died = true);
      const io::ResultsFile file = io::ResultsFile::read(o.results);
      const report::RunConfig config = report::run_config(file);
      html.config = &config;
      const auto pareto = pareto_of(file, config, reference);
      html.pareto = pareto ? &*pareto : nullptr;
      html.refresh_s = live ? o.watch_s : 0;
      html.writer_died = died;
      const std::vector<io::Evaluation> evaluations = io::read_evaluations(o.results);
      html.comparison_section = comparison(evaluations);
      sys::replace_file(o.html, report::render_html(file, evaluations, html));
      if (!live) break;
      for (double waited = 0; waited < o.watch_s && !g_stop_watching; waited += 0.1)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::printf("wrote %s (final)\n", o.html.c_str());
    if (died)
      std::fprintf(stderr,
                   "ranktune report: the run writing %s is no longer running: the file is still marked open for "
                   "writing, but no process holds it (its rank 0 was killed: kill -9, the OOM killer, a lost node). "
                   "The page says so; `ranktune run CONFIG --results %s --resume` goes on with it.\n",
                   o.results.c_str(), o.results.c_str());
    return 0;
  }

  const io::ResultsFile file = io::ResultsFile::read(o.results);
  const report::RunConfig config = report::run_config(file);
  const auto pareto = pareto_of(file, config, reference);
  // The --plots folder first: one that is refused stops the report before it prints.
  std::string plots = o.plots;
  while (plots.size() > 1 && plots.back() == '/') plots.pop_back();  // "dir/" would follow a link named dir
  const std::filesystem::path dir(plots);
  sys::UniqueFd folder;
  if (!plots.empty()) {
    // Its parents are made as asked (and followed, as any folder above a name is); the
    // folder itself must be ours and not a link, so that a folder or link another user
    // planted at its name does not receive the charts.
    std::error_code ec;
    if (dir.has_parent_path()) std::filesystem::create_directories(dir.parent_path(), ec);
    if (ec) throw std::runtime_error("cannot create --plots folder " + o.plots + ": " + ec.message());
    try {
      folder = sys::make_own_directory(plots);
    } catch (const sys::FsError& e) {
      throw std::invalid_argument(std::string("--plots: ") + e.what());
    }
  }
  if (o.trial > 0) {
    std::fputs(report::render_trial(file, o.trial, format, isatty(STDOUT_FILENO) == 1).c_str(), stdout);
  } else if (o.schedule_trial > 0) {
    const auto schedule = report::trial_schedule(file, o.schedule_trial);
    std::fputs(report::render_schedule(schedule, file.trial(o.schedule_trial)->iterations).c_str(), stdout);
  } else {
    std::string board = report::render_leaderboard(file, {rows_for(o.top, format), format, pareto ? &*pareto : nullptr});
    if (method) {
      const report::ImportanceReport importance = report::importance_of(file, {.method = *method}, &config);
      if (format == report::Format::Json) {
        // One document still: the leaderboard's, with the importance under its own key.
        auto doc = nlohmann::json::parse(board);
        doc["importance"] = nlohmann::json::parse(report::importance_json(importance));
        board = sys::printable_json(doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)) + "\n";
      } else {
        board += "\n" + report::render_importance(importance, format);
      }
    }
    std::fputs(board.c_str(), stdout);
    // The newest held-out evaluation under the leaderboard, for people (CSV and JSON stay
    // one document each: `ranktune eval --format json`, or h5py, give the evaluations).
    if (format == report::Format::Table || format == report::Format::Markdown) {
      const std::vector<io::Evaluation> evaluations = io::read_evaluations(o.results);
      if (!evaluations.empty()) {
        std::printf("\n%s", report::render_evaluation(file, evaluations.back(), format, pareto ? &*pareto : nullptr).c_str());
        // The newest evaluation was one pipeline of several: the change each made.
        if (const auto grid = report::sensitivity_grid(report::newest_sensitivity_group(evaluations))) {
          const std::string title = "pipeline sensitivity (the change of each pipeline against the first)";
          std::printf("\n%s", format == report::Format::Markdown
                                  ? ("### " + report::markdown_escape(title) + "\n\n" + report::render_markdown_table(*grid)).c_str()
                                  : (title + "\n" + report::render_table(*grid)).c_str());
        }
        if (evaluations.size() > 1)
          std::printf("(%zu evaluations recorded; every one is in /evaluations)\n", evaluations.size());
      }
    }
  }
  if (!o.html.empty()) {
    html.config = &config;
    html.pareto = pareto ? &*pareto : nullptr;
    const std::vector<io::Evaluation> evaluations = io::read_evaluations(o.results);
    html.comparison_section = comparison(evaluations);
    write_file(o.html, report::render_html(file, evaluations, html));
  }
  if (!o.plots.empty()) {
    write_file((dir / "curves.svg").string(), report::learning_curves_svg(file, o.top && *o.top ? *o.top : 10),
               folder.get());
    // The schedule of the asked trial, else of the best trial when the run exploited.
    search::TrialId trial = o.schedule_trial;
    if (trial == 0) {
      const bool pbt = std::any_of(file.events.begin(), file.events.end(), [](const io::EventRow& e) { return e.kind == search::EventKind::Exploit; });
      const auto order = report::best_first(file);
      if (pbt && !order.empty()) trial = order.front()->id;
    }
    if (trial > 0)
      write_file((dir / ("schedule_trial_" + std::to_string(trial) + ".svg")).string(), report::schedule_svg(file, trial),
                 folder.get());
  }
  return 0;
}

void setup_report(CLI::App& app) {
  const auto report = std::make_shared<ReportOptions>();
  auto* report_cmd = app.add_subcommand("report", "Print the leaderboard of a results file");
  report_cmd->add_option("results", report->results, "Results file (.h5)")->required();
  report_cmd->add_option("--top", report->top,
                         "Rows to show (0 = all; default 10 for table and markdown, all for csv and json, 100 on the "
                         "HTML page)");
  report_cmd->add_option("--format", report->format, "table, csv, json or markdown")->capture_default_str();
  report_cmd->add_option("--trial", report->trial,
                         "Print trial T whole: config, metric history, events, checkpoints, failure, log tail")
      ->check(CLI::PositiveNumber);
  report_cmd->add_option("--plots", report->plots,
                         "Write SVG charts into this folder: curves.svg (the best --top trials' learning curves) and, "
                         "for PBT, schedule_trial_T.svg (the best trial's hyperparameter schedule)");
  report_cmd->add_option("--html", report->html,
                         "Write a self-contained HTML report to this file: leaderboard, learning curves, best so far, "
                         "importance (--importance picks the method), parallel coordinates, scatter plots, the workers' "
                         "timeline, PBT lineage, evaluations, control, errors, stack");
  report_cmd->add_option("--compare", report->compare,
                         "With --html: add a comparison of this file's newest evaluation (the baseline) with these, "
                         "FILE or FILE@ID each (repeatable), as `ranktune compare` makes it");
  report_cmd->add_option("--reference", report->reference,
                         "Multi-objective: the reference point of the hypervolume, one value per objective in its own "
                         "units, comma-separated (default: the worst feasible value of each objective over the finished "
                         "trials, a tenth of its range further)");
  report_cmd->add_option("--watch", report->watch_s,
                         "With --html: rewrite the page every S seconds from the live file (SWMR) while the run goes, "
                         "then once more at its end")
      ->check(CLI::PositiveNumber);
  auto* importance = report_cmd
      ->add_option("--importance", report->importance,
                   "Add which hyperparameters mattered, each share with its 90% interval and the noise floor: auto "
                   "(the default, also with no value: fanova until the top 10% holds 20 trials, ped-anova from there), "
                   "ped-anova (what set the top 10% apart; fast) or fanova (variance shares of a random forest, as "
                   "Optuna's default)")
      ->expected(0, 1);
  auto* log_y = report_cmd->add_flag("--log-y", report->log_y,
                                     "HTML charts of the metric on a log axis (default: when its values span over two decades)");
  report_cmd->add_flag("--linear-y", report->linear_y, "HTML charts of the metric on a linear axis")->excludes(log_y);
  report_cmd->add_option("--schedule", report->schedule_trial,
                         "Print trial T's hyperparameter schedule (PBT exploits), and plot it with --plots")
      ->check(CLI::PositiveNumber);
  on_run(report_cmd, [report, importance] {
    report->importance_given = importance->count() > 0;  // with a value or without
    return run_report(*report);
  });
}

int run_leaderboard(const LeaderboardCommandOptions& o) {
  const report::Format format = format_of(o.format);
  std::vector<io::ResultsFile> files;
  for (const std::string& path : o.results) files.push_back(io::ResultsFile::read(path));
  std::optional<search::Mode> mode;
  if (!o.mode.empty()) mode = o.mode == "max" ? search::Mode::Max : search::Mode::Min;
  std::fputs(report::render_cross_leaderboard(files, o.metric, mode, rows_for(o.top, format), format).c_str(), stdout);
  return 0;
}

void setup_leaderboard(CLI::App& app) {
  const auto opt = std::make_shared<LeaderboardCommandOptions>();
  auto* cmd = app.add_subcommand("leaderboard", "Rank the trials of several experiments together (one metric and mode)");
  cmd->add_option("results", opt->results, "Results files (.h5)")->required();
  cmd->add_option("--metric", opt->metric,
                  "Rank by this metric (default: the experiments' own, which must be the same in every file)");
  cmd->add_option("--mode", opt->mode,
                  "min or max: which way --metric is better (default: the experiments' mode, for their own metric; "
                  "a metric of no experiment needs it)")
      ->check(CLI::IsMember({"min", "max"}));
  cmd->add_option("--top", opt->top, "Rows to show (0 = all; default 10 for table and markdown, all for csv and json)");
  cmd->add_option("--format", opt->format, "table, csv, json or markdown")->capture_default_str();
  on_run(cmd, [opt] { return run_leaderboard(*opt); });
}

}  // namespace ranktune::apps
