// WriteThread: rank 0's checkpoint writes off the main thread, in order, with a job's
// error carried back to the main thread (mpi/write_thread.h).
#include "mpi/write_thread.h"

namespace ranktune::mpi {

WriteThread::WriteThread() : thread_([this] { run(); }) {}

WriteThread::~WriteThread() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
    queue_.clear();  // written by nobody: their checkpoints end without a row
  }
  wake_.notify_all();
  thread_.join();
}

void WriteThread::submit(std::function<void()> job) {
  {
    const std::lock_guard lock(mutex_);
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
}

std::size_t WriteThread::take_done() {
  const std::lock_guard lock(mutex_);
  if (done_ == 0 && error_) std::rethrow_exception(error_);
  const std::size_t n = done_;
  done_ = 0;
  return n;
}

std::size_t WriteThread::wait_done() {
  {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return error_ || (queue_.empty() && !running_job_); });
  }
  return take_done();
}

std::size_t WriteThread::wait_done(std::size_t n) {
  {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this, n] { return error_ || done_ >= n || (queue_.empty() && !running_job_); });
  }
  return take_done();
}

std::size_t WriteThread::busy() const {
  const std::lock_guard lock(mutex_);
  return queue_.size() + (running_job_ ? 1 : 0);
}

void WriteThread::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || (!queue_.empty() && !error_); });
    if (stop_) return;
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    running_job_ = true;
    lock.unlock();
    std::exception_ptr failed;
    try {
      job();
    } catch (...) {
      failed = std::current_exception();
    }
    job = nullptr;  // whatever it holds goes before the caller learns it is done
    lock.lock();
    running_job_ = false;
    if (failed) {
      error_ = failed;
      queue_.clear();  // nothing after a failed write: the caller stops on its error
    } else {
      ++done_;
    }
    idle_.notify_all();
  }
}

}  // namespace ranktune::mpi
