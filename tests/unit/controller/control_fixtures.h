#pragma once
// Shared by the live-control tests (control_test, control_file_test).

#include <utility>

#include "controller/control.h"

namespace ranktune::search::fixtures {
using namespace ranktune::controller;

/// The search space the control tests send values for: lr, layers, act.
inline Space space() {
  Space s;
  s.params = {{"lr", Domain{DomainKind::LogUniform, 1e-4, 1e-1, 0, {}}},
              {"layers", Domain{DomainKind::RandInt, 1, 5, 0, {}}},
              {"act", Domain{DomainKind::Choice, 0, 0, 0, {std::string("relu"), std::string("tanh")}}}};
  return s;
}

/// A control request of kind `k` for `trial`, with `config`.
inline ControlRequest request(ControlRequest::Kind k, TrialId trial, Config config = {}) {
  ControlRequest r;
  r.kind = k;
  r.trial = trial;
  r.config = std::move(config);
  return r;
}

}  // namespace ranktune::search::fixtures
