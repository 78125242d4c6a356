#pragma once
// The problem of the ask-cost benchmarks (bench_tpe, bench_gp, and tpe_optuna.py in
// Python): 6 uniform floats in [-5, 5] and one 4-way categorical; the loss is the sum of
// squares plus 1 unless the category is "b".

#include <string>

#include "search/space.h"

namespace ranktune::bench {

inline std::string x_name(int i) { return std::string(1, 'x').append(std::to_string(i)); }

inline search::Space ask_space() {
  search::Space s;
  for (int i = 0; i < 6; ++i) s.params.push_back({x_name(i), {search::DomainKind::Uniform, -5, 5, 0, {}}});
  s.params.push_back({"c", {search::DomainKind::Choice, 0, 0, 0,
                            {std::string("a"), std::string("b"), std::string("c"), std::string("d")}}});
  return s;
}

inline double ask_loss(const search::Config& c) {
  double f = std::get<std::string>(c.at("c")) == "b" ? 0.0 : 1.0;
  for (int i = 0; i < 6; ++i) {
    const double x = std::get<double>(c.at(x_name(i)));
    f += x * x;
  }
  return f;
}

}  // namespace ranktune::bench
