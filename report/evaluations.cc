// Held-out evaluations as tables and JSON: one row per evaluated trial, its held-out
// metrics and its latency per batch size (report/evaluations.h).
#include "report/evaluations.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "sys/printable.h"

namespace ranktune::report {
namespace {

std::string fixed(double v, int digits) {
  if (!std::isfinite(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

using Key = std::pair<search::TrialId, std::int64_t>;  // (trial, checkpoint iteration)

}  // namespace

Grid evaluation_grid(const io::ResultsFile& file, const io::Evaluation& ev, const ParetoView* pareto) {
  std::vector<Key> keys;
  std::vector<std::string> metrics;
  std::vector<std::int64_t> batches;
  std::map<Key, std::map<std::string, double>> values;
  std::map<Key, std::map<std::int64_t, const io::EvalLatencyRow*>> latency;
  const auto add_key = [&](const Key& k) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  };
  for (const io::EvalMetricRow& m : ev.metrics) {
    add_key({m.trial, m.iteration});
    if (std::find(metrics.begin(), metrics.end(), m.metric) == metrics.end()) metrics.push_back(m.metric);
    values[{m.trial, m.iteration}][m.metric] = m.value;
  }
  for (const io::EvalLatencyRow& l : ev.latency) {
    add_key({l.trial, l.iteration});
    if (std::find(batches.begin(), batches.end(), l.batch_size) == batches.end()) batches.push_back(l.batch_size);
    latency[{l.trial, l.iteration}][l.batch_size] = &l;
  }
  std::map<search::TrialId, std::size_t> rank;
  std::map<search::TrialId, int> pareto_rank;
  if (pareto != nullptr) {
    for (std::size_t i = 0; i < pareto->entries.size(); ++i) {
      rank[pareto->entries[i].trial->id] = i + 1;
      pareto_rank[pareto->entries[i].trial->id] = pareto->entries[i].rank;
    }
  } else {
    const auto order = best_first(file);
    for (std::size_t i = 0; i < order.size(); ++i) rank[order[i]->id] = i + 1;
  }
  std::map<Key, double> score;
  for (const io::CheckpointRow& c : file.checkpoints) score[{c.trial, c.iteration}] = c.score;

  Grid g;
  g.head = {"rank", "trial_id", "iteration", file.meta.metric};
  if (pareto != nullptr) g.head.insert(g.head.begin() + 1, "pareto_rank");
  g.head.insert(g.head.end(), metrics.begin(), metrics.end());
  for (const std::int64_t b : batches) {
    const std::string p = "b" + std::to_string(b) + " ";
    g.head.insert(g.head.end(), {p + "p50_ms", p + "p99_ms", p + "samples/s"});
  }
  g.numeric.assign(g.head.size(), true);
  for (const Key& k : keys) {
    std::vector<std::string>& row = g.body.emplace_back();
    row.push_back(rank.contains(k.first) ? std::to_string(rank[k.first]) : "");
    if (pareto != nullptr)
      row.push_back(pareto_rank.contains(k.first) && pareto_rank[k.first] >= 0 ? std::to_string(pareto_rank[k.first]) : "");
    row.push_back(std::to_string(k.first));
    row.push_back(std::to_string(k.second));
    row.push_back(score.contains(k) ? fixed(score[k], 4) : "");
    for (const std::string& m : metrics) row.push_back(values[k].contains(m) ? fixed(values[k][m], 4) : "");
    for (const std::int64_t b : batches) {
      const io::EvalLatencyRow* l = latency[k].contains(b) ? latency[k][b] : nullptr;
      row.push_back(l ? fixed(l->p50_ms, 3) : "");
      row.push_back(l ? fixed(l->p99_ms, 3) : "");
      row.push_back(l ? fixed(l->samples_per_s, 0) : "");
    }
  }
  return g;
}

Grid latency_split_grid(const io::Evaluation& ev) {
  Grid g;
  g.head = {"trial_id", "iteration", "batch_size"};
  for (const char* part : {"pre", "inf", "post"})
    for (const char* p : {"p50_ms", "p90_ms", "p99_ms"}) g.head.push_back(std::string(part) + " " + p);
  g.numeric.assign(g.head.size(), true);
  for (const io::EvalLatencyRow& l : ev.latency) {
    if (!l.has_split()) continue;
    std::vector<std::string>& row = g.body.emplace_back();
    row = {std::to_string(l.trial), std::to_string(l.iteration), std::to_string(l.batch_size)};
    for (const double ms : l.parts_ms) row.push_back(fixed(ms, 3));  // blank: not measured
  }
  return g;
}

std::string render_evaluation(const io::ResultsFile& file, const io::Evaluation& ev, Format format,
                              const ParetoView* pareto) {
  const Grid g = evaluation_grid(file, ev, pareto);
  const Grid split = latency_split_grid(ev);
  const std::string split_title = "latency split (preprocessing, inference, postprocessing; blank: not measured)";
  const std::string title = "held-out evaluation " + std::to_string(ev.id) + " (" + ev.split + " split, " +
                            one_line(ev.created) + ", " + one_line(ev.device) + ", " + std::to_string(ev.threads) +
                            (ev.threads == 1 ? " thread" : " threads") + ")";
  switch (format) {
    case Format::Csv: return render_csv(g);
    case Format::Markdown:
      return "### " + markdown_escape(title) + "\n\n" + render_markdown_table(g) +
             (split.body.empty() ? "" : "\n" + markdown_escape(split_title) + "\n\n" + render_markdown_table(split));
    case Format::Json: {
      const auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
      nlohmann::json metrics = nlohmann::json::array(), latency = nlohmann::json::array();
      for (const io::EvalMetricRow& m : ev.metrics)
        metrics.push_back({{"trial_id", m.trial}, {"iteration", m.iteration}, {"metric", m.metric}, {"value", num(m.value)}});
      for (const io::EvalLatencyRow& l : ev.latency) {
        nlohmann::json row = {{"trial_id", l.trial}, {"iteration", l.iteration}, {"batch_size", l.batch_size},
                              {"batches", l.batches}, {"mean_ms", num(l.mean_ms)}, {"p50_ms", num(l.p50_ms)},
                              {"p90_ms", num(l.p90_ms)}, {"p99_ms", num(l.p99_ms)}, {"max_ms", num(l.max_ms)},
                              {"samples_per_s", num(l.samples_per_s)}};
        for (std::size_t i = 0; i < std::size(l.parts_ms); ++i) row[io::kLatencyPartNames[i]] = num(l.parts_ms[i]);
        latency.push_back(std::move(row));
      }
      nlohmann::json trace = nlohmann::json::array();
      for (const io::EvalTraceRow& t : ev.trace)
        trace.push_back({{"trial_id", t.trial}, {"iteration", t.iteration}, {"batch_size", t.batch_size},
                         {"batch", t.batch}, {"start_ms", num(t.start_ms)}, {"total_ms", num(t.total_ms)},
                         {"pre_ms", num(t.pre_ms)}, {"inference_ms", num(t.inference_ms)}, {"post_ms", num(t.post_ms)}});
      nlohmann::json confusion = nlohmann::json::array();
      for (const io::EvalConfusionRow& c : ev.confusion)
        confusion.push_back({{"trial_id", c.trial}, {"iteration", c.iteration}, {"true_label", c.true_label},
                             {"predicted", c.predicted}, {"count", c.count}});
      nlohmann::json doc = {{"evaluation", ev.id}, {"created", ev.created},          {"split", ev.split},
                            {"device", ev.device}, {"threads", ev.threads},          {"metrics", std::move(metrics)},
                            {"latency", std::move(latency)}, {"trace", std::move(trace)},
                            {"confusion", std::move(confusion)}};
      return sys::printable_json(doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)) + "\n";
    }
    case Format::Table: break;
  }
  return title + "\n" + render_table(g) + (split.body.empty() ? "" : split_title + "\n" + render_table(split));
}

}  // namespace ranktune::report
