// Writes the saved state of every scenario in tests/unit/search/state_scenarios.h, taken mid-run,
// to DIR/<label>.state. Built against the ranktune whose state texts the fixtures keep
// (see README.md here), not by the project's build.
#include <fstream>
#include <iostream>

#include "tests/unit/search/state_scenarios.h"

using namespace ranktune::search::scenarios;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_fixtures DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  for (const auto& c : scheduler_cases()) {
    SchedulerRun run(c);
    for (int i = 0; i < kSchedulerRounds; ++i) run.round();
    std::ofstream(dir + "/" + c.label + ".state", std::ios::binary) << run.sched->save();
  }
  for (const auto& c : searcher_cases()) {
    SearcherRun run(c);
    for (int i = 0; i < kSearcherRounds; ++i) run.round();
    std::ofstream(dir + "/" + c.label + ".state", std::ios::binary) << run.searcher->save();
  }
}
