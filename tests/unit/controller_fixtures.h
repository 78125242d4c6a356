#pragma once
// Shared set-up for the tests that drive a search::Controller (controller and simulator).

#include "search/controller.h"

namespace ranktune::search::fixtures {

/// One parameter, x uniform in [0, 1].
inline Space one_param() {
  Space s;
  Domain d;
  d.kind = DomainKind::Uniform;
  d.low = 0;
  d.high = 1;
  s.params = {{"x", d}};
  return s;
}

/// Minimize "loss" for `max_t` iterations per trial.
inline ControllerOptions opts(std::int64_t max_t) {
  ControllerOptions o;
  o.metric = "loss";
  o.mode = Mode::Min;
  o.max_t = max_t;
  return o;
}

}  // namespace ranktune::search::fixtures
