// `ranktune report --html`: the self-contained HTML page of a results file, its sections
// and inline SVG charts (report/html.h).
#include "report/html.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <stdexcept>

#include "report/brackets.h"
#include "report/charts.h"
#include "report/evaluations.h"
#include "report/sensitivity.h"
#include "report/grid.h"
#include "report/leaderboard.h"
#include "report/pareto_charts.h"
#include "report/plots.h"

namespace ranktune::report {
namespace {

// An SVG document made inline: the XML declaration may not stand inside an HTML body.
std::string inline_svg(const std::string& svg) {
  const std::size_t at = svg.find("<svg");
  return at == std::string::npos ? std::string() : svg.substr(at);
}

// A chart, or why it cannot be drawn: a file another tool wrote (no column for the metric,
// an exploit event without lineage) still gets the rest of its page.
template <class Svg>
std::string chart(Svg svg) {
  try {
    return inline_svg(svg()) + "\n";
  } catch (const std::invalid_argument& e) {
    return "<p>This chart cannot be drawn: " + html_escape(e.what()) + "</p>\n";
  }
}

std::string section(const std::string& title, const std::string& body) {
  return "<h2>" + html_escape(title) + "</h2>\n" + body;
}

// The events of the kinds people look for after a run, newest last, at most `limit`.
Grid event_grid(const io::ResultsFile& file, const std::vector<search::EventKind>& kinds, std::size_t limit) {
  Grid g{{"time_s", "trial_id", "kind", "message"}, {}, {true, true, false, false}};
  std::vector<const io::EventRow*> rows;
  for (const io::EventRow& e : file.events)
    if (e.kind && std::find(kinds.begin(), kinds.end(), *e.kind) != kinds.end()) rows.push_back(&e);
  const std::size_t skip = rows.size() > limit ? rows.size() - limit : 0;
  for (std::size_t i = skip; i < rows.size(); ++i) {
    const io::EventRow& e = *rows[i];
    char t[32];
    std::snprintf(t, sizeof t, "%.2f", e.time);
    g.body.push_back({t, e.trial >= 0 ? std::to_string(e.trial) : "", e.kind_name(), e.message});
  }
  return g;
}

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:2em;color:#222;max-width:1200px}"
    "table{border-collapse:collapse;margin:0.5em 0 1.5em}"
    "th,td{border:1px solid #ccc;padding:2px 8px;font-size:13px}"
    "th{background:#f2f2f2}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}"
    "h2{margin-top:1.5em;border-bottom:1px solid #ddd}dt{font-weight:bold;float:left;width:10em}"
    "dd{margin-left:11em}svg{display:block;margin:0.5em 0;max-width:100%;height:auto}"
    "pre{background:#f7f7f7;padding:0.8em;overflow:auto;font-size:12px}"
    "table.sortable th{cursor:pointer}p.note{color:#555;font-size:13px}";

// The one script: a click on a leaderboard heading sorts by that column (numbers as
// numbers, blanks last), a second click reverses; a link ending in #sort=COLUMN opens the
// page sorted by it. Without script the table is in rank order.
constexpr const char* kSortScript =
    "document.querySelectorAll('table.sortable').forEach(function(t){"
    "var ths=t.querySelectorAll('thead th');ths.forEach(function(th,i){th.title='sort by '+th.textContent;"
    "th.addEventListener('click',function(){var b=t.tBodies[0],up=th.dataset.up!=='1';th.dataset.up=up?'1':'0';"
    "var rows=Array.prototype.slice.call(b.rows);rows.sort(function(x,y){"
    "var a=x.cells[i].textContent.trim(),c=y.cells[i].textContent.trim();"
    "if(a===''||c==='')return (a==='')-(c==='');var na=Number(a),nc=Number(c);"
    "var v=(!isNaN(na)&&!isNaN(nc))?na-nc:a.localeCompare(c);return up?v:-v;});"
    "rows.forEach(function(r){b.appendChild(r);});});});"
    "var m=location.hash.match(/sort=([^&]+)/);if(m)ths.forEach(function(th){"
    "if(th.textContent===decodeURIComponent(m[1]))th.click();});});";

std::string options_text(const std::string& kind, const search::Options& options) {
  std::string out = kind;
  if (!options.empty())
    out += " (" + join(options, ", ", [](const auto& kv) { return kv.first + "=" + search::to_string(kv.second); }) + ")";
  return out;
}

std::string seconds_text(double s) {
  char buf[48];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%.2f h (%.0f s)", s / 3600, s);
  else std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

}  // namespace

std::string render_html(const io::ResultsFile& file, const std::vector<io::Evaluation>& evaluations, std::size_t top) {
  HtmlOptions o;
  o.top = top;
  return render_html(file, evaluations, o);
}

std::string render_html(const io::ResultsFile& file, const std::vector<io::Evaluation>& evaluations,
                        const HtmlOptions& o) {
  const auto& m = file.meta;
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  if (o.refresh_s > 0) out += "<meta http-equiv=\"refresh\" content=\"" + std::to_string(static_cast<long>(std::ceil(o.refresh_s))) + "\">\n";
  out += "<title>" + html_escape(m.experiment) + ": ranktune report</title>\n<style>" + kStyle +
         "</style>\n</head>\n<body>\n<h1>" + html_escape(m.experiment) + "</h1>\n";
  if (o.refresh_s > 0) out += "<p class=\"note\">The run is going: this page is rewritten as it goes and reloads itself.</p>\n";
  if (o.writer_died)
    out += "<p class=\"note\"><b>The run is no longer running</b>: its writer (rank 0) died without closing the results "
           "file (kill -9, the OOM killer, a lost node). Trials shown as RUNNING were running when it died; "
           "<code>ranktune run --resume</code> goes on with them.</p>\n";

  // What the charts need, once; a file without the metric's column still gets its tables.
  std::optional<ChartData> data;
  std::string no_data;
  try {
    data = chart_data(file, o.log_y, o.config);
  } catch (const std::invalid_argument& e) {
    no_data = e.what();
  }
  const auto with_data = [&](auto draw) {
    if (!data) return "<p>This chart cannot be drawn: " + html_escape(no_data) + "</p>\n";
    return chart([&] { return draw(*data); });
  };
  const RunConfig* cfg = o.config && o.config->parsed ? o.config : nullptr;

  out += "<dl>\n";
  const auto item = [&](const std::string& k, const std::string& v) {
    out += "<dt>" + html_escape(k) + "</dt><dd>" + html_escape(one_line(v)) + "</dd>\n";
  };
  if (o.pareto != nullptr) {
    item("objectives", o.pareto->objectives_text());
    if (const std::string c = o.pareto->constraints_text(); !c.empty()) item("constraints", c);
  } else {
    item("metric", m.metric + " (" + search::to_string(m.mode) + ")");
  }
  item("trials", std::to_string(file.trials.size()) + " (" + counts_line(file) + ")");
  if (data) {
    const Utilization u = utilization(*data);
    char busy[160];
    std::snprintf(busy, sizeof busy, "%.0f%% of %zu workers busy over %s (busy time / (workers x span))",
                  100 * u.share(), u.workers, seconds_text(u.span).c_str());
    item("wall time", seconds_text(u.span) + " from the first start to the last result");
    item("utilization", busy);
  }
  if (cfg) {
    item("search", options_text(cfg->algorithm, cfg->search_options));
    item("scheduler", options_text(cfg->scheduler, cfg->scheduler_options));
  }
  item("created", m.created);
  item("command", m.command_line);
  item("stack", stack_summary(file));
  item("results file", file.path);
  out += "</dl>\n<details><summary>The config of the run" + std::string(m.overrides.empty() ? "" : ", with its --set overrides") +
         "</summary>\n<pre>" + html_escape(m.config_text) + (m.overrides.empty() ? "" : "\n# --set\n" + html_escape(m.overrides)) +
         "</pre>\n" + (o.config && !o.config->parsed ? "<p class=\"note\">It no longer parses: " + html_escape(o.config->error) + "</p>\n" : "") +
         "</details>\n";

  // The leaderboard, with why each trial ended (its end_reason column).
  Grid board = leaderboard_grid(file, o.top, 6, o.pareto);
  // A run whose writer was killed: its RUNNING trials say so.
  const auto status_col = static_cast<std::size_t>(std::find(board.head.begin(), board.head.end(), "status") - board.head.begin());
  if (o.writer_died && status_col < board.head.size())
    for (auto& row : board.body)
      if (row[status_col] == search::to_string(search::TrialStatus::Running)) row[status_col] += " when the writer died";
  out += section("Leaderboard",
                 std::string(o.pareto != nullptr
                                 ? "<p class=\"note\">By Pareto rank (0: the front), then crowding distance (the most "
                                   "isolated first); trials without a rank (not finished, failed) last.</p>\n"
                                 : "") +
                     "<p class=\"note\">Click a heading to sort. end_reason: max_t (ran its course), stopped (by the "
                     "scheduler), done (its program ended first), budget (cut by the time budget), target (the "
                     "experiment reached its target), user (ctl stop), error.</p>\n" +
                     render_html_table(board, "sortable"));
  if (o.pareto != nullptr) {
    const ParetoView& p = *o.pareto;
    out += section("Pareto front", "<p class=\"note\">" + html_escape(pareto_summary(p)) + ".</p>\n" +
                                       chart([&] { return pareto_front_chart(p); }) +
                                       render_html_table(pareto_front_grid(p, 0, 6)));
    out += section("Hypervolume against wall time",
                   p.reference.empty() ? "<p>No hypervolume: " + html_escape(p.hypervolume_note) + ".</p>\n"
                                       : chart([&] { return hypervolume_chart(p); }));
  }

  out += section("Learning curves", with_data([](const ChartData& d) { return curves_chart(d); }));
  out += section("Best value so far", with_data([](const ChartData& d) { return best_so_far_chart(d); }));
  const ImportanceReport importance = importance_of(file, {.method = o.importance}, o.config);
  auto note = [](const std::string& text) { return text.empty() ? std::string() : "<p class=\"note\">" + html_escape(text) + "</p>\n"; };
  out += section("Hyperparameter importance",
                 note("Why: " + importance.result.reason + ". Values: " + importance.budget + ".") +
                     (importance.result.scores.empty() ? "" : inline_svg(importance_chart(importance))) +
                     note(noise_sentence(importance)) + note(importance.note));
  out += section("Parallel coordinates", with_data([](const ChartData& d) { return parallel_coordinates_chart(d); }));
  out += section("Each hyperparameter against the metric", with_data([](const ChartData& d) { return scatter_chart(d); }));
  out += section("Timeline of the workers", with_data([](const ChartData& d) { return timeline_chart(d, utilization(d)); }));

  if (o.config) {
    if (const std::optional<Grid> brackets = run_brackets(file, *o.config))
      out += section("HyperBand brackets",
                     "<p class=\"note\">Brackets fill in trial order; \"ended at each rung\": trials whose last "
                     "iteration was at that rung (stopped there, or, at the last, reached max_t).</p>\n" +
                         render_html_table(*brackets));
  }
  const auto order = best_first(file);
  const auto exploited = [&](search::TrialId id) {
    return std::any_of(file.events.begin(), file.events.end(), [&](const io::EventRow& e) { return e.kind == search::EventKind::Exploit && e.trial == id; });
  };
  const auto pbt_best = std::find_if(order.begin(), order.end(), [&](const search::Trial* t) { return exploited(t->id); });
  if (pbt_best != order.end()) {
    out += section("PBT lineage", with_data([](const ChartData& d) { return lineage_chart(d); }));
    out += section("PBT schedule of trial " + std::to_string((*pbt_best)->id) + ", the best that exploited",
                   chart([&] { return schedule_svg(file, (*pbt_best)->id); }));
  }
  if (!evaluations.empty()) {
    std::string body;
    for (auto it = evaluations.rbegin(); it != evaluations.rend(); ++it) {
      body += "<h3>Evaluation " + std::to_string(it->id) + ": " + html_escape(it->split) + " split, " +
              html_escape(it->created) + ", " + html_escape(it->device) + ", " + std::to_string(it->threads) +
              (it->threads == 1 ? " thread" : " threads") + "</h3>\n" + render_html_table(evaluation_grid(file, *it, o.pareto));
      // The latency split and the trace of the timed batches, where they were measured.
      if (const Grid split = latency_split_grid(*it); !split.body.empty())
        body += "<p class=\"note\">Latency split: p50, p90 and p99 of each part in ms (pre: preprocessing, inf: "
                "inference, post: postprocessing; blank: not measured).</p>\n" +
                render_html_table(split) + chart([&] { return latency_split_chart(*it); });
      if (!it->trace.empty()) body += chart([&] { return latency_trace_chart(*it); });
      // A multi-objective experiment: the held-out front beside the validation front.
      if (o.pareto != nullptr) {
        if (const std::string front = chart([&] { return held_out_front_chart(*o.pareto, *it); }); front.size() > 1)
          body += front;
      }
    }
    out += section("Held-out evaluations (ranktune eval), newest first", body);
    if (const auto grid = sensitivity_grid(newest_sensitivity_group(evaluations)))
      out += section("Pipeline sensitivity: the change of each pipeline against the first (the reference)",
                     render_html_table(*grid));
  }
  out += o.comparison_section;
  // Where the searcher began (`[search] warm_start`, `run --warm-start`): the files and
  // how many of their trials it learned from, as the text report says.
  const Grid warm = event_grid(file, {search::EventKind::WarmStart}, 200);
  if (!warm.body.empty()) out += section("Warm start: the searcher began from these experiments", render_html_table(warm));
  const Grid control = event_grid(file, {search::EventKind::Control}, 200);
  if (!control.body.empty()) out += section("Live control (ranktune ctl)", render_html_table(control));
  const Grid errors = event_grid(file, {search::EventKind::Error, search::EventKind::Retry, search::EventKind::Warning, search::EventKind::Revert}, 200);
  if (!errors.body.empty()) out += section("Errors and warnings (the last 200)", render_html_table(errors));

  Grid workers{{"rank", "host", "local_index", "device", "device_name"}, {}, {true, false, true, false, false}};
  for (const io::WorkerInfo& w : file.workers)
    workers.body.push_back({std::to_string(w.rank), w.host, std::to_string(w.local_index), w.device, w.device_name});
  if (!workers.body.empty()) out += section("Workers", render_html_table(workers));
  Grid stack{{"key", "value"}, {}, {false, false}};
  for (const auto& [k, v] : m.stack) stack.body.push_back({k, v});
  out += section("Hardware and software stack", render_html_table(stack));
  out += "<script>" + std::string(kSortScript) + "</script>\n";
  out += "<p>ranktune " + html_escape(m.ranktune_version) + ", schema " + std::to_string(m.schema_version) +
         "</p>\n</body>\n</html>\n";
  return out;
}

std::string html_page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + html_escape(title) +
         "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<h1>" + html_escape(title) + "</h1>\n" + body +
         "</body>\n</html>\n";
}

}  // namespace ranktune::report
