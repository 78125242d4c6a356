// `ranktune compact` and `ranktune export-checkpoint`: offline tools on a results file's
// checkpoints. The work is in io/store.h and io/archive.h; this file chooses and reports.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "eval/leaders.h"
#include "io/archive.h"
#include "io/json.h"
#include "io/store.h"
#include "sys/safe_fs.h"

namespace ranktune::apps {
namespace {

namespace fs = std::filesystem;

std::string mib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

// Refuses an output folder that exists and holds anything: exporting never mixes files.
void require_empty_folder(const fs::path& out) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(out, ec);
  if (fs::is_symlink(st))
    throw std::invalid_argument(out.string() + ": is a symbolic link: ranktune writes nothing through a link (another "
                                "user may have planted it); name a new or empty folder");
  if (!fs::exists(st)) return;
  if (!fs::is_directory(out, ec))
    throw std::invalid_argument(out.string() + ": exists and is not a folder; name a new or empty folder");
  if (!fs::is_empty(out, ec))
    throw std::invalid_argument(out.string() + ": is not empty; name a new or empty folder");
}

// Into the folder open at `dirfd` by sys::replace_file_at: no link planted at the name is
// written through.
void write_file(int dirfd, const fs::path& path, const std::string& bytes) {
  try {
    sys::replace_file_at(dirfd, path.filename().string(), bytes, path.string());
  } catch (const sys::FsError& e) {
    throw std::runtime_error(std::string(e.what()) + ": cannot write it");
  }
}

}  // namespace

int run_compact(const CompactOptions& o) {
  const io::CompactSummary s = io::compact_results(o.results, o.out);
  std::printf("ranktune: compacted %s into %s: %s -> %s (%zu checkpoints kept, %zu dropped rows without bytes",
              o.results.c_str(), (o.out.empty() ? o.results : o.out).c_str(), mib(s.bytes_before).c_str(),
              mib(s.bytes_after).c_str(), s.live, s.dropped);
  if (s.damaged > 0) std::printf(", %zu damaged checkpoints now dropped", s.damaged);
  std::printf(")\n");
  return 0;
}

int run_export_checkpoint(const ExportCheckpointOptions& o) {
  const io::ResultsFile file = io::ResultsFile::read(o.results);
  const search::Trial* trial = nullptr;
  for (const auto& t : file.trials)
    if (t.id == o.trial) trial = &t;
  if (trial == nullptr)
    throw std::invalid_argument(o.results + ": no trial " + std::to_string(o.trial) + " (the file has " +
                                std::to_string(file.trials.size()) + " trials" +
                                (file.trials.empty() ? "" : ", ids 1.." + std::to_string(file.trials.back().id)) + ")");
  std::vector<const io::CheckpointRow*> rows;
  for (const auto& r : file.checkpoints)
    if (r.trial == o.trial) rows.push_back(&r);
  if (rows.empty())
    throw std::invalid_argument(o.results + ": trial " + std::to_string(o.trial) +
                                " has no checkpoint (they are stored with [checkpoint] every or at_end, on a pause, "
                                "and for PBT)");
  // The newest live row of the iteration asked for, or of the newest iteration.
  const io::CheckpointRow* chosen = nullptr;
  for (const auto* r : rows) {
    if (r->dropped || (o.iteration && r->iteration != *o.iteration)) continue;
    if (chosen == nullptr || r->iteration >= chosen->iteration) chosen = r;
  }
  if (chosen == nullptr) {
    const std::string which = o.iteration ? "at iteration " + std::to_string(*o.iteration) : "at all";
    bool was_dropped = false;
    for (const auto* r : rows) was_dropped |= r->dropped && (!o.iteration || r->iteration == *o.iteration);
    throw std::invalid_argument(
        o.results + ": trial " + std::to_string(o.trial) + " has no stored checkpoint " + which +
        (was_dropped ? ": it was dropped (by [checkpoint] keep_last/keep_best, or after failing its checksum)" : "") +
        ". Its checkpoints: " + eval::checkpoint_list(rows));
  }
  const std::string bytes = io::read_checkpoint_bytes(file, *chosen);
  const fs::path out(o.out);
  require_empty_folder(out);
  // Made here, or an empty folder of ours (not a link): in a shared folder, one that another
  // user made would let them read or swap what goes into it.
  if (out.has_parent_path()) fs::create_directories(out.parent_path());
  sys::UniqueFd folder;
  try {
    folder = sys::make_own_directory(out.string());  // checked once, then written by its fd
  } catch (const sys::FsError& e) {
    throw std::invalid_argument(e.what());
  }
  const auto span = std::as_bytes(std::span(bytes.data(), bytes.size()));
  if (io::is_directory_archive(span)) {
    // A command trainable's RANKTUNE_CHECKPOINT_DIR: the folder as the program left it.
    std::size_t pos = 0;
    io::ArchiveSummary s;
    try {
      s = io::unpack_directory(
          [&](std::span<std::byte> b) {
            const std::size_t n = std::min(b.size(), span.size() - pos);
            std::memcpy(b.data(), span.data() + pos, n);
            pos += n;
            return n;
          },
          out);
    } catch (const io::ArchiveError& e) {
      throw io::StoreError(o.results + ": checkpoint of trial " + std::to_string(o.trial) + " at iteration " +
                           std::to_string(chosen->iteration) + " is not a valid directory archive: " + e.what());
    }
    std::printf("ranktune: trial %lld, iteration %lld (attempt %d): unpacked %llu entries, %llu bytes of files, into %s\n",
                static_cast<long long>(o.trial), static_cast<long long>(chosen->iteration), chosen->attempt,
                static_cast<unsigned long long>(s.entries), static_cast<unsigned long long>(s.file_bytes), o.out.c_str());
    return 0;
  }
  write_file(folder.get(), out / "checkpoint.bin", bytes);
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", chosen->crc32c);
  const nlohmann::json meta = {
      {"results", o.results},   {"experiment", file.meta.experiment},
      {"trial", o.trial},       {"attempt", chosen->attempt},
      {"iteration", chosen->iteration}, {"time", chosen->time},
      {"size", chosen->size},   {"crc32c", crc},
      {"metric", file.meta.metric},
      {"score", std::isfinite(chosen->score) ? nlohmann::json(chosen->score) : nlohmann::json(nullptr)},
      {"config", io::to_json(trial->config)}};
  write_file(folder.get(), out / "checkpoint.json", meta.dump(2) + "\n");
  std::printf("ranktune: trial %lld, iteration %lld (attempt %d): %lld bytes in %s\n", static_cast<long long>(o.trial),
              static_cast<long long>(chosen->iteration), chosen->attempt, static_cast<long long>(chosen->size),
              (out / "checkpoint.bin").c_str());
  return 0;
}

void setup_compact(CLI::App& app) {
  const auto compact = std::make_shared<CompactOptions>();
  auto* compact_cmd = app.add_subcommand(
      "compact", "Rewrite a results file without the bytes of dropped checkpoints (in place, atomically, unless -o)");
  compact_cmd->add_option("results", compact->results, "Results file (.h5); refused while a run writes it")->required();
  compact_cmd->add_option("-o,--output", compact->out, "Write the compacted copy here instead (must not exist)");
  on_run(compact_cmd, [compact] { return run_compact(*compact); });
}

void setup_export_checkpoint(CLI::App& app) {
  const auto export_ckpt = std::make_shared<ExportCheckpointOptions>();
  auto* export_cmd = app.add_subcommand(
      "export-checkpoint", "Write a trial's checkpoint to a folder (a command's directory, or checkpoint.bin + .json)");
  export_cmd->add_option("results", export_ckpt->results, "Results file (.h5)")->required();
  export_cmd->add_option("--trial", export_ckpt->trial, "Trial id")->required()->check(CLI::PositiveNumber);
  export_cmd->add_option("--iteration", export_ckpt->iteration, "Iteration of the checkpoint (default: the newest stored)");
  export_cmd->add_option("out", export_ckpt->out, "Output folder (new or empty)")->required();
  on_run(export_cmd, [export_ckpt] { return run_export_checkpoint(*export_ckpt); });
}

}  // namespace ranktune::apps
