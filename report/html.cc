// `ranktune report --html`: the self-contained HTML page of a results file, its sections
// and inline SVG charts (report/html.h).
#include "report/html.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "report/evaluations.h"
#include "report/grid.h"
#include "report/leaderboard.h"
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
Grid event_grid(const io::ResultsFile& file, const std::vector<std::string>& kinds, std::size_t limit) {
  Grid g{{"time_s", "trial_id", "kind", "message"}, {}, {true, true, false, false}};
  std::vector<const io::EventRow*> rows;
  for (const io::EventRow& e : file.events)
    if (std::find(kinds.begin(), kinds.end(), e.kind) != kinds.end()) rows.push_back(&e);
  const std::size_t skip = rows.size() > limit ? rows.size() - limit : 0;
  for (std::size_t i = skip; i < rows.size(); ++i) {
    const io::EventRow& e = *rows[i];
    char t[32];
    std::snprintf(t, sizeof t, "%.2f", e.time);
    g.body.push_back({t, e.trial >= 0 ? std::to_string(e.trial) : "", e.kind, e.message});
  }
  return g;
}

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:2em;color:#222}"
    "table{border-collapse:collapse;margin:0.5em 0 1.5em}"
    "th,td{border:1px solid #ccc;padding:2px 8px;font-size:13px}"
    "th{background:#f2f2f2}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}"
    "h2{margin-top:1.5em;border-bottom:1px solid #ddd}dt{font-weight:bold;float:left;width:10em}"
    "dd{margin-left:11em}";

}  // namespace

std::string render_html(const io::ResultsFile& file, const std::vector<io::Evaluation>& evaluations, std::size_t top) {
  const auto& m = file.meta;
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
                    html_escape(m.experiment) + ": ranktune report</title>\n<style>" + kStyle +
                    "</style>\n</head>\n<body>\n<h1>" + html_escape(m.experiment) + "</h1>\n<dl>\n";
  const auto item = [&](const std::string& k, const std::string& v) {
    out += "<dt>" + html_escape(k) + "</dt><dd>" + html_escape(one_line(v)) + "</dd>\n";
  };
  item("metric", m.metric + " (" + search::to_string(m.mode) + ")");
  item("trials", std::to_string(file.trials.size()) + " (" + counts_line(file) + ")");
  item("created", m.created);
  item("command", m.command_line);
  item("stack", stack_summary(file));
  item("results file", file.path);
  out += "</dl>\n";

  out += section("Leaderboard", render_html_table(leaderboard_grid(file, top, 6)));
  const std::size_t curves = std::min<std::size_t>(top == 0 ? 10 : top, 10);
  out += section("Learning curves of the best " + std::to_string(curves),
                 chart([&] { return learning_curves_svg(file, curves); }));
  const bool pbt =
      std::any_of(file.events.begin(), file.events.end(), [](const io::EventRow& e) { return e.kind == "exploit"; });
  const auto order = best_first(file);
  if (pbt && !order.empty())
    out += section("PBT schedule of trial " + std::to_string(order.front()->id),
                   chart([&] { return schedule_svg(file, order.front()->id); }));
  if (!evaluations.empty()) {
    std::string body;
    for (auto it = evaluations.rbegin(); it != evaluations.rend(); ++it) {
      body += "<h3>Evaluation " + std::to_string(it->id) + ": " + html_escape(it->split) + " split, " +
              html_escape(it->created) + ", " + html_escape(it->device) + ", " + std::to_string(it->threads) +
              (it->threads == 1 ? " thread" : " threads") + "</h3>\n" + render_html_table(evaluation_grid(file, *it));
    }
    out += section("Held-out evaluations (ranktune eval), newest first", body);
  }
  const Grid control = event_grid(file, {"control"}, 200);
  if (!control.body.empty()) out += section("Live control (ranktune ctl)", render_html_table(control));
  const Grid errors = event_grid(file, {"error", "retry", "warning", "revert"}, 200);
  if (!errors.body.empty()) out += section("Errors and warnings (the last 200)", render_html_table(errors));

  Grid workers{{"rank", "host", "local_index", "device", "device_name"}, {}, {true, false, true, false, false}};
  for (const io::WorkerInfo& w : file.workers)
    workers.body.push_back({std::to_string(w.rank), w.host, std::to_string(w.local_index), w.device, w.device_name});
  if (!workers.body.empty()) out += section("Workers", render_html_table(workers));
  Grid stack{{"key", "value"}, {}, {false, false}};
  for (const auto& [k, v] : m.stack) stack.body.push_back({k, v});
  out += section("Hardware and software stack", render_html_table(stack));
  out += "<p>ranktune " + html_escape(m.ranktune_version) + ", schema " + std::to_string(m.schema_version) +
         "</p>\n</body>\n</html>\n";
  return out;
}

}  // namespace ranktune::report
