#pragma once
/// One thread that runs rank 0's checkpoint writes in the order they were queued, so that
/// the main thread (which makes every MPI call) receives the next chunk while the previous
/// one goes to the disk. Debian's HDF5 is built thread-safe (one lock around the library),
/// so a write here and the main thread's HDF5 calls (rows, flushes) take turns safely;
/// what the jobs touch besides HDF5 is the caller's to keep apart (see CheckpointStreams).

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace ranktune::mpi {

class WriteThread {
 public:
  WriteThread();
  /// Lets the job running finish, drops the ones still queued, and joins. Never throws.
  ~WriteThread();
  WriteThread(const WriteThread&) = delete;
  WriteThread& operator=(const WriteThread&) = delete;

  /// Queues `job`; jobs run one at a time, in the order queued.
  void submit(std::function<void()> job);
  /// How many jobs have finished since the last call, oldest first. The first job that
  /// threw ends the thread's work (no later job runs): its exception is rethrown here, on
  /// the caller's thread, once the jobs before it have been counted by an earlier call.
  std::size_t take_done();
  /// Waits until every job queued has finished, or one threw; then as take_done().
  std::size_t wait_done();
  /// Waits until at least `n` jobs have finished since the last take_done() (n at most
  /// those queued), or one threw; then as take_done().
  std::size_t wait_done(std::size_t n);
  /// Jobs queued or running.
  std::size_t busy() const;

 private:
  void run();

  mutable std::mutex mutex_;
  std::condition_variable wake_;  ///< the thread: a job is queued, or it is to stop
  std::condition_variable idle_;  ///< wait_done: a job finished
  std::deque<std::function<void()>> queue_;
  bool running_job_ = false;
  std::size_t done_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;  ///< last: started once the members above exist
};

}  // namespace ranktune::mpi
