#include "ringside/trace_reader_cache.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <unordered_set>

namespace ringside::trace {

uint64_t raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(limit.rlim_cur);
}

TraceReaderCache::TraceReaderCache(std::optional<size_t> max_open) {
  if (max_open && *max_open == 0) return;
  // Never more than the descriptors allow: a file beyond the bound is opened per
  // use, whereas an open that fails for want of a descriptor would lose its data.
  const uint64_t limit = raise_open_file_limit();
  const size_t by_limit =
      limit > kSpareDescriptors
          ? static_cast<size_t>(std::min<uint64_t>(limit - kSpareDescriptors, SIZE_MAX))
          : 0;
  max_open_ = max_open ? std::min(*max_open, by_limit) : by_limit;
}

Result<std::shared_ptr<const TraceReader>> TraceReaderCache::open(const std::string& path) {
  auto stamp = file_stamp(path);
  auto it = kept_.find(path);
  if (it != kept_.end()) {
    if (stamp.ok() && same_file(it->second.stamp, stamp.value())) {
      // Changed since it was last synced: what the writer announced since is read.
      if (!(it->second.stamp == stamp.value())) it->second.reader->sync();
      it->second.stamp = stamp.value();
      return it->second.reader;
    }
    kept_.erase(it);  // replaced or gone: that file is not this path's any more
  }
  auto opened = TraceReader::open(path);
  if (!opened.ok()) return opened.status();
  ++files_opened_;
  std::shared_ptr<const TraceReader> reader(std::move(opened.value()));
  if (stamp.ok() && kept_.size() < max_open_) {
    reader->sync();  // from now on, it reads what sync() finds new
    kept_[path] = {stamp.value(), reader};
  }
  return reader;
}

void TraceReaderCache::forget(const std::string& path) {
  kept_.erase(path);
}

void TraceReaderCache::retain(const std::vector<std::string>& paths) {
  if (kept_.empty()) return;
  const std::unordered_set<std::string> listed(paths.begin(), paths.end());
  std::erase_if(kept_, [&](const auto& entry) { return !listed.contains(entry.first); });
}

namespace {

// `path` through `cache` when there is one, else opened by `open` for this use alone.
Result<std::shared_ptr<const TraceReader>> open_shared(
    const std::string& path, TraceReaderCache* cache,
    Result<std::unique_ptr<TraceReader>> (*open)(const std::string&)) {
  if (cache != nullptr) return cache->open(path);
  auto opened = open(path);
  if (!opened.ok()) return opened.status();
  return std::shared_ptr<const TraceReader>(std::move(opened.value()));
}

}  // namespace

Result<std::shared_ptr<const TraceReader>> open_trace(const std::string& path,
                                                      TraceReaderCache* cache) {
  return open_shared(path, cache, &TraceReader::open);
}

Result<std::shared_ptr<const TraceReader>> open_trace_ops(const std::string& path,
                                                          TraceReaderCache* cache) {
  return open_shared(path, cache, &TraceReader::open_ops);
}

}  // namespace ringside::trace
