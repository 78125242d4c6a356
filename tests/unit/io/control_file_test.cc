// The control file of live control (io/control_file.h): its line format, the inbox that
// rank 0 polls, its mode and owner checks, and hostile content.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "tests/unit/common/expect_text.h"
#include "io/control_file.h"
#include "controller/control.h"
#include "tests/unit/controller/control_fixtures.h"

namespace ranktune::search {
using namespace ranktune::controller;
namespace {

using fixtures::request;
using fixtures::space;

// Why the control file's parser refuses `line`, or "accepted".
std::string why(const std::string& line) {
  try {
    io::parse_control_line(line);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

TEST(ControlFile, LinesRoundTripAndBadLinesSayWhy) {
  ControlRequest r = request(ControlRequest::Kind::Set, 4, {{"lr", 0.01}, {"act", std::string("tanh")}});
  r.id = "abc";
  r.force = true;
  const ControlRequest back = io::parse_control_line(io::control_line(r));
  EXPECT_EQ(back.kind, ControlRequest::Kind::Set);
  EXPECT_EQ(back.id, "abc");
  EXPECT_EQ(back.trial, 4);
  EXPECT_EQ(back.config, r.config);
  EXPECT_TRUE(back.force);
  EXPECT_CONTAINS(why("stop 4"), "not JSON");
  EXPECT_CONTAINS(why("[1]"), "not a JSON object");
  EXPECT_CONTAINS(why(R"({"op": "kill", "trial": 1})"), "unknown op 'kill'; valid: stop, set, add");
  EXPECT_CONTAINS(why(R"({"op": "stop"})"), "\"stop\" needs \"trial\"");
  EXPECT_CONTAINS(why(R"({"op": "stop", "trial": 0})"), "a trial id >= 1");
  EXPECT_CONTAINS(why(R"({"op": "add", "config": 3})"), "needs \"config\", an object");
  EXPECT_CONTAINS(why(R"({"op": "add", "config": {"x": [1]}})"), "bad \"config\"");
  EXPECT_CONTAINS(why(R"({"op": "stop", "trial": 2, "force": "yes"})"), "\"force\" must be true or false");
  EXPECT_CONTAINS(why(R"({"op": "add", "count": 0})"), "\"count\" must be an integer >= 1");
  EXPECT_CONTAINS(why(R"({"op": "add", "count": 2, "config": {"x": 1}})"), "without a \"config\"");
  EXPECT_EQ(why(R"({"op": "stop", "trial": 2})"), "accepted");
  ControlRequest more = request(ControlRequest::Kind::Add, 0);
  more.count = 5;
  EXPECT_EQ(io::parse_control_line(io::control_line(more)).count, 5);
}

// Issue 31's requests: pause and resume name a trial; budget carries its rules (whole
// numbers for the counts, seconds >= 0 for the time), at least one; stop-experiment nothing.
TEST(ControlFile, PauseResumeBudgetAndStopExperimentLines) {
  for (const auto kind : {ControlRequest::Kind::Pause, ControlRequest::Kind::Resume}) {
    const ControlRequest back = io::parse_control_line(io::control_line(request(kind, 3)));
    EXPECT_EQ(back.kind, kind);
    EXPECT_EQ(back.trial, 3);
  }
  ControlRequest b = request(ControlRequest::Kind::Budget, 0);
  b.time_budget_s = 90.5;
  b.max_t = 12;
  const std::string line = io::control_line(b);
  EXPECT_EQ(line.find("\"trial\""), std::string::npos) << line;
  const ControlRequest back = io::parse_control_line(line);
  EXPECT_EQ(back.kind, ControlRequest::Kind::Budget);
  EXPECT_EQ(back.time_budget_s, 90.5);
  EXPECT_EQ(back.max_t, 12);
  EXPECT_FALSE(back.num_samples.has_value());
  EXPECT_EQ(io::parse_control_line(io::control_line(request(ControlRequest::Kind::StopExperiment, 0))).kind,
            ControlRequest::Kind::StopExperiment);
  EXPECT_CONTAINS(why(R"({"op": "pause"})"), "\"pause\" needs \"trial\"");
  EXPECT_CONTAINS(why(R"({"op": "budget"})"), "\"budget\" needs \"time_budget_s\", \"num_samples\" or \"max_t\"");
  EXPECT_CONTAINS(why(R"({"op": "budget", "max_t": 0})"), "\"max_t\" must be a whole number from 1 to 10^12");
  EXPECT_CONTAINS(why(R"({"op": "budget", "num_samples": 2.5})"), "\"num_samples\" must be a whole number");
  EXPECT_CONTAINS(why(R"({"op": "budget", "num_samples": 99999999999999999999})"), "\"num_samples\" must be a whole number");
  EXPECT_CONTAINS(why(R"({"op": "budget", "time_budget_s": -1})"), "\"time_budget_s\" must be a number of seconds >= 0");
  EXPECT_EQ(why(R"({"op": "stop-experiment"})"), "accepted");
}

// A folder of its own per test, removed at the end.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/ranktune_control_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string results() const { return (path / "exp.h5").string(); }
};

mode_t mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The message of the std::invalid_argument that `f` throws, or "no error".
template <typename F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

// A request line as its owner's ctl writes it (its uid, the file's owner's).
std::string owned_line(const std::string& body) {
  return "{" + body + ", \"uid\": " + std::to_string(::getuid()) + "}\n";
}

TEST(ControlFile, InboxReadsOnlyNewCompleteLines) {
  TempDir dir;
  const std::string results = dir.results();
  const std::string path = io::control_path(results);
  EXPECT_EQ(path, results + ".control");
  {  // a file an earlier run of the experiment made, with a request for that run
    std::ofstream(path) << owned_line(R"("id": "old", "op": "stop", "trial": 1)");
    ::chmod(path.c_str(), 0600);
  }
  io::ControlInbox inbox(results);  // what was there before the run is not for it
  EXPECT_TRUE(inbox.poll().empty());
  ControlRequest r = request(ControlRequest::Kind::Stop, 2);
  r.id = "new";
  io::append_control(results, r);
  { std::ofstream(path, std::ios::app) << R"({"id": "half", "op": "st)"; }  // a line still being written
  auto lines = inbox.poll();
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_TRUE(lines[0].request.has_value()) << lines[0].error;
  EXPECT_EQ(lines[0].id, "new");
  EXPECT_EQ(lines[0].request->trial, 2);
  EXPECT_EQ(lines[0].request->uid, static_cast<std::int64_t>(::getuid()));  // append_control names the sender
  {
    std::ofstream(path, std::ios::app) << R"(op", "trial": 3, "uid": )" << ::getuid() << "}\n"
                                       << owned_line(R"("id": "bad", "op": "nope")");
  }
  lines = inbox.poll();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].id, "half");  // the two halves joined
  ASSERT_TRUE(lines[0].request.has_value()) << lines[0].error;
  EXPECT_EQ(lines[0].request->trial, 3);
  EXPECT_FALSE(lines[1].request.has_value());
  EXPECT_EQ(lines[1].id, "bad");  // its sender still hears why
  EXPECT_CONTAINS(lines[1].error, "unknown op 'nope'");
  // Truncated and written again: read from its start.
  { std::ofstream(path, std::ios::trunc) << owned_line(R"("id": "again", "op": "stop", "trial": 5)"); }
  lines = inbox.poll();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].id, "again");
  // Removed: made again (0600), and read from its start.
  std::filesystem::remove(path);
  EXPECT_TRUE(inbox.poll().empty());
  EXPECT_EQ(mode_of(path), 0600u);
  io::append_control(results, r);
  lines = inbox.poll();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].id, "new");
  EXPECT_EQ(inbox.take_problem(), "");
}

TEST(ControlFile, TheRunMakesTheFileMode0600AndRefusesOneOthersCouldHaveWritten) {
  TempDir dir;
  const std::string results = dir.results();
  const std::string path = io::control_path(results);
  const mode_t umask = ::umask(0);  // 0600 whatever the umask, including none
  { io::ControlInbox inbox(results); }
  ::umask(077);
  std::filesystem::remove(path);
  { io::ControlInbox inbox(results); }
  ::umask(umask);
  EXPECT_EQ(mode_of(path), 0600u);
  EXPECT_EQ(refusal([&] { io::ControlInbox again(results); }), "no error");  // an earlier run's: ours, 0600

  // What an older ranktune's ctl made (0644): ours, and no one else could write it, so the
  // run that starts tightens it to 0600 instead of refusing to resume an old experiment.
  ::chmod(path.c_str(), 0644);
  EXPECT_EQ(refusal([&] { io::ControlInbox inbox(results); }), "no error");
  EXPECT_EQ(mode_of(path), 0600u);
  ::chmod(path.c_str(), 0620);  // group-writable: someone else could have written into it
  EXPECT_CONTAINS(refusal([&] { io::ControlInbox inbox(results); }), "has mode 0620, not 0600");
  ::chmod(path.c_str(), 0666);
  EXPECT_CONTAINS(refusal([&] { io::ControlInbox inbox(results); }), "has mode 0666, not 0600");
  ::chmod(path.c_str(), 0600);

  const std::string other = (dir.path / "other").string();
  ASSERT_EQ(::link(path.c_str(), other.c_str()), 0);  // a hard link: another name writes it too
  EXPECT_CONTAINS(refusal([&] { io::ControlInbox inbox(results); }), "has 2 hard links");
  std::filesystem::remove(path);

  const std::string victim = (dir.path / "victim").string();
  { std::ofstream(victim) << owned_line(R"("id": "planted", "op": "stop", "trial": 1)"); }
  ::chmod(victim.c_str(), 0600);
  std::filesystem::create_symlink(victim, path);
  EXPECT_CONTAINS(refusal([&] { io::ControlInbox inbox(results); }), "is a symbolic link");
  std::filesystem::remove(path);

  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);  // open(2) would block: it must not
  EXPECT_CONTAINS(refusal([&] { io::ControlInbox inbox(results); }), "is a FIFO, not a regular file");
  std::filesystem::remove(path);
  std::filesystem::create_symlink(path + ".fifo", path);
  ASSERT_EQ(::mkfifo((path + ".fifo").c_str(), 0600), 0);
  EXPECT_CONTAINS(refusal([&] { io::ControlInbox inbox(results); }), "is a symbolic link");
  std::filesystem::remove(path);

  std::filesystem::create_directory(path);
  EXPECT_CONTAINS(refusal([&] { io::ControlInbox inbox(results); }), "is a folder");
  // The same check before mpirun starts, which makes nothing.
  EXPECT_CONTAINS(refusal([&] { io::check_control_file(results); }), "is a folder");
  std::filesystem::remove(path);
  EXPECT_EQ(refusal([&] { io::check_control_file(results); }), "no error");
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(ControlFile, AFileReplacedDuringTheRunIsNotReadAndTheProblemIsToldOnce) {
  TempDir dir;
  const std::string results = dir.results();
  const std::string path = io::control_path(results);
  io::ControlInbox inbox(results);
  const std::string elsewhere = (dir.path / "elsewhere").string();
  { std::ofstream(elsewhere) << owned_line(R"("id": "planted", "op": "stop", "trial": 1)"); }
  ::chmod(elsewhere.c_str(), 0600);
  std::filesystem::remove(path);
  std::filesystem::create_symlink(elsewhere, path);
  EXPECT_TRUE(inbox.poll().empty());  // the link's target is not read
  EXPECT_CONTAINS(inbox.take_problem(), "is a symbolic link");
  EXPECT_TRUE(inbox.poll().empty());
  EXPECT_EQ(inbox.take_problem(), "");  // told once
  std::filesystem::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_TRUE(inbox.poll().empty());  // returns: a FIFO does not block it
  EXPECT_CONTAINS(inbox.take_problem(), "is a FIFO");
  std::filesystem::remove(path);
  { std::ofstream(path) << owned_line(R"("id": "loose", "op": "stop", "trial": 1)"); }
  ::chmod(path.c_str(), 0644);
  EXPECT_TRUE(inbox.poll().empty());
  EXPECT_CONTAINS(inbox.take_problem(), "has mode 0644, not 0600");
  ::chmod(path.c_str(), 0600);  // fixed: read (from its start: another file)
  const auto lines = inbox.poll();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].id, "loose");
}

TEST(ControlFile, OnlyTheOwnersRequestsAreCarriedOut) {
  TempDir dir;
  const std::string results = dir.results();
  const std::string path = io::control_path(results);
  io::ControlInbox inbox(results);
  const std::string someone = std::to_string(::getuid() + 4242);
  {
    std::ofstream out(path, std::ios::app);
    out << R"({"id": "foreign", "op": "stop", "trial": 1, "uid": )" << someone << "}\n"
        << R"({"id": "nouid", "op": "stop", "trial": 1})" << "\n"
        << R"({"id": "neg", "op": "stop", "trial": 1, "uid": -1})" << "\n"
        << owned_line(R"("id": "mine", "op": "stop", "trial": 1)");
  }
  const auto lines = inbox.poll();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_FALSE(lines[0].request.has_value());
  EXPECT_EQ(lines[0].id, "foreign");
  EXPECT_CONTAINS(lines[0].error, "sent by uid " + someone + ", and only uid " + std::to_string(::geteuid()));
  EXPECT_FALSE(lines[1].request.has_value());
  EXPECT_CONTAINS(lines[1].error, "no \"uid\"");
  EXPECT_FALSE(lines[2].request.has_value());
  EXPECT_CONTAINS(lines[2].error, "\"uid\" must be a user id");
  ASSERT_TRUE(lines[3].request.has_value()) << lines[3].error;
}

TEST(ControlFile, CtlNeverMakesTheFileNorWritesThroughALinkOrIntoAFifo) {
  TempDir dir;
  const std::string results = dir.results();
  const std::string path = io::control_path(results);
  const ControlRequest r = request(ControlRequest::Kind::Stop, 1);
  EXPECT_CONTAINS(refusal([&] { io::append_control(results, r); }), "does not exist: the run that writes");
  EXPECT_FALSE(std::filesystem::exists(path));  // not made

  const std::string victim = (dir.path / "victim").string();
  { std::ofstream(victim) << "precious\n"; }
  ::chmod(victim.c_str(), 0600);
  std::filesystem::create_symlink(victim, path);
  EXPECT_CONTAINS(refusal([&] { io::append_control(results, r); }), "is a symbolic link");
  EXPECT_EQ(read_all(victim), "precious\n");
  std::filesystem::remove(path);

  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_CONTAINS(refusal([&] { io::append_control(results, r); }), "is a FIFO");  // and returns
  std::filesystem::remove(path);

  { std::ofstream(path) << ""; }
  ::chmod(path.c_str(), 0644);
  EXPECT_CONTAINS(refusal([&] { io::append_control(results, r); }), "has mode 0644, not 0600");
  EXPECT_EQ(read_all(path), "");
  ::chmod(path.c_str(), 0600);
  EXPECT_EQ(refusal([&] { io::append_control(results, r); }), "no error");
  EXPECT_CONTAINS(read_all(path), "\"uid\":" + std::to_string(::getuid()));
}

TEST(ControlFile, CountsAreBounded) {
  EXPECT_CONTAINS(why(R"({"op": "add", "count": 1000000000000})"), "\"count\" 1000000000000 is more than 100000");
  EXPECT_CONTAINS(why(R"({"op": "add", "count": 18446744073709551615})"), "is more than 100000");
  EXPECT_CONTAINS(why(R"({"op": "add", "count": -5})"), "\"count\" must be an integer >= 1");
  EXPECT_CONTAINS(why(R"({"op": "add", "count": 1e12})"), "\"count\" must be an integer >= 1");
  EXPECT_EQ(why(R"({"op": "add", "count": 100000})"), "accepted");
  // What the driver checks against the experiment before the controller sees the request.
  EXPECT_EQ(check_added_trials(100000, 0, 12), "");
  EXPECT_CONTAINS(check_added_trials(100001, 0, 12), "asks for 100001 trials; one request may add at most 100000");
  EXPECT_EQ(check_added_trials(1, kMaxAddedTrials - 1, 12), "");
  EXPECT_CONTAINS(check_added_trials(2, kMaxAddedTrials - 1, 12),
                  "would bring the trials added by ranktune ctl to 1000001, beyond the 1000000");
  EXPECT_CONTAINS(check_added_trials(10, 0, std::numeric_limits<std::int64_t>::max() - 5), "would overflow");
  EXPECT_EQ(check_added_trials(10, 0, -1), "");  // an open-ended experiment has no total to overflow
}

TEST(ControlFile, HostileLinesDoNotCrashTheReader) {
  TempDir dir;
  const std::string results = dir.results();
  const std::string path = io::control_path(results);
  io::ControlInbox inbox(results);
  {
    std::ofstream out(path, std::ios::app);
    out << std::string(10 << 20, 'x') << "\n";                                       // a 10 MB line
    out << std::string(30000, '[') << std::string(30000, ']') << "\n";              // nested 30,000 deep
    out << owned_line(R"("id": "cmd", "op": "set", "trial": 1, "config": {"command": "rm -rf ~"})");
    for (int i = 0; i < 20000; ++i) out << owned_line(R"("op": "add", "count": 1)");  // 20,000 adds
  }
  std::size_t lines = 0, refused = 0, long_lines = 0;
  for (int i = 0; i < 64; ++i) {  // 1 MiB a poll
    for (const io::ControlLine& l : inbox.poll()) {
      ++lines;
      if (!l.request) ++refused;
      if (l.error.find("longer than 64 KiB") != std::string::npos) ++long_lines;
    }
  }
  EXPECT_GE(long_lines, 1u);
  EXPECT_EQ(lines - refused, 20001u);  // the adds, and the set, whose keys the space checks (below)
  Config injected{{"command", std::string("rm -rf ~")}};
  EXPECT_CONTAINS(check_control_config(space(), injected, false, true), "'command' is not a parameter of the search space");
}

}  // namespace
}  // namespace ranktune::search
