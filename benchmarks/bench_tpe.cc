// Cost of one TPE suggestion (an "ask") against the number of observations, on a 6-D
// uniform space plus one 4-way categorical: the same problem as tpe_optuna.py, so
// tpe_compare.sh can put the two side by side.
//
// Usage: bench_tpe [N ...]   (default 100 1000 10000). Prints "observations reps median_ms
// digest": the digest (FNV-1a over the suggested values' decimal text) says whether a change
// of the model kept the suggestions bit for bit.

#include <algorithm>
#include <cstdint>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "benchmarks/ask_problem.h"
#include "search/tpe_searcher.h"

using namespace ranktune::search;
using ranktune::bench::ask_loss;
using ranktune::bench::ask_space;

int main(int argc, char** argv) {
  std::vector<long> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atol(argv[i]));
  if (sizes.empty()) sizes = {100, 1000, 10000};
  const Space space = ask_space();
  std::printf("observations reps median_ms digest\n");
  for (const long n : sizes) {
    // Fill cheaply: a searcher whose startup phase outlasts n gives random configs; its saved
    // state then seeds a default-options searcher, whose asks are all model-based.
    const SearcherOptions o{1, n + 1000, "loss", Mode::Min};
    TpeSearcher fill(space, o, {.n_startup = n + 1});
    for (TrialId id = 1; id <= n; ++id) {
      const auto s = fill.suggest(id);
      fill.on_trial_complete(id, {{"loss", ask_loss(s.config)}}, false);
    }
    TpeSearcher tpe(space, o);
    tpe.restore(fill.save());
    // Fewer repetitions for the big case: one ask there costs tens of ms on a shared 2-core box.
    const int reps = n >= 10000 ? 5 : n >= 1000 ? 20 : 50;
    std::vector<double> ms;
    std::uint64_t digest = 1469598103934665603ull;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto s = tpe.suggest(n + 1 + r);
      const auto t1 = std::chrono::steady_clock::now();
      if (s.kind != Suggestion::Kind::Config) return 1;
      for (const auto& [name, v] : s.config) {
        char text[64];
        std::snprintf(text, sizeof text, "%s=%.17g;", name.c_str(),
                      std::holds_alternative<double>(v) ? std::get<double>(v) : static_cast<double>(std::get<std::string>(v)[0]));
        for (const char* c = text; *c != 0; ++c) digest = (digest ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
      }
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%ld %d %.3f %016llx\n", n, reps, ms[ms.size() / 2], static_cast<unsigned long long>(digest));
    std::fflush(stdout);
  }
  return 0;
}
