#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>

#include "ringside/trace_reader.h"

namespace ringside::trace {
namespace {

namespace fs = std::filesystem;

bool looks_like_trace(const std::string& name) {
  return name.rfind("ringside-", 0) == 0 && name.size() > 3 &&
         name.compare(name.size() - 3, 3, ".h5") == 0;
}

}  // namespace

Result<TraceDirListing> list_trace_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return Status::error(dir + ": no such directory");
  if (!fs::is_directory(dir, ec)) {
    return Status::error(dir + ": not a directory (give the trace directory, e.g. traces/)");
  }
  std::vector<std::string> candidates;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    std::string name = entry.path().filename().string();
    if (looks_like_trace(name)) candidates.push_back(entry.path().string());
  }
  if (ec) return Status::error(dir + ": cannot list directory: " + ec.message());
  if (candidates.empty()) {
    return Status::error(dir +
                         ": no ringside trace files (ringside-<job>-r<rank>.h5) in this directory");
  }
  std::sort(candidates.begin(), candidates.end());

  TraceDirListing listing;
  std::map<std::string, std::vector<std::string>> by_job;  // job -> files
  std::map<int64_t, std::string> by_rank;
  std::set<int64_t> world_sizes;
  std::vector<std::string> version_errors;
  for (const std::string& path : candidates) {
    auto reader = TraceReader::open(path);
    if (!reader.ok()) {
      const std::string& msg = reader.message();
      if (msg.find("schema_version") != std::string::npos &&
          msg.find("not supported") != std::string::npos) {
        version_errors.push_back(msg);
      } else {
        listing.bad_files.push_back(msg);
      }
      continue;
    }
    const TraceMeta& meta = reader.value()->meta();
    by_job[meta.job_id].push_back(path);
    world_sizes.insert(meta.world_size);
    if (by_rank.count(meta.rank)) {
      listing.bad_files.push_back(path + ": duplicate of rank " + std::to_string(meta.rank) +
                                  " (also in " + by_rank[meta.rank] + "); ignored");
      continue;
    }
    by_rank[meta.rank] = path;
  }
  if (!version_errors.empty() && by_rank.empty()) {
    return Status::error(
        version_errors.front() +
        (version_errors.size() > 1
             ? " (and " + std::to_string(version_errors.size() - 1) + " more files)"
             : ""));
  }
  for (const auto& msg : version_errors) listing.bad_files.push_back(msg);
  if (by_job.size() > 1) {
    std::string jobs;
    for (const auto& [job, files] : by_job) {
      jobs += (jobs.empty() ? "" : ", ") +
              ("'" + job + "' (" + std::to_string(files.size()) + " files)");
    }
    return Status::error(dir + ": traces of more than one job: " + jobs +
                         "; put each job's traces in its own directory");
  }
  if (by_rank.empty()) {
    std::string first = listing.bad_files.empty() ? "" : ": " + listing.bad_files.front();
    return Status::error(dir + ": no readable trace file" + first);
  }
  listing.job_id = by_job.begin()->first;
  listing.world_size = *world_sizes.rbegin();
  if (world_sizes.size() > 1) {
    listing.bad_files.push_back(dir + ": rank files disagree on world_size; using the largest (" +
                                std::to_string(listing.world_size) + ")");
  }
  for (const auto& [rank, path] : by_rank) listing.files.push_back({path, rank});
  for (int64_t r = 0; r < listing.world_size; ++r) {
    if (!by_rank.count(r)) listing.missing_ranks.push_back(r);
  }
  return listing;
}

}  // namespace ringside::trace
