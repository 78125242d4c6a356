// Pipeline sensitivity tables (report/sensitivity.h): the newest group found among other
// evaluations, and each metric's change against the reference pipeline.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "report/sensitivity.h"

namespace ranktune::report {
namespace {

io::Evaluation evaluation(std::int64_t id, const std::string& group, int index, const std::string& pipeline,
                          double accuracy, double loss) {
  io::Evaluation e;
  e.id = id;
  e.split = "test";
  e.manifest = R"({"pipeline": {"name": ")" + pipeline + R"(", "normalize": )" +
               (pipeline == "raw" ? "false" : "true") + R"(, "input_dtype": "float32"})";
  if (!group.empty())
    e.manifest += R"(, "sensitivity": {"group": ")" + group + R"(", "index": )" + std::to_string(index) + "}";
  e.manifest += "}";
  e.metrics = {{7, 4, "test_accuracy", accuracy}, {7, 4, "test_loss", loss}};
  return e;
}

TEST(Sensitivity, NewestGroupAgainstItsReference) {
  // An older group, a lone evaluation, then the newest group recorded out of order.
  const std::vector<io::Evaluation> evs = {evaluation(1, "old", 0, "reference", 0.5, 1.0),
                                           evaluation(2, "old", 1, "raw", 0.4, 1.1),
                                           evaluation(3, "", 0, "reference", 0.9, 0.2),
                                           evaluation(4, "new", 1, "raw", 0.80, 0.5),
                                           evaluation(5, "new", 0, "reference", 0.85, 0.4)};
  const auto group = newest_sensitivity_group(evs);
  ASSERT_EQ(group.size(), 2u);
  EXPECT_EQ(group[0]->id, 5);  // the reference first
  EXPECT_EQ(group[1]->id, 4);
  const auto grid = sensitivity_grid(group);
  ASSERT_TRUE(grid.has_value());
  EXPECT_EQ(grid->head, (std::vector<std::string>{"trial_id", "iteration", "pipeline", "normalize", "input_dtype",
                                                  "test_accuracy", "test_loss", "Δ test_accuracy (pp)",
                                                  "Δ test_loss"}));
  ASSERT_EQ(grid->body.size(), 2u);
  EXPECT_EQ(grid->body[0], (std::vector<std::string>{"7", "4", "reference", "yes", "float32", "0.8500", "0.4000",
                                                     "+0.00", "+0.0000"}));
  // Accuracy in percentage points, loss as it is.
  EXPECT_EQ(grid->body[1], (std::vector<std::string>{"7", "4", "raw", "no", "float32", "0.8000", "0.5000", "-5.00",
                                                     "+0.1000"}));
  // A change that rounds to nothing shows as +0, not -0.
  const std::vector<io::Evaluation> tiny = {evaluation(1, "t", 0, "reference", 0.5, 1.0),
                                            evaluation(2, "t", 1, "raw", 0.5, 1.0 - 1e-6)};
  EXPECT_EQ(sensitivity_grid(newest_sensitivity_group(tiny))->body[1][8], "+0.0000");
}

TEST(Sensitivity, NoGroupNoTable) {
  EXPECT_TRUE(newest_sensitivity_group({}).empty());
  // The newest evaluation belongs to no group: nothing, even though an older group exists.
  EXPECT_TRUE(newest_sensitivity_group({evaluation(1, "g", 0, "reference", 0.5, 1), evaluation(2, "g", 1, "raw", 0.4, 1),
                                        evaluation(3, "", 0, "reference", 0.5, 1)})
                  .empty());
  // A group of one (the others were interrupted) is no comparison.
  EXPECT_TRUE(newest_sensitivity_group({evaluation(1, "g", 1, "raw", 0.5, 1)}).empty());
  // A manifest that is not JSON is just not grouped.
  io::Evaluation odd = evaluation(4, "", 0, "x", 0.1, 1);
  odd.manifest = "not json";
  EXPECT_TRUE(newest_sensitivity_group({odd}).empty());
  EXPECT_FALSE(sensitivity_grid({}).has_value());
  // Without the reference (index 0 missing) the changes stay blank.
  const std::vector<io::Evaluation> evs = {evaluation(1, "g", 1, "raw", 0.5, 1), evaluation(2, "g", 2, "fp16", 0.6, 1)};
  const auto grid = sensitivity_grid(newest_sensitivity_group(evs));
  ASSERT_TRUE(grid.has_value());
  EXPECT_EQ(grid->body[0][7], "");
}

}  // namespace
}  // namespace ranktune::report
