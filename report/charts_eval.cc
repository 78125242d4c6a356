// The charts of held-out evaluations in the HTML report (report/evaluations.h): the trace of
// the timed batches, and the split of their latency into preprocessing, inference and
// postprocessing as stacked bars (MLModelScope's per-layer and per-stage breakdowns, drawn
// the way its reports draw them: a timeline per batch, and the share of each stage).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "report/evaluations.h"
#include "report/svg_canvas.h"

namespace ranktune::report {
namespace {

std::string ms_text(double ms) {
  if (!std::isfinite(ms)) return "not measured";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g ms", ms);
  return buf;
}

using Key = std::pair<search::TrialId, std::int64_t>;  // (trial, checkpoint iteration)

}  // namespace

std::string latency_trace_chart(const io::Evaluation& ev, std::size_t max_trials) {
  if (ev.trace.empty()) return "";
  // Trials in the evaluation's order; per trial, a line per batch size in the order timed.
  std::vector<Key> trials;
  std::map<Key, std::vector<std::int64_t>> sizes;
  std::map<std::pair<Key, std::int64_t>, std::vector<std::pair<double, double>>> lines;  // (start s, total ms)
  for (const io::EvalTraceRow& r : ev.trace) {
    const Key k{r.trial, r.iteration};
    if (std::find(trials.begin(), trials.end(), k) == trials.end()) trials.push_back(k);
    auto& s = sizes[k];
    if (std::find(s.begin(), s.end(), r.batch_size) == s.end()) s.push_back(r.batch_size);
    lines[{k, r.batch_size}].emplace_back(r.start_ms / 1e3, r.total_ms);
  }
  const std::size_t shown = std::min(trials.size(), max_trials);
  const double W = 760, ph = 190, top = 30, gap = 60;
  SvgCanvas svg(W, top + static_cast<double>(shown) * (ph + gap));
  for (std::size_t t = 0; t < shown; ++t) {
    const Key& k = trials[t];
    std::vector<double> xs, ys;
    for (const std::int64_t b : sizes[k])
      for (const auto& [x, y] : lines[{k, b}]) {
        xs.push_back(x);
        ys.push_back(y);
      }
    Panel p{70, top + static_cast<double>(t) * (ph + gap), W - 70 - 150, ph,
            linear_scale(0, *std::max_element(xs.begin(), xs.end())), fit_scale(ys)};
    p.xs.lo = 0;
    const bool log = p.ys.kind == Scale::Kind::Log;
    svg.axes(p, "time since the batch size's timing began (s)", std::string("ms per batch") + (log ? " (log)" : ""),
             "trial " + std::to_string(k.first) + " (iteration " + std::to_string(k.second) + "): latency of each timed batch");
    double ly = p.y + 8;
    for (std::size_t i = 0; i < sizes[k].size(); ++i, ly += 15) {
      const std::int64_t b = sizes[k][i];
      auto& pts = lines[{k, b}];
      std::sort(pts.begin(), pts.end());
      svg.polyline(p, pts, {palette(i), "none", 1.2}, "batch size " + std::to_string(b));
      svg.line(p.x + p.w + 14, ly, p.x + p.w + 34, ly, {palette(i), "none", 2});
      svg.text(p.x + p.w + 39, ly + 4, "batch size " + std::to_string(b) + " (" + std::to_string(pts.size()) + " kept)", 11);
    }
  }
  if (shown < trials.size())
    svg.text(70, top + static_cast<double>(shown) * (ph + gap) - 20,
             "and " + std::to_string(trials.size() - shown) + " more trials (in /evaluations/trace)", 11);
  return svg.str("latency trace of the timed batches");
}

std::string latency_split_chart(const io::Evaluation& ev) {
  // Per batch size, a panel with a bar per trial: its median pre, inference and post, stacked.
  std::vector<std::int64_t> sizes;
  std::map<std::int64_t, std::vector<const io::EvalLatencyRow*>> bars;
  for (const io::EvalLatencyRow& l : ev.latency) {
    if (!l.has_split()) continue;
    if (!bars.contains(l.batch_size)) sizes.push_back(l.batch_size);
    bars[l.batch_size].push_back(&l);
  }
  if (sizes.empty()) return "";
  const char* names[] = {"preprocessing", "inference", "postprocessing"};
  const double W = 760, row = 20, left = 170, width = 420, top = 40, gap = 50;
  double height = top;
  for (const std::int64_t b : sizes) height += row * static_cast<double>(bars[b].size()) + gap;
  SvgCanvas svg(W, height);
  svg.text(10, 16, "median time of each part per batch (p50 of each part, so a bar can differ from the p50 of the whole)", 12,
           "start", 0, "bold");
  for (int part = 0; part < 3; ++part) {
    const double x = left + 170.0 * part;
    svg.rect(x, 24, 12, 10, {"", palette(static_cast<std::size_t>(part))});
    svg.text(x + 16, 33, names[part], 11);
  }
  double y = top + 16;
  for (const std::int64_t b : sizes) {
    double most = 0;
    for (const io::EvalLatencyRow* l : bars[b]) {
      double sum = 0;
      for (int part = 0; part < 3; ++part) sum += std::isfinite(l->parts_ms[3 * part]) ? l->parts_ms[3 * part] : 0;
      most = std::max(most, sum);
    }
    const double n = static_cast<double>(bars[b].size());
    Panel p{left, y, width, row * n, linear_scale(0, most > 0 ? most : 1), linear_scale(0, n)};
    p.xs.lo = 0;
    svg.axes(p, "ms", "", "batch size " + std::to_string(b));
    for (std::size_t i = 0; i < bars[b].size(); ++i) {
      const io::EvalLatencyRow& l = *bars[b][i];
      const double by = y + row * static_cast<double>(i);
      svg.text(left - 8, by + 14, "trial " + std::to_string(l.trial) + " (it. " + std::to_string(l.iteration) + ")", 11,
               "end");
      double at = 0;
      std::string label;
      for (int part = 0; part < 3; ++part) {
        const double ms = l.parts_ms[3 * part];
        label += (part ? " + " : "") + ms_text(ms);
        if (!std::isfinite(ms)) continue;  // not measured: no segment
        svg.rect(p.px(at), by + 3, p.px(at + ms) - p.px(at), row - 6, {"", palette(static_cast<std::size_t>(part))},
                 std::string(names[part]) + " p50: " + ms_text(ms) + " (p90 " + ms_text(l.parts_ms[3 * part + 1]) +
                     ", p99 " + ms_text(l.parts_ms[3 * part + 2]) + ")");
        at += ms;
      }
      svg.text(p.px(at) + 6, by + 14, label, 10);
    }
    y += row * n + gap;
  }
  return svg.str("latency split into preprocessing, inference and postprocessing");
}

}  // namespace ranktune::report
