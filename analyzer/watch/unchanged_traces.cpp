#include "watch/unchanged_traces.h"

#include <filesystem>
#include <system_error>

#include "ringside/trace_reader.h"

namespace ringside::analysis::watch {

bool UnchangedTraces::check(const std::string& dir, Clock::time_point now) {
  std::map<std::string, Seen> seen;
  bool whole = true;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec), end;
  if (ec) whole = false;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!trace::is_trace_file_name(name)) continue;
    const std::string path = it->path().string();
    auto stamp = trace::file_stamp(path);
    if (!stamp.ok()) {
      whole = false;
      continue;
    }
    auto before = seen_.find(path);
    const bool same = before != seen_.end() && before->second.stamp == stamp.value();
    seen[path] = {stamp.value(), same ? before->second.since : now};
  }
  if (ec) whole = false;
  seen_ = std::move(seen);
  seen_whole_ = whole;
  checked_at_ = now;
  if (!whole || !analyzed_at_ || seen_.size() != analyzed_.size()) return false;
  for (const auto& [path, s] : seen_) {
    auto a = analyzed_.find(path);
    if (a == analyzed_.end() || !(a->second.stamp == s.stamp)) return false;
    if (s.since + kSettle > *analyzed_at_) return false;
  }
  ++reused_;
  return true;
}

void UnchangedTraces::analyzed() {
  if (!seen_whole_) {
    analyzed_at_.reset();
    analyzed_.clear();
    return;
  }
  analyzed_ = seen_;
  analyzed_at_ = checked_at_;
}

}  // namespace ringside::analysis::watch
