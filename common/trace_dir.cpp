#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

#include "ringside/trace_reader.h"
#include "ringside/trace_validate.h"

namespace ringside::trace {
namespace {

namespace fs = std::filesystem;

// A directory's traces may claim at most this many ranks per file present:
// the number inside a file never sizes the analysis alone.
constexpr int64_t kMaxRanksPerFile = 256;
constexpr auto kMetadataCheckLimit = std::chrono::seconds(60);
constexpr int kReadError = 3;  // the metadata check's exit code for "not a usable trace"

// HDF5 1.10 reads variable-length string attributes from the global heap,
// whose objects carry no checksum: a corrupt length there can crash or hang
// the library itself.  The first open of each file therefore happens in a
// child process; only a file whose metadata a child read cleanly is opened
// here.  Returns an empty string when the file is safe to open, else why not.
std::string check_metadata_in_child(const std::string& path) {
  const pid_t child = fork();
  if (child < 0) return "";  // cannot isolate: fall back to opening in process
  if (child == 0) {
    // Silent: the parent names the file and the reason.  Exit 0 or kReadError
    // says the library came back; anything else is a crash, whatever a
    // sanitizer or runtime turned it into.
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
    }
    auto reader = TraceReader::open(path);
    _exit(reader.ok() ? 0 : kReadError);
  }
  const auto deadline = std::chrono::steady_clock::now() + kMetadataCheckLimit;
  int status = 0;
  for (;;) {
    const pid_t got = waitpid(child, &status, WNOHANG);
    if (got == child) break;
    if (got < 0 && errno != EINTR) return "";
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      return path + ": reading its metadata did not finish in " +
             std::to_string(kMetadataCheckLimit.count()) +
             " s (corrupt file: HDF5 loops on it); skipped";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (WIFSIGNALED(status) ||
      (WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != kReadError)) {
    const std::string how = WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                                : "exit " + std::to_string(WEXITSTATUS(status));
    return path + ": reading its metadata crashed the HDF5 library (" + how +
           "): its unchecksummed attribute heap is corrupt; skipped";
  }
  return "";  // exit 0, or an error the in-process open reports with its reason
}

// The listing's key for a --step value: kNoStep means the files without a step.
std::string step_key(const std::string& step) {
  return step == kNoStep ? std::string() : step;
}

std::string step_label(const std::string& key) {
  return key.empty() ? std::string("no step id") : "step " + key;
}

// "step 0: 8 files, step 1: 8 files"
std::string step_list(const std::map<std::string, size_t>& by_step) {
  std::string out;
  for (const auto& [key, files] : by_step) {
    out += (out.empty() ? "" : ", ") + step_label(key) + ": " + std::to_string(files) +
           (files == 1 ? " file" : " files");
  }
  return out;
}

// Every Slurm job step numbers its ranks from 0: files of several steps are
// never one run.  Fails when they are mixed and no step was chosen, or the
// chosen one has no files.
Status select_step(const std::string& dir, const std::map<std::string, size_t>& by_step,
                   const std::optional<std::string>& step) {
  if (step && step->empty()) {
    return Status::error(dir + ": the step to analyze is empty; give a step id or '" + kNoStep +
                         "' (the files without a step id)");
  }
  if (step) {
    const std::string key = step_key(*step);
    if (by_step.count(key)) return {};
    return Status::error(dir + ": no traces " +
                         (key.empty() ? std::string("without a step id") : "of step " + key) +
                         " (" + step_list(by_step) + ")");
  }
  if (by_step.size() <= 1) return {};
  return Status::error(dir + ": traces of more than one Slurm job step (" + step_list(by_step) +
                       "); analyze one step at a time with --step ID ('--step " + kNoStep +
                       "': the files without a step id)");
}

}  // namespace

bool is_trace_file_name(const std::string& name) {
  return name.rfind("ringside-", 0) == 0 && name.size() > 3 &&
         name.compare(name.size() - 3, 3, ".h5") == 0;
}

TraceFileCheck check_trace_file(const std::string& path, TraceDirCache* cache) {
  TraceFileCheck c;
  c.path = path;
  std::optional<FileStamp> stamp;
  if (cache != nullptr) {
    if (auto now = file_stamp(path); now.ok()) stamp = now.value();
  }
  if (stamp) {
    auto seen = cache->files.find(path);
    if (seen != cache->files.end() && same_file(seen->second.stamp, *stamp)) {
      TraceDirCache::Entry& e = seen->second;
      e.stamp = *stamp;  // a later replacement is compared with the size seen last
      c.job = e.job;
      c.step = e.step;
      c.rank = e.rank;
      c.world_size = e.world_size;
      return c;
    }
  }
  if (std::string why = check_metadata_in_child(path); !why.empty()) {
    c.error = std::move(why);
    return c;
  }
  auto reader = TraceReader::open(path);
  if (!reader.ok()) {
    c.error = reader.message();
    c.unsupported_version = c.error.find("schema_version") != std::string::npos &&
                            c.error.find("not supported") != std::string::npos;
    return c;
  }
  const TraceMeta& meta = reader.value()->meta();
  c.job = meta.job_id;
  c.step = meta.step_id;
  c.rank = meta.rank;
  c.world_size = meta.world_size;
  if (stamp) cache->files[path] = {*stamp, meta.job_id, meta.step_id, meta.rank, meta.world_size};
  return c;
}

Result<TraceDirListing> list_trace_dir(const std::string& dir,
                                       const std::optional<std::string>& step, TraceDirCache* cache,
                                       const CheckTraceFiles& check) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return Status::error(dir + ": no such directory");
  if (!fs::is_directory(dir, ec)) {
    return Status::error(dir + ": not a directory (give the trace directory, e.g. traces/)");
  }
  TraceDirListing listing;
  std::vector<std::string> candidates;
  fs::directory_iterator it(dir, ec), end;
  if (ec) return Status::error(dir + ": cannot list directory: " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return Status::error(dir + ": cannot list directory: " + ec.message());
    const std::string name = it->path().filename().string();
    if (!is_trace_file_name(name)) continue;
    const std::string path = it->path().string();
    // Each entry is judged on its own: a dangling link or a loop is named and
    // skipped, never the end of the listing.
    std::error_code entry_ec;
    const fs::file_status st = fs::status(it->path(), entry_ec);
    if (entry_ec || !fs::exists(st)) {
      const bool link = fs::is_symlink(fs::symlink_status(it->path(), entry_ec));
      listing.bad_files.push_back(path +
                                  (link ? ": symbolic link to a missing file or a link loop"
                                        : ": cannot be examined (" + entry_ec.message() + ")") +
                                  "; skipped");
      continue;
    }
    if (!fs::is_regular_file(st)) {
      listing.bad_files.push_back(path + ": not a regular file; skipped");
      continue;
    }
    if (access(path.c_str(), R_OK) != 0) {
      listing.bad_files.push_back(path + ": " + std::strerror(errno) + "; skipped");
      continue;
    }
    candidates.push_back(path);
  }
  if (candidates.empty()) {
    if (!listing.bad_files.empty()) {
      return Status::error(dir + ": no readable trace file: " + listing.bad_files.front());
    }
    return Status::error(
        dir + ": no ringside trace files (ringside-<job>[.<step>]-r<rank>.h5) in this directory");
  }
  std::sort(candidates.begin(), candidates.end());

  std::vector<TraceFileCheck> checks;
  if (check) {
    checks = check(candidates);
    if (checks.size() != candidates.size())
      return Status::error(dir + ": the file checks do not cover the listing");
  } else {
    for (const std::string& path : candidates) checks.push_back(check_trace_file(path, cache));
  }
  std::vector<TraceFileCheck> opened;
  std::vector<std::string> version_errors;
  for (TraceFileCheck& c : checks) {
    if (c.error.empty()) {
      opened.push_back(std::move(c));
    } else {
      (c.unsupported_version ? version_errors : listing.bad_files).push_back(std::move(c.error));
    }
  }
  if (!version_errors.empty() && opened.empty()) {
    return Status::error(
        version_errors.front() +
        (version_errors.size() > 1
             ? " (and " + std::to_string(version_errors.size() - 1) + " more files)"
             : ""));
  }
  for (const auto& msg : version_errors) listing.bad_files.push_back(msg);

  std::map<std::string, size_t> by_job;
  for (const auto& o : opened) ++by_job[o.job];
  if (by_job.size() > 1) {
    std::string jobs;
    for (const auto& [job, files] : by_job) {
      jobs += (jobs.empty() ? "" : ", ") + ("'" + job + "' (" + std::to_string(files) + " files)");
    }
    return Status::error(dir + ": traces of more than one job: " + jobs +
                         "; put each job's traces in its own directory");
  }
  if (!opened.empty()) {
    std::map<std::string, size_t> by_step;  // step id ("" = none) -> files
    for (const auto& o : opened) ++by_step[o.step];
    if (Status s = select_step(dir, by_step, step); !s.ok()) return s;
    listing.step_id = step ? step_key(*step) : by_step.begin()->first;
    std::erase_if(opened, [&](const TraceFileCheck& o) { return o.step != listing.step_id; });
  }

  // The world size most files agree on (the largest among equals); a file that
  // disagrees, or a size no directory of this many files can back, is corrupt.
  std::map<int64_t, size_t> votes;
  for (const auto& o : opened) ++votes[o.world_size];
  int64_t world = 0;
  size_t best = 0;
  for (const auto& [size, n] : votes) {
    if (n >= best) {
      best = n;
      world = size;
    }
  }
  const int64_t bound = kMaxRanksPerFile * static_cast<int64_t>(candidates.size());
  std::map<int64_t, std::string> by_rank;
  for (const auto& o : opened) {
    if (o.world_size != world) {
      listing.bad_files.push_back(o.path + ": world_size " + std::to_string(o.world_size) +
                                  " disagrees with the " + std::to_string(best) +
                                  " files that say " + std::to_string(world) +
                                  " (corrupt file); skipped");
      continue;
    }
    if (world > bound) {
      listing.bad_files.push_back(
          o.path + ": world_size " + std::to_string(world) + " is implausible for a directory of " +
          std::to_string(candidates.size()) + " trace files (corrupt file); skipped");
      continue;
    }
    if (by_rank.count(o.rank)) {
      listing.bad_files.push_back(o.path + ": duplicate of rank " + std::to_string(o.rank) +
                                  " (also in " + by_rank[o.rank] + "); ignored");
      continue;
    }
    by_rank[o.rank] = o.path;
  }
  if (by_rank.empty()) {
    std::string first = listing.bad_files.empty() ? "" : ": " + listing.bad_files.front();
    return Status::error(dir + ": no readable trace file" + first);
  }
  listing.job_id = by_job.begin()->first;
  listing.world_size = world;
  for (const auto& [rank, path] : by_rank) listing.files.push_back({path, rank});
  for (int64_t r = 0; r < listing.world_size; ++r) {
    if (!by_rank.count(r)) listing.missing_ranks.push_back(r);
  }
  return listing;
}

}  // namespace ringside::trace
