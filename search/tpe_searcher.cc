#include "search/tpe_searcher.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "search/saved_state.h"

namespace ranktune::search {

TpeOptions TpeOptions::read(const Options& options) {
  OptionReader r(options, "tpe");
  TpeOptions t;
  t.n_startup = r.integer("n_startup", t.n_startup);
  r.require(t.n_startup >= 1, "n_startup", "must be >= 1 (got " + std::to_string(t.n_startup) + ")");
  r.at_most("n_startup", t.n_startup, kMaxTrials);
  const auto m = parzen::ModelOptions::read(r, t.model());
  t.gamma = m.gamma;
  t.n_ei_candidates = m.n_ei_candidates;
  t.prior_weight = m.prior_weight;
  t.multivariate = m.multivariate;
  t.constant_liar = r.flag("constant_liar", t.constant_liar);
  r.finish();
  return t;
}

TpeSearcher::TpeSearcher(Space space, SearcherOptions options, TpeOptions tpe)
    : space_(std::move(space)), options_(std::move(options)), tpe_(tpe) {}

Suggestion TpeSearcher::suggest(TrialId id) {
  if (next_ >= options_.num_samples) return {Suggestion::Kind::Finished, {}};
  Rng rng = index_rng(options_.seed, static_cast<std::uint64_t>(next_++));
  Point point;
  if (observed_.size() < static_cast<std::size_t>(tpe_.n_startup)) {
    point = parzen::sample_point(space_, rng);
  } else {
    std::vector<parzen::Scored> scored;
    scored.reserve(observed_.size());
    for (const auto& o : observed_) scored.push_back({o.score, &o.point});
    std::vector<const Point*> running;
    if (tpe_.constant_liar) {
      running.reserve(pending_.size());
      for (const auto& [pid, p] : pending_) running.push_back(&p);
    }
    point = parzen::propose(space_, scored, tpe_.model(), rng, running);
  }
  Config config = parzen::decode(space_, point);
  pending_[id] = std::move(point);
  return {Suggestion::Kind::Config, std::move(config)};
}

void TpeSearcher::on_trial_complete(TrialId id, const Metrics& last, bool error) {
  const auto it = pending_.find(id);
  if (it == pending_.end()) return;  // not ours, or already complete
  Point point = std::move(it->second);
  pending_.erase(it);
  if (error) return;
  const auto m = last.find(options_.metric);
  if (m == last.end() || !std::isfinite(m->second)) return;
  observed_.push_back({id, sign(options_.mode) * m->second, std::move(point)});
}

std::string TpeSearcher::save() const {
  std::ostringstream out;
  out << "tpe 1\nnext " << next_ << "\npending " << pending_.size() << "\n";
  for (const auto& [id, point] : pending_) {
    out << id;
    parzen::write_point(out, point);
    out << '\n';
  }
  out << "observed " << observed_.size() << "\n";
  for (const auto& o : observed_) {
    // The metric as reported, not the signed score, so the text reads like the results.
    out << o.id << ' ';
    write_double(out, sign(options_.mode) * o.score);
    parzen::write_point(out, o.point);
    out << '\n';
  }
  return out.str();
}

void TpeSearcher::restore(const std::string& state) {
  const auto bad = [](const std::string& why) {
    return std::invalid_argument("tpe searcher: bad saved state: " + why);
  };
  std::istringstream in(state);
  std::string word;
  int version = 0;
  if (!(in >> word >> version) || word != "tpe" || version != 1) throw bad("expected 'tpe 1'");
  const auto count = [&](const char* key) {
    long long n = -1;
    if (!(in >> word >> n) || word != key || n < 0) throw bad(std::string("expected '") + key + " N'");
    return n;
  };
  const auto read_point = [&] { return parzen::read_point(in, space_, "tpe searcher"); };
  const long long next = count("next");
  std::map<TrialId, Point> pending;
  for (long long n = count("pending"); n > 0; --n) {
    TrialId id = 0;
    if (!(in >> id)) throw bad("expected a pending trial id");
    pending[id] = read_point();
  }
  std::vector<Observation> observed;
  for (long long n = count("observed"); n > 0; --n) {
    Observation o{};
    if (!(in >> o.id)) throw bad("expected an observation's id");
    const double value = read_double(in, "observation value");
    if (!std::isfinite(value)) throw bad("an observation's value must be finite");
    o.score = sign(options_.mode) * value;
    o.point = read_point();
    observed.push_back(std::move(o));
  }
  if (in >> word) throw bad("unexpected '" + word + "' after the observations");
  next_ = next;
  pending_ = std::move(pending);
  observed_ = std::move(observed);
}

}  // namespace ranktune::search
