// The live-control file: its JSON lines, the appends of `ranktune ctl` and rank 0's
// ControlInbox, with the owner and mode checks (io/control_file.h: the channel and who may
// use it).
#include "io/control_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "io/json.h"
#include "sys/safe_fs.h"

namespace ranktune::io {
namespace {

constexpr std::size_t kMaxLine = 64 * 1024;
constexpr mode_t kMode = 0600;  // the job's user alone may write requests

std::string octal(mode_t mode) {
  char b[8];
  std::snprintf(b, sizeof b, "%04o", static_cast<unsigned>(mode & 07777));
  return b;
}

// The rules both ends apply to an open control file beyond sys/safe_fs.h's (a regular file,
// one link): mode 0600, so that no other user can have written a line into it.
void check_mode(const struct stat& st, const std::string& path) {
  if ((st.st_mode & 07777) != kMode)
    throw std::invalid_argument(path + " has mode " + octal(st.st_mode) +
                                ", not 0600: requests must come from the run's user alone. Remove it; the run makes it "
                                "again (at its next look, or when it starts)");
}

// Opens the control file for rank 0: the existing one, which must be this user's, a
// regular file with one link (not followed through a link, not blocking on a FIFO) and
// mode 0600; else, with `create`, made with O_EXCL and mode 0600 (without, an empty fd).
// With `tighten` (a run that starts), an existing file that no one else could write but
// that others may read (0644: an older ranktune's ctl made it so) is made 0600: its lines
// are an earlier run's and are never carried out, so nothing in it needs to be trusted.
sys::UniqueFd open_inbox(const std::string& path, struct stat& st, bool create = true, bool tighten = false) {
  sys::OpenOptions o;
  o.access = O_RDONLY;
  o.mode = kMode;
  o.owned = true;
  try {
    sys::UniqueFd fd;
    try {
      fd = sys::open_file(path, o);
    } catch (const sys::FsError& e) {
      if (e.error() != ENOENT) throw;
      if (!create) return fd;
      o.create = sys::Create::IfMissing;  // IfMissing: another process may make it first
      fd = sys::open_file(path, o);
      // Exactly 0600, whatever the umask took away (a mode with fewer bits let no one else
      // write either).
      if (::fstat(fd.get(), &st) == 0 && (st.st_mode & 07777 & ~kMode) == 0 && (st.st_mode & 07777) != kMode &&
          ::fchmod(fd.get(), kMode) != 0)
        throw std::invalid_argument(path + ": cannot chmod it 0600: " + std::strerror(errno));
    }
    if (::fstat(fd.get(), &st) != 0) throw std::invalid_argument(path + ": cannot stat it: " + std::strerror(errno));
    if (tighten && (st.st_mode & 07777) != kMode && (st.st_mode & 07777 & ~(kMode | S_IRGRP | S_IROTH)) == 0) {
      if (::fchmod(fd.get(), kMode) != 0)
        throw std::invalid_argument(path + ": cannot chmod it 0600: " + std::strerror(errno));
      if (::fstat(fd.get(), &st) != 0) throw std::invalid_argument(path + ": cannot stat it: " + std::strerror(errno));
    }
    check_mode(st, path);
    return fd;
  } catch (const sys::FsError& e) {
    throw std::invalid_argument(e.what());
  }
}

}  // namespace

std::string control_path(const std::string& results) { return results + ".control"; }

std::string control_line(const controller::ControlRequest& r) {
  using Kind = controller::ControlRequest::Kind;
  nlohmann::json j = {{"id", r.id}, {"op", controller::to_string(r.kind)}};
  if (controller::names_trial(r.kind)) j["trial"] = r.trial;
  if (r.kind == Kind::Add && r.count > 0) {
    j["count"] = r.count;
  } else if (r.kind == Kind::Set || r.kind == Kind::Add) {
    j["config"] = to_json(r.config);
  }
  if (r.time_budget_s) j["time_budget_s"] = *r.time_budget_s;
  if (r.num_samples) j["num_samples"] = *r.num_samples;
  if (r.max_t) j["max_t"] = *r.max_t;
  if (r.force) j["force"] = true;
  if (r.uid >= 0) j["uid"] = r.uid;
  return j.dump();
}

controller::ControlRequest parse_control_line(const std::string& line) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("not JSON: ") + e.what());
  }
  if (!j.is_object()) throw std::invalid_argument("not a JSON object");
  controller::ControlRequest r;
  if (j.contains("id") && j["id"].is_string()) r.id = j["id"];
  using Kind = controller::ControlRequest::Kind;
  constexpr const char* kOps = "stop, set, add, pause, resume, budget, stop-experiment";
  if (!j.contains("op") || !j["op"].is_string()) throw std::invalid_argument(std::string("no \"op\" (") + kOps + ")");
  const std::string op = j["op"];
  bool known = false;
  for (const Kind k : {Kind::Stop, Kind::Set, Kind::Add, Kind::Pause, Kind::Resume, Kind::Budget, Kind::StopExperiment})
    if (op == controller::to_string(k)) r.kind = k, known = true;
  if (!known) throw std::invalid_argument("unknown op '" + op + "'; valid: " + kOps);
  if (r.kind == Kind::Budget) {
    // Whole numbers for the counts (as `count`); the time in seconds, any finite number.
    if (j.contains("time_budget_s")) {
      if (!j["time_budget_s"].is_number() || !std::isfinite(j["time_budget_s"].get<double>()) ||
          j["time_budget_s"].get<double>() < 0)
        throw std::invalid_argument("\"time_budget_s\" must be a number of seconds >= 0");
      r.time_budget_s = j["time_budget_s"].get<double>();
    }
    for (const char* key : {"num_samples", "max_t"}) {
      if (!j.contains(key)) continue;
      const nlohmann::json& v = j[key];
      if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > 1000000000000ull) ||
          v.get<std::int64_t>() < 1)
        throw std::invalid_argument(std::string("\"") + key + "\" must be a whole number from 1 to 10^12");
      (std::string(key) == "max_t" ? r.max_t : r.num_samples) = v.get<std::int64_t>();
    }
    if (!r.time_budget_s && !r.num_samples && !r.max_t)
      throw std::invalid_argument("\"budget\" needs \"time_budget_s\", \"num_samples\" or \"max_t\"");
  }
  if (controller::names_trial(r.kind)) {
    if (!j.contains("trial") || !j["trial"].is_number_integer() || j["trial"].get<std::int64_t>() < 1)
      throw std::invalid_argument("\"" + op + "\" needs \"trial\", a trial id >= 1");
    r.trial = j["trial"];
  }
  if (r.kind == controller::ControlRequest::Kind::Add && j.contains("count")) {
    const nlohmann::json& count = j["count"];
    if (!count.is_number_integer() || j.contains("config"))
      throw std::invalid_argument("\"count\" must be an integer >= 1, without a \"config\"");
    // Bounded here, before anything else sees it (a count near 2^63 made a run that never
    // ends); the total that control may add is checked where it is known (mpi/driver.cc).
    if (count.is_number_unsigned() && count.get<std::uint64_t>() > static_cast<std::uint64_t>(controller::kMaxAddCount))
      throw std::invalid_argument("\"count\" " + count.dump() + " is more than " + std::to_string(controller::kMaxAddCount) +
                                  ", the most one request may add");
    if (count.get<std::int64_t>() < 1)
      throw std::invalid_argument("\"count\" must be an integer >= 1, without a \"config\"");
    r.count = count;
  } else if (r.kind == Kind::Set || r.kind == Kind::Add) {
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
  if (j.contains("uid")) {
    if (!j["uid"].is_number_unsigned() || j["uid"].get<std::uint64_t>() > 0xffffffffu)
      throw std::invalid_argument("\"uid\" must be a user id (an integer >= 0)");
    r.uid = j["uid"];
  }
  return r;
}

void append_control(const std::string& results, controller::ControlRequest request) {
  const std::string path = control_path(results);
  request.uid = static_cast<std::int64_t>(::getuid());
  const std::string line = control_line(request) + "\n";
  // Never created here: the run makes it (mode 0600) when it starts. O_NOFOLLOW and
  // O_NONBLOCK (sys/safe_fs.h): a link planted in a shared folder is not written through,
  // a FIFO does not block.
  sys::OpenOptions o;
  o.access = O_WRONLY;
  o.append = true;
  o.owned = false;  // checked below, with a message for this case
  sys::UniqueFd fd;
  try {
    fd = sys::open_file(path, o);
  } catch (const sys::FsError& e) {
    if (e.error() == ENOENT)
      throw std::invalid_argument(path + " does not exist: the run that writes " + results +
                                  " has stopped (killed before it could close the file: resume it), or was started by "
                                  "a ranktune older than this one, which does not read requests from this one");
    if (e.error() == EACCES || e.error() == EPERM)
      throw std::invalid_argument("cannot write " + path + " (" + std::strerror(e.error()) + "): only the user who runs the "
                                  "experiment may control it; run ranktune ctl as that user");
    // A FIFO without a reader answers a non-blocking write open with ENXIO: name it.
    if (struct stat st {}; e.error() == ENXIO && ::lstat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode))
      throw std::invalid_argument(path + " is a FIFO, not a regular file: remove it (the run makes the file when it "
                                  "starts, and again at its next look)");
    throw std::invalid_argument(e.what());
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw std::runtime_error(path + ": cannot stat it: " + std::strerror(errno));
  if (st.st_uid != ::getuid())
    throw std::invalid_argument(path + " belongs to uid " + std::to_string(st.st_uid) + ", and this is uid " +
                                std::to_string(::getuid()) + ": the run obeys only the user who runs it (the file's "
                                "owner); run ranktune ctl as that user");
  check_mode(st, path);
  ::flock(fd.get(), LOCK_EX);  // best effort: some network file systems have no flock
  const ssize_t n = ::write(fd.get(), line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size()))
    throw std::runtime_error(path + ": cannot append the request: " + (n < 0 ? std::strerror(errno) : "short write"));
  ::fsync(fd.get());  // over NFS, the run's node sees it once it is on the server
}

void check_control_file(const std::string& results) {
  struct stat st {};
  (void)open_inbox(control_path(results), st, /*create=*/false, /*tighten=*/true);
}

ControlInbox::ControlInbox(std::string results) : path_(control_path(results)) {
  struct stat st {};
  const sys::UniqueFd fd = open_inbox(path_, st, /*create=*/true, /*tighten=*/true);  // throws: the run does not start
  // What is in it was for an earlier run.
  offset_ = static_cast<std::uint64_t>(st.st_size);
  device_ = st.st_dev;
  inode_ = st.st_ino;
}

std::string ControlInbox::take_problem() {
  if (!problem_new_) return "";
  problem_new_ = false;
  return problem_;
}

std::vector<ControlLine> ControlInbox::poll() {
  std::vector<ControlLine> out;
  // open(2), then fstat, rather than stat(2): on NFS an open revalidates the file's
  // attributes (close-to-open consistency), where a bare stat may answer from a cache that
  // lags the login node's append by up to a minute.
  struct stat st {};
  sys::UniqueFd fd;
  try {
    fd = open_inbox(path_, st);  // a removed file is made again
  } catch (const std::exception& e) {
    const std::string why = std::string("live control is off until this is fixed: ") + e.what();
    if (why != problem_) problem_new_ = true;
    problem_ = why;
    return out;
  }
  problem_.clear();
  problem_new_ = false;
  if (st.st_dev != device_ || st.st_ino != inode_) {  // another file (made again, or replaced)
    device_ = st.st_dev;
    inode_ = st.st_ino;
    offset_ = 0;
    partial_.clear();
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
  // The file is 0600 and ours, so only its owner (or root) wrote these lines; each also
  // names its sender, and only the owner's are carried out (a root's ctl, or a line copied
  // from elsewhere, is refused and recorded).
  const auto owner = static_cast<std::int64_t>(st.st_uid);
  std::size_t start = 0;
  for (std::size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    const std::string line = partial_.substr(start, nl - start);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ControlLine c;
    try {
      c.request = parse_control_line(line);
      c.id = c.request->id;
      if (c.request->uid < 0)
        throw std::invalid_argument("no \"uid\": a request names its sender's user id (ranktune ctl adds it)");
      if (c.request->uid != owner)
        throw std::invalid_argument("sent by uid " + std::to_string(c.request->uid) + ", and only uid " +
                                    std::to_string(owner) + ", who runs the experiment (the owner of " + path_ +
                                    "), may control it");
    } catch (const std::invalid_argument& e) {
      c.request.reset();
      c.error = e.what();
      // The id, if the line has one, so that its sender hears why.
      if (c.id.empty()) {
        try {
          const auto j = nlohmann::json::parse(line);
          if (j.is_object() && j.contains("id") && j["id"].is_string()) c.id = j["id"];
        } catch (const nlohmann::json::exception&) {
        }
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
