// The searcher decorators (search/concurrency_limiter.h, search/repeater.h): the limit, the
// repeat groups and their means, save and restore, make_searcher's wrapping, and the
// searcher registry's one table.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "search/concurrency_limiter.h"
#include "controller/controller.h"
#include "search/random_searcher.h"
#include "search/repeater.h"
#include "search/searcher.h"

using namespace ranktune::search;
using namespace ranktune::controller;

namespace {

/// Suggests {"x": k} for k = 0, 1, ... up to `total`, and records what it is told.
struct Fake : Searcher {
  struct Completion {
    TrialId id;
    Metrics last;
    bool error;
  };
  std::int64_t total_ = 5;
  std::int64_t next = 0;
  bool not_now = false;
  std::vector<TrialId> asked;
  std::vector<TrialId> results;
  std::vector<Completion> completions;

  Suggestion suggest(TrialId id) override {
    asked.push_back(id);
    if (not_now) return {Suggestion::Kind::NotNow, {}};
    if (next >= total_) return {Suggestion::Kind::Finished, {}};
    return {Suggestion::Kind::Config, {{"x", double(next++)}, {"s", std::string("a b\nc")}}};
  }
  void on_trial_result(TrialId id, std::int64_t, const Metrics&) override { results.push_back(id); }
  void on_trial_complete(TrialId id, const Metrics& last, bool error) override {
    completions.push_back({id, last, error});
  }
  std::int64_t total() const override { return total_; }
  // Spaces, newlines and a trailing newline: the decorators must nest it byte for byte.
  std::string save() const override { return "fake next\n" + std::to_string(next) + " \n"; }
  void restore(const std::string& state) override {
    std::istringstream in(state);
    std::string a, b;
    if (!(in >> a >> b >> next) || a != "fake" || b != "next") throw std::invalid_argument(state);
  }
};

Space one_param() {
  Domain d;
  d.kind = DomainKind::Uniform;
  d.low = 0;
  d.high = 1;
  return {{{"x", d}}};
}

SearcherOptions sopts(std::int64_t n) { return {7, n, "loss", Mode::Min}; }

Metrics loss(double v) { return {{"loss", v}}; }

double x_of(const Suggestion& s) { return std::get<double>(s.config.at("x")); }

/// The key of the OptionError that make_searcher throws, or "" if none.
std::string option_error_key(const Options& o) {
  try {
    make_searcher("random", one_param(), sopts(3), o);
  } catch (const OptionError& e) {
    return e.key() + ": " + e.what();
  }
  return "";
}

}  // namespace

TEST(ConcurrencyLimiter, NotNowAtTheLimitAndResumesAfterACompletion) {
  auto fake = std::make_unique<Fake>();
  Fake* f = fake.get();
  ConcurrencyLimiter l(std::move(fake), 2);
  EXPECT_EQ(l.total(), 5);
  EXPECT_EQ(l.suggest(1).kind, Suggestion::Kind::Config);
  EXPECT_EQ(l.suggest(2).kind, Suggestion::Kind::Config);
  EXPECT_EQ(l.suggest(3).kind, Suggestion::Kind::NotNow);
  EXPECT_EQ(l.suggest(3).kind, Suggestion::Kind::NotNow);
  EXPECT_EQ(f->asked.size(), 2u);  // the inner searcher is not asked at the limit
  l.on_trial_result(1, 1, loss(1));
  EXPECT_EQ(f->results, std::vector<TrialId>{1});
  l.on_trial_complete(1, loss(1), false);
  ASSERT_EQ(f->completions.size(), 1u);
  EXPECT_EQ(l.live(), 1u);
  const auto s = l.suggest(3);
  ASSERT_EQ(s.kind, Suggestion::Kind::Config);
  EXPECT_EQ(x_of(s), 2.0);
  // An errored trial frees its slot too; Finished passes through.
  l.on_trial_complete(2, {}, true);
  f->next = 5;
  EXPECT_EQ(l.suggest(4).kind, Suggestion::Kind::Finished);
  EXPECT_EQ(l.live(), 1u);
}

TEST(ConcurrencyLimiter, NotNowOfTheInnerSearcherDoesNotTakeASlot) {
  auto fake = std::make_unique<Fake>();
  fake->not_now = true;
  ConcurrencyLimiter l(std::move(fake), 1);
  EXPECT_EQ(l.suggest(1).kind, Suggestion::Kind::NotNow);
  EXPECT_EQ(l.live(), 0u);
}

TEST(ConcurrencyLimiter, SaveRestoreContinuesWithTheSameSuggestion) {
  ConcurrencyLimiter a(std::make_unique<RandomSearcher>(one_param(), sopts(10)), 2);
  a.suggest(1);
  a.suggest(2);
  a.on_trial_complete(1, loss(1), false);
  const std::string state = a.save();
  ConcurrencyLimiter b(std::make_unique<RandomSearcher>(one_param(), sopts(10)), 2);
  b.restore(state);
  EXPECT_EQ(b.live(), 1u);
  EXPECT_EQ(b.save(), state);
  const auto sa = a.suggest(3), sb = b.suggest(3);
  ASSERT_EQ(sb.kind, Suggestion::Kind::Config);
  EXPECT_EQ(sa.config, sb.config);
  EXPECT_EQ(b.suggest(4).kind, Suggestion::Kind::NotNow);  // trials 2 and 3 still live

  // An inner state with spaces and newlines nests intact.
  ConcurrencyLimiter c(std::make_unique<Fake>(), 3), d(std::make_unique<Fake>(), 3);
  c.suggest(1);
  d.restore(c.save());
  EXPECT_EQ(d.save(), c.save());
  EXPECT_EQ(x_of(d.suggest(2)), 1.0);

  EXPECT_THROW(d.restore("concurrency_limiter 1\nlive 0\ninner 99\nfake"), std::invalid_argument);
  EXPECT_THROW(d.restore(c.save() + "x"), std::invalid_argument);
  EXPECT_THROW(d.restore("repeater 1"), std::invalid_argument);
}

TEST(Repeater, EachConfigRunsRepeatTimesAndTheInnerSearcherGetsTheMean) {
  auto fake = std::make_unique<Fake>();
  Fake* f = fake.get();
  Repeater r(std::move(fake), 3, "loss");
  EXPECT_EQ(r.total(), 15);
  std::vector<Suggestion> s;
  for (TrialId id = 1; id <= 4; ++id) s.push_back(r.suggest(id));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(s[i].config, s[0].config);
  EXPECT_EQ(x_of(s[3]), 1.0);
  EXPECT_EQ(f->asked, (std::vector<TrialId>{1, 4}));  // a group is known by its first id

  r.on_trial_result(2, 1, loss(9));
  EXPECT_TRUE(f->results.empty());  // intermediate results are not forwarded
  r.on_trial_complete(3, loss(3), false);
  r.on_trial_complete(1, {{"loss", 1}, {"acc", 0.5}}, false);
  EXPECT_TRUE(f->completions.empty());
  r.on_trial_complete(2, loss(8), false);
  ASSERT_EQ(f->completions.size(), 1u);
  EXPECT_EQ(f->completions[0].id, 1);
  EXPECT_FALSE(f->completions[0].error);
  EXPECT_DOUBLE_EQ(f->completions[0].last.at("loss"), 4.0);
  r.on_trial_complete(2, loss(8), false);  // a repeated completion is ignored
  EXPECT_EQ(f->completions.size(), 1u);
}

TEST(Repeater, ErrorsAndNonFiniteValuesAreLeftOutOfTheMean) {
  auto fake = std::make_unique<Fake>();
  Fake* f = fake.get();
  Repeater r(std::move(fake), 3, "loss");
  for (TrialId id = 1; id <= 9; ++id) ASSERT_EQ(r.suggest(id).kind, Suggestion::Kind::Config);
  // Group 1: one error, one NaN and one valid value.
  r.on_trial_complete(1, loss(2), true);
  r.on_trial_complete(2, loss(NAN), false);
  r.on_trial_complete(3, loss(5), false);
  // Group 4: every member errored.
  for (TrialId id : {4, 5, 6}) r.on_trial_complete(id, loss(1), true);
  // Group 7: no errors, but no finite value: NaN without error.
  r.on_trial_complete(7, loss(INFINITY), false);
  r.on_trial_complete(8, {}, false);
  r.on_trial_complete(9, loss(NAN), true);
  ASSERT_EQ(f->completions.size(), 3u);
  EXPECT_EQ(f->completions[0].id, 1);
  EXPECT_FALSE(f->completions[0].error);
  EXPECT_DOUBLE_EQ(f->completions[0].last.at("loss"), 5.0);
  EXPECT_EQ(f->completions[1].id, 4);
  EXPECT_TRUE(f->completions[1].error);
  EXPECT_EQ(f->completions[2].id, 7);
  EXPECT_FALSE(f->completions[2].error);
  EXPECT_TRUE(std::isnan(f->completions[2].last.at("loss")));
}

TEST(Repeater, TotalAndPassThroughOfNotNowAndFinished) {
  auto unknown = std::make_unique<Fake>();
  unknown->total_ = -1;
  EXPECT_EQ(Repeater(std::move(unknown), 4, "loss").total(), -1);

  auto fake = std::make_unique<Fake>();
  Fake* f = fake.get();
  f->total_ = 1;
  Repeater r(std::move(fake), 2, "loss");
  EXPECT_EQ(r.total(), 2);
  f->not_now = true;
  EXPECT_EQ(r.suggest(1).kind, Suggestion::Kind::NotNow);
  f->not_now = false;
  EXPECT_EQ(r.suggest(1).kind, Suggestion::Kind::Config);
  EXPECT_EQ(r.suggest(2).kind, Suggestion::Kind::Config);
  EXPECT_EQ(r.suggest(3).kind, Suggestion::Kind::Finished);
}

TEST(Repeater, SaveRestoreMidGroupContinuesTheSame) {
  auto make = [] {
    return Repeater(std::make_unique<RandomSearcher>(one_param(), sopts(10)), 3, "loss");
  };
  Repeater a = make();
  a.suggest(1);
  a.suggest(2);
  a.on_trial_complete(1, loss(0.1), false);
  const std::string state = a.save();
  Repeater b = make();
  b.restore(state);
  EXPECT_EQ(b.save(), state);
  for (TrialId id = 3; id <= 7; ++id) {
    const auto sa = a.suggest(id), sb = b.suggest(id);
    ASSERT_EQ(sb.kind, Suggestion::Kind::Config);
    EXPECT_EQ(sa.config, sb.config) << id;
  }

  // The open group's partial sum survives: the inner searcher gets the same mean.
  auto fake = std::make_unique<Fake>();
  Repeater c(std::move(fake), 2, "loss");
  c.suggest(1);
  c.suggest(2);
  c.suggest(3);
  c.on_trial_complete(1, loss(0.1), false);
  auto fake2 = std::make_unique<Fake>();
  Fake* f2 = fake2.get();
  Repeater d(std::move(fake2), 2, "loss");
  d.restore(c.save());
  EXPECT_EQ(d.save(), c.save());
  EXPECT_EQ(std::get<std::string>(d.suggest(4).config.at("s")), "a b\nc");  // group 3's 2nd
  d.on_trial_complete(2, loss(0.2), false);
  ASSERT_EQ(f2->completions.size(), 1u);
  EXPECT_EQ(f2->completions[0].id, 1);
  EXPECT_DOUBLE_EQ(f2->completions[0].last.at("loss"), (0.1 + 0.2) / 2);

  Repeater other(std::make_unique<Fake>(), 3, "loss");
  EXPECT_THROW(other.restore(c.save()), std::invalid_argument);  // saved with repeat = 2
  EXPECT_THROW(d.restore("repeater 1\nrepeat 2\ncurrent 0 0\nconfig 1\n"), std::invalid_argument);
  EXPECT_THROW(d.restore(c.save().substr(0, c.save().size() - 2)), std::invalid_argument);
}

TEST(Decorators, MakeSearcherWrapsAndChecksTheGenericOptions) {
  auto plain = make_searcher("random", one_param(), sopts(3));
  EXPECT_EQ(plain->total(), 3);
  auto both = make_searcher("random", one_param(), sopts(3),
                            {{"repeat", std::int64_t{2}}, {"max_concurrent", std::int64_t{1}}});
  auto* limiter = dynamic_cast<ConcurrencyLimiter*>(both.get());
  ASSERT_NE(limiter, nullptr);
  EXPECT_EQ(limiter->max_concurrent(), 1);
  EXPECT_NE(dynamic_cast<const Repeater*>(&limiter->inner()), nullptr);
  EXPECT_EQ(both->total(), 6);
  // The keys are taken out before the algorithm reads its own: tpe still reads n_startup.
  auto tpe = make_searcher("tpe", one_param(), sopts(4),
                           {{"repeat", std::int64_t{3}}, {"n_startup", std::int64_t{2}}});
  EXPECT_NE(dynamic_cast<Repeater*>(tpe.get()), nullptr);
  EXPECT_EQ(tpe->total(), 12);
  EXPECT_EQ(dynamic_cast<Repeater*>(make_searcher("random", one_param(), sopts(3),
                                                  {{"repeat", std::int64_t{1}}}).get()),
            nullptr);

  EXPECT_EQ(option_error_key({{"repeat", std::int64_t{0}}}).rfind("repeat: ", 0), 0u);
  EXPECT_EQ(option_error_key({{"max_concurrent", std::int64_t{0}}}).rfind("max_concurrent: ", 0), 0u);
  EXPECT_EQ(option_error_key({{"max_concurrent", std::string("two")}}).rfind("max_concurrent: ", 0), 0u);
  EXPECT_EQ(option_error_key({{"repeat", 2.0}}).rfind("repeat: ", 0), 0u);
  EXPECT_EQ(option_error_key({{"repaet", std::int64_t{2}}}).rfind("repaet: ", 0), 0u);  // unknown
  EXPECT_EQ(option_error_key({{"repeat", std::int64_t{2}}}), "");
}

TEST(Decorators, ControllerRunsOneTrialAtATimeWithMaxConcurrentOne) {
  ControllerOptions o;
  o.metric = "loss";
  o.mode = Mode::Min;
  o.max_t = 2;
  Controller c(o,
               make_searcher("random", one_param(), sopts(3), {{"max_concurrent", std::int64_t{1}}}),
               make_scheduler("fifo", {}));
  std::vector<Instruction> pending;
  for (int w : {1, 2, 3}) {
    auto cmds = c.on_worker_free(w, 0);
    pending.insert(pending.end(), cmds.begin(), cmds.end());
  }
  ASSERT_EQ(pending.size(), 1u);  // three workers free, but only one Start before any result
  EXPECT_EQ(pending[0].kind, Instruction::Kind::Start);
  int running = 0, most = 0, starts = 0;
  double now = 0;
  while (!pending.empty()) {
    Instruction cmd = pending.front();
    pending.erase(pending.begin());
    if (cmd.kind == Instruction::Kind::Stop) {
      --running;
      continue;
    }
    if (cmd.kind == Instruction::Kind::Start) {
      ++starts;
      most = std::max(most, ++running);
    }
    auto next = c.on_result(cmd.trial, cmd.attempt, loss(double(cmd.trial)), ++now);
    pending.insert(pending.end(), next.begin(), next.end());
  }
  EXPECT_TRUE(c.finished());
  EXPECT_EQ(starts, 3);
  EXPECT_EQ(most, 1);
  ASSERT_EQ(c.trials().size(), 3u);
  for (const auto& t : c.trials()) EXPECT_EQ(t.status, TrialStatus::Terminated);
}

TEST(Decorators, TheSearcherRegistryIsOneTableOfNamesHelpAndFactories) {
  std::vector<std::string> names;
  for (const auto& k : searchers()) {
    EXPECT_NE(std::string(k.help), "") << k.name;
    EXPECT_EQ(std::string(k.help).find('\n'), std::string::npos) << k.name << ": one line of help";
    EXPECT_EQ(std::count(names.begin(), names.end(), k.name), 0) << k.name << " twice";
    names.emplace_back(k.name);
    // Each factory also takes the generic keys, which make_searcher handles for all.
    EXPECT_NE(make_searcher(k.name, one_param(), sopts(3), {{"repeat", std::int64_t{2}}}), nullptr) << k.name;
  }
  EXPECT_EQ(searcher_names(), names);
}
