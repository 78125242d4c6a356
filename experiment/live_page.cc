// The page rank 0 rewrites as the run goes (experiment/live_page.h).
#include "experiment/live_page.h"

#include <chrono>
#include <cstdio>

#include "report/html.h"
#include "sys/safe_fs.h"

namespace ranktune::experiment {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

LivePage::LivePage(const config::ExperimentConfig& cfg, io::StoreMeta meta, std::vector<std::string> metrics,
                   std::vector<io::WorkerInfo> workers)
    : path_(cfg.report_html),
      interval_s_(cfg.report_html_interval_s),
      config_(report::run_config(cfg)),
      meta_(std::move(meta)),
      results_path_(cfg.results),
      workers_(std::move(workers)) {
  schema_.metrics = std::move(metrics);
  thread_ = std::thread([this] { loop(); });
}

LivePage::~LivePage() {
  {
    std::unique_lock lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void LivePage::seed(const io::ResultsFile& previous) {
  results_ = previous.results;
  events_ = previous.events;
}

void LivePage::on_result(const search::Trial& t, std::int64_t iteration, double time, const search::Metrics& metrics) {
  io::ResultRow row{t.id, t.attempt, iteration, time, std::vector<double>(schema_.metrics.size(), NAN)};
  for (std::size_t i = 0; i < schema_.metrics.size(); ++i)
    if (const auto it = metrics.find(schema_.metrics[i]); it != metrics.end()) row.values[i] = it->second;
  results_.push_back(std::move(row));
}

void LivePage::on_event(double time, search::TrialId trial, int worker, search::EventKind kind,
                        const std::string& message) {
  events_.push_back({time, trial, worker, kind, message});
}

std::unique_ptr<io::ResultsFile> LivePage::snapshot(const std::vector<search::Trial>& trials) const {
  auto f = std::make_unique<io::ResultsFile>();
  f->path = results_path_;
  f->meta = meta_;
  f->schema = schema_;
  for (const search::Trial& t : trials)
    if (t.id > 0) f->trials.push_back(t);
  f->results = results_;
  f->events = events_;
  f->workers = workers_;
  return f;
}

void LivePage::tick(double now, const std::vector<search::Trial>& trials) {
  if (now - last_tick_ < interval_s_) return;
  {
    std::unique_lock lock(mutex_);
    if (busy_) return;  // the last page is still rendering: skip, never queue behind it
  }
  last_tick_ = now;
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<io::ResultsFile> job = snapshot(trials);
  copy_s_ += seconds_since(t0);
  {
    std::unique_lock lock(mutex_);
    job_ = std::move(job);
    busy_ = true;
  }
  wake_.notify_all();
}

void LivePage::finish(const std::vector<search::Trial>& trials) {
  {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return !busy_; });
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<io::ResultsFile> file = snapshot(trials);
  copy_s_ += seconds_since(t0);
  render(*file, true);
}

void LivePage::render(const io::ResultsFile& file, bool final) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string error;
  try {
    report::HtmlOptions o;
    o.top = 100;
    o.config = &config_;
    // A multi-objective run's page shows its front as the report's does.
    const auto pareto = report::pareto_view(file, config_.objectives);
    o.pareto = pareto ? &*pareto : nullptr;
    o.refresh_s = final ? 0 : interval_s_;
    sys::replace_file(path_, report::render_html(file, {}, o));
  } catch (const std::exception& e) {
    error = e.what();
  }
  std::unique_lock lock(mutex_);
  ++pages_;
  render_s_ += seconds_since(t0);
  if (!error.empty()) error_ = error;
}

void LivePage::loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return quit_ || job_; });
    if (!job_) return;  // quit, nothing left to render
    std::unique_ptr<io::ResultsFile> job = std::move(job_);
    lock.unlock();
    render(*job, false);
    lock.lock();
    busy_ = false;
    idle_.notify_all();
    if (quit_) return;
  }
}

std::string LivePage::summary() const {
  std::unique_lock lock(mutex_);
  char buf[320];
  const double n = pages_ ? static_cast<double>(pages_) : 1;
  std::snprintf(buf, sizeof buf, "%zu pages to %s; rank 0's loop %.2f ms per page (the copy), the render thread %.1f ms per page",
                pages_, path_.c_str(), 1e3 * copy_s_ / n, 1e3 * render_s_ / n);
  return std::string(buf) + (error_.empty() ? "" : "; last error: " + error_);
}

}  // namespace ranktune::experiment
