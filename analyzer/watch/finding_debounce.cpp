#include "watch/finding_debounce.h"

namespace ringside::analysis::watch {
namespace {

std::string finding_key(const Finding& f) {
  std::string k = f.kind + "/" + f.subkind + " r";
  for (int64_t r : f.ranks) k += std::to_string(r) + ",";
  k += " n";
  for (const auto& n : f.nodes) k += n + ",";
  return k;
}

}  // namespace

FindingDebounce::Changes FindingDebounce::update(const std::vector<Finding>& findings,
                                                 bool job_over) {
  Changes c;
  std::set<std::string> now;
  for (const Finding& f : findings) {
    const std::string key = finding_key(f);
    if (!now.insert(key).second) continue;
    if (auto it = open_.find(key); it != open_.end()) {
      it->second = f;
      continue;
    }
    if (!previous_.count(key) && !job_over) continue;
    open_.emplace(key, f);
    c.added.push_back(f);
  }
  for (auto it = open_.begin(); it != open_.end();) {
    if (now.count(it->first) || previous_.count(it->first)) {
      ++it;
      continue;
    }
    c.cleared.push_back(it->second);
    it = open_.erase(it);
  }
  previous_ = std::move(now);
  return c;
}

bool JobEnd::update(int64_t ranks, int64_t traced, int64_t closed, int64_t dead) {
  const bool ended = traced > 0 && closed + dead >= traced && traced >= ranks;
  const bool over = ended && (closed >= traced || ended_before_);
  ended_before_ = ended;
  return over;
}

}  // namespace ringside::analysis::watch
