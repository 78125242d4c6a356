#pragma once
/// `ranktune compare`: the held-out evaluations of the same models under different stacks
/// (1 thread against 2, CPU against GPU, two builds, two machines) side by side, as
/// MLModelScope compares a model across frameworks and systems: the models matched by what
/// they are, their latency and throughput as ratios against the first evaluation (the
/// baseline), their held-out metrics as differences, and exactly which stack fields differ.
/// Pure: evaluations already read (io::read_evaluations) in, a comparison and its texts out.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "io/evaluations.h"
#include "report/leaderboard.h"

namespace ranktune::report {

/// One side of a comparison: an evaluation and how the user named it ("m.h5@2").
struct CompareInput {
  std::string label;
  io::Evaluation evaluation;
};

/// "FILE@ID" split into FILE and ID when what follows the last '@' is a number (1 or more
/// digits); otherwise the whole text is the file and no id is given.
struct InputSpec {
  std::string path;
  std::optional<std::int64_t> id;
};
InputSpec parse_input_spec(const std::string& spec);

/// The evaluation `id` of `evaluations` (those of the file `label` names), or the newest
/// (highest id) when no id is given. Throws std::invalid_argument naming the label and what
/// to do: no evaluation recorded, or no evaluation `id` (listing those there are).
const io::Evaluation& pick_evaluation(const std::string& label, const std::vector<io::Evaluation>& evaluations,
                                      std::optional<std::int64_t> id);

/// A model as one input evaluated it: its trial there, the checkpoint's iteration, its
/// held-out metrics and its latency per batch size.
struct ModelResult {
  std::size_t input = 0;
  search::TrialId trial = 0;
  std::int64_t iteration = 0;
  std::map<std::string, double> metrics;
  std::map<std::int64_t, io::EvalLatencyRow> latency;
};

/// A model: a trial's hyperparameters (the manifest's "config", compact JSON) and the CRC-32C
/// of the checkpoint evaluated. `results` holds it in each input that evaluated it, in input
/// order: all of them for a matched model, some for an unmatched one.
struct ComparedModel {
  std::string config;
  std::string crc32c;
  std::vector<ModelResult> results;
};

/// A stack field and its value in each input (nullopt: the input does not record it).
struct FieldValues {
  std::string key;
  std::vector<std::optional<std::string>> values;
};

struct Comparison {
  std::vector<std::string> labels;               ///< per input; [0] is the baseline
  std::vector<io::Evaluation> evaluations;       ///< per input, without their rows (id, created, device, threads)
  std::vector<ComparedModel> matched;            ///< in every input; in the baseline's order
  std::vector<ComparedModel> unmatched;          ///< in some inputs only
  std::vector<std::string> metrics;              ///< held-out metric names, in the order first seen
  std::vector<std::int64_t> batch_sizes;         ///< latency batch sizes, in the order first seen
  std::vector<FieldValues> differing;            ///< stack fields whose values differ, by key
  std::vector<FieldValues> per_run;              ///< differing fields that name the run, not its stack
};

/// The stack fields of one evaluation's manifest as dotted keys: "stack.*" (the machine and
/// build: manifest["stack"]), and from each evaluated trial's entry everything but what
/// identifies the model and its file (results, experiment, metric, mode, trial,
/// leaderboard_rank, best, best_iteration, config, checkpoint): "compute.threads",
/// "compute.path", "latency.warmup", "trainable.data_dir", "held_out.files.0.crc32c", ...
/// Other top-level keys are flattened too, but "command_line" (how it was asked: what it
/// changed shows in the other fields) and "evaluations". Objects nest with '.', arrays of
/// scalars are one value ("[1,128]"), other arrays nest by index; strings as they are, other
/// values as JSON. A field whose trials disagree holds their distinct values joined by " | ".
/// Throws std::invalid_argument when the manifest is not a JSON object.
std::map<std::string, std::string> stack_fields(const nlohmann::json& manifest);

/// Whether a differing field names the run rather than the stack it ran on, and so is not
/// counted as a difference: its last part is created, timestamp, time, date or pid, or it is
/// the Slurm job's identity (stack.slurm_job_id, stack.slurm_restart_count). A host name is
/// a stack field: two machines are a difference.
bool is_per_run_field(const std::string& key);

/// Compares `inputs` (2 or more) against inputs[0]. Models are matched by config and
/// checkpoint CRC-32C (the k-th of several equal ones in one input with the k-th in the
/// others). Throws std::invalid_argument, naming the input and what to do, for fewer than 2
/// inputs, a manifest that is not JSON or lacks its trials' config or checkpoint CRC, and
/// when no model is in every input.
Comparison compare_evaluations(const std::vector<CompareInput>& inputs);

/// `value / baseline`; NaN when either is not finite or the baseline is not above 0.
double ratio(double value, double baseline);

/// Table and Markdown: the inputs, the differing stack fields, the models, the held-out
/// metrics with their difference from the baseline, and the latency (p50, p99, mean) and
/// throughput with their ratios to it. CSV: one row per model, input and measure (model,
/// input, label, trial_id, iteration, measure, batch_size, value, baseline, difference,
/// ratio), for pandas; the stack fields are in the other formats. JSON: everything, with
/// non-finite numbers as null. Strings from the files are made printable (sys/printable.h).
std::string render_comparison(const Comparison& c, Format format);

/// The comparison as a "Comparison of evaluations" section of an HTML page (<h2> and its
/// tables, every string escaped).
std::string comparison_html_section(const Comparison& c);

}  // namespace ranktune::report
