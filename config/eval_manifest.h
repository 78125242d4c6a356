#pragma once
/// An evaluation manifest (`ranktune eval RESULTS.h5 --manifest EVAL.toml`): what the
/// leaders are evaluated on and how, written down once so that the same evaluation can be
/// run again and its figures compared (MLModelScope's evaluation manifests: Dakkak et al.,
/// "MLModelScope: A Distributed Platform for Model Evaluation and Benchmarking at Scale",
/// 2020). The manifest's text is recorded with every evaluation it drives.
///
///   version = 1                       # required: the manifest format
///   [data]     split = "test"         # "test" (the reserved t10k files) or "validation"
///              dir = "..."            # another folder of IDX files (split = "test" only)
///   [compute]  device = "auto"  threads = 2
///   [latency]  batch_sizes = [1, 128]  warmup = 10  repetitions = 20  max_repetitions = 100000
///              budget_s = 1.0
///   [metrics]  accuracy = true  loss = true  top_k = [5]  confusion = true
///   [[pipeline]] name = "reference"  normalize = true  input_dtype = "float32"
///   [[pipeline]] name = "fp16"  input_dtype = "float16"     # one evaluation per pipeline
///
/// Every key is optional but `version`; unknown keys and sections are errors at file:line.

#include <cstdint>
#include <string>
#include <vector>

namespace ranktune::config {

/// The manifest formats this build reads.
inline constexpr int kEvalManifestVersion = 1;

/// How the inputs reach the model. The first pipeline of a manifest is the reference that
/// the others' figures are compared against (pipeline sensitivity).
struct EvalPipeline {
  std::string name = "reference";
  /// Pixels scaled to [0, 1], as in training; false feeds the raw 0..255 values.
  bool normalize = true;
  /// The type the inputs are rounded to before the (float32) forward pass: "float32",
  /// "float16" or "bfloat16" (round to nearest even).
  std::string input_dtype = "float32";
  bool operator==(const EvalPipeline&) const = default;
};

/// The valid input_dtype values.
const std::vector<std::string>& eval_input_dtypes();

struct EvalManifest {
  std::string path;  ///< absolute; "" when built from command-line flags alone
  std::string text;  ///< the file as read
  int version = kEvalManifestVersion;

  std::string split = "test";  ///< "test" or "validation"
  std::string data_dir;        ///< absolute; "" = the experiment's data folder

  std::string device = "auto";  ///< "auto", "cpu" or "cuda:N"
  int threads = 0;              ///< 0: the experiment's threads_per_worker

  std::vector<std::int64_t> batch_sizes = {1, 128};  ///< empty: no latency
  int warmup = 10;                                   ///< untimed batches per batch size
  std::int64_t min_batches = 20;                     ///< `repetitions`: timed batches, at least
  std::int64_t max_batches = 100000;                 ///< `max_repetitions`: and at most
  double latency_s = 1.0;                            ///< `budget_s`: timing budget per batch size

  bool accuracy = true;          ///< <split>_accuracy
  bool loss = true;              ///< <split>_loss
  std::vector<int> top_k;        ///< <split>_top<k>_accuracy for each k
  bool confusion = false;        ///< the confusion matrix, stored as /evaluations/confusion

  std::vector<EvalPipeline> pipelines = {EvalPipeline{}};
};

/// Reads and checks the manifest at `path` (relative paths in it resolve next to it).
/// Throws ConfigError at file:line:key for a missing or unreadable file, a TOML syntax
/// error, an unknown key or section, a wrong type, a value out of range, a missing or
/// unsupported `version`, duplicate pipeline names or top_k values, and `data.dir` with
/// `split = "validation"`.
EvalManifest read_eval_manifest(const std::string& path);

/// The metric name prefix of a split: "test_" or "validation_".
std::string split_prefix(const std::string& split);

}  // namespace ranktune::config
