#pragma once
/// NSML's web UI without a server: with `[report] html = "PATH"`, rank 0 rewrites one HTML
/// page (report/html.h) every `html_interval_s` while the run goes, with a refresh tag, and a
/// last time at its end without it. It renders from what rank 0 holds already, not from the
/// file: it mirrors the recorder's results and events as they are recorded (a copy of each
/// row in memory, about 40 bytes a result) and takes the controller's trials at each tick.
/// Off the hot path: the driver's loop pays only for a copy of that state; the rendering
/// and the write (beside the page, then renamed over it: sys::replace_file) run on a thread
/// of their own, and a tick that finds the last page still rendering skips.

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "io/store.h"
#include "report/run_config.h"
#include "controller/controller.h"

namespace ranktune::experiment {

class LivePage final : public controller::ControllerObserver {
 public:
  /// `meta`, `metrics` and `workers`: the run's, as its results file has them.
  LivePage(const config::ExperimentConfig& cfg, io::StoreMeta meta, std::vector<std::string> metrics,
           std::vector<io::WorkerInfo> workers);
  /// Waits for a page being rendered, then joins the thread.
  ~LivePage() override;
  LivePage(const LivePage&) = delete;
  LivePage& operator=(const LivePage&) = delete;

  /// A resumed run: the rows the file had before it, so the page shows the whole experiment.
  void seed(const io::ResultsFile& previous);

  void on_result(const search::Trial& t, std::int64_t iteration, double time, const search::Metrics& metrics) override;
  void on_event(double time, search::TrialId trial, int worker, search::EventKind kind,
                const std::string& message) override;

  /// Hands a copy of the state to the render thread when `interval` has passed since the
  /// last page and the thread is idle.
  void tick(double now, const std::vector<search::Trial>& trials);
  /// The final page, without the refresh tag, rendered and written before this returns.
  void finish(const std::vector<search::Trial>& trials);

  /// What the pages cost: "N pages to PATH; rank 0's loop X ms per page (the copy), the
  /// render thread Y ms per page", and the last error if a page could not be written.
  std::string summary() const;

 private:
  std::unique_ptr<io::ResultsFile> snapshot(const std::vector<search::Trial>& trials) const;
  void render(const io::ResultsFile& file, bool final);
  void loop();

  std::string path_;
  double interval_s_;
  report::RunConfig config_;
  io::StoreMeta meta_;
  io::StoreSchema schema_;
  std::string results_path_;
  std::vector<io::WorkerInfo> workers_;
  std::vector<io::ResultRow> results_;
  std::vector<io::EventRow> events_;
  double last_tick_ = -1e300;
  double copy_s_ = 0;  ///< summed over the pages, on rank 0's loop

  // Shared with the render thread, under mutex_.
  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::unique_ptr<io::ResultsFile> job_;
  bool busy_ = false, quit_ = false;
  std::size_t pages_ = 0;
  double render_s_ = 0;
  std::string error_;
  std::thread thread_;
};

}  // namespace ranktune::experiment
