#include "io/control_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "io/json.h"

namespace ranktune::io {
namespace {

// Closes a file descriptor on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

constexpr std::size_t kMaxLine = 64 * 1024;

}  // namespace

std::string control_path(const std::string& results) { return results + ".control"; }

std::string control_line(const search::ControlRequest& r) {
  nlohmann::json j = {{"id", r.id}, {"op", search::to_string(r.kind)}};
  if (r.kind != search::ControlRequest::Kind::Add) j["trial"] = r.trial;
  if (r.kind == search::ControlRequest::Kind::Add && r.count > 0) {
    j["count"] = r.count;
  } else if (r.kind != search::ControlRequest::Kind::Stop) {
    j["config"] = to_json(r.config);
  }
  if (r.force) j["force"] = true;
  return j.dump();
}

search::ControlRequest parse_control_line(const std::string& line) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("not JSON: ") + e.what());
  }
  if (!j.is_object()) throw std::invalid_argument("not a JSON object");
  search::ControlRequest r;
  if (j.contains("id") && j["id"].is_string()) r.id = j["id"];
  if (!j.contains("op") || !j["op"].is_string()) throw std::invalid_argument("no \"op\" (stop, set or add)");
  const std::string op = j["op"];
  if (op == "stop") {
    r.kind = search::ControlRequest::Kind::Stop;
  } else if (op == "set") {
    r.kind = search::ControlRequest::Kind::Set;
  } else if (op == "add") {
    r.kind = search::ControlRequest::Kind::Add;
  } else {
    throw std::invalid_argument("unknown op '" + op + "'; valid: stop, set, add");
  }
  if (r.kind != search::ControlRequest::Kind::Add) {
    if (!j.contains("trial") || !j["trial"].is_number_integer() || j["trial"].get<std::int64_t>() < 1)
      throw std::invalid_argument("\"" + op + "\" needs \"trial\", a trial id >= 1");
    r.trial = j["trial"];
  }
  if (r.kind == search::ControlRequest::Kind::Add && j.contains("count")) {
    if (!j["count"].is_number_integer() || j["count"].get<std::int64_t>() < 1 || j.contains("config"))
      throw std::invalid_argument("\"count\" must be an integer >= 1, without a \"config\"");
    r.count = j["count"];
  } else if (r.kind != search::ControlRequest::Kind::Stop) {
    if (!j.contains("config") || !j["config"].is_object())
      throw std::invalid_argument("\"" + op + "\" needs \"config\", an object of parameter values");
    try {
      r.config = config_from_json(j["config"]);
    } catch (const std::exception& e) {
      throw std::invalid_argument(std::string("bad \"config\": ") + e.what());
    }
  }
  if (j.contains("force")) {
    if (!j["force"].is_boolean()) throw std::invalid_argument("\"force\" must be true or false");
    r.force = j["force"];
  }
  return r;
}

void append_control(const std::string& results, const search::ControlRequest& request) {
  const std::string path = control_path(results);
  const std::string line = control_line(request) + "\n";
  Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw std::runtime_error(path + ": cannot open it to append a request: " + std::strerror(errno));
  ::flock(fd.get(), LOCK_EX);  // best effort: some network file systems have no flock
  const ssize_t n = ::write(fd.get(), line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size()))
    throw std::runtime_error(path + ": cannot append the request: " + (n < 0 ? std::strerror(errno) : "short write"));
  ::fsync(fd.get());  // over NFS, the run's node sees it once it is on the server
}

ControlInbox::ControlInbox(std::string results) : path_(control_path(results)) {
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0) offset_ = static_cast<std::uint64_t>(st.st_size);
}

std::vector<ControlLine> ControlInbox::poll() {
  std::vector<ControlLine> out;
  // open(2), then fstat, rather than stat(2): on NFS an open revalidates the file's
  // attributes (close-to-open consistency), where a bare stat may answer from a cache that
  // lags the login node's append by up to a minute.
  Fd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
    offset_ = 0;  // removed: a new file is read from its start
    partial_.clear();
    return out;
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size < offset_) {
    offset_ = 0;
    partial_.clear();
  }
  if (size == offset_) return out;
  std::string chunk(static_cast<std::size_t>(std::min<std::uint64_t>(size - offset_, 1 << 20)), '\0');
  const ssize_t n = ::pread(fd.get(), chunk.data(), chunk.size(), static_cast<off_t>(offset_));
  if (n <= 0) return out;
  chunk.resize(static_cast<std::size_t>(n));
  offset_ += static_cast<std::uint64_t>(n);
  partial_ += chunk;
  std::size_t start = 0;
  for (std::size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    const std::string line = partial_.substr(start, nl - start);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ControlLine c;
    try {
      c.request = parse_control_line(line);
      c.id = c.request->id;
    } catch (const std::invalid_argument& e) {
      c.error = e.what();
      // The id, if the line has one, so that its sender hears why.
      try {
        const auto j = nlohmann::json::parse(line);
        if (j.is_object() && j.contains("id") && j["id"].is_string()) c.id = j["id"];
      } catch (const nlohmann::json::exception&) {
      }
    }
    out.push_back(std::move(c));
  }
  partial_.erase(0, start);
  if (partial_.size() > kMaxLine) {  // no newline in 64 KiB: not a request; drop it
    out.push_back({std::nullopt, "", "a line longer than 64 KiB"});
    partial_.clear();
  }
  return out;
}

}  // namespace ranktune::io
