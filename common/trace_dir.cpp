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

#include "ringside/trace_reader.h"
#include "ringside/trace_validate.h"

namespace ringside::trace {
namespace {

namespace fs = std::filesystem;

// A directory's traces may claim at most this many ranks per file present:
// the number inside a file never sizes the analysis alone.
constexpr int64_t kMaxRanksPerFile = 256;
constexpr auto kMetadataCheckLimit = std::chrono::seconds(60);

// HDF5 1.10 reads variable-length string attributes from the global heap,
// whose objects carry no checksum: a corrupt length there can crash or hang
// the library itself.  The first open of each file therefore happens in a
// child process; only a file whose metadata a child read cleanly is opened
// here.  One child opens the files one after the other, as this process then
// does, and reports each as it is done: a fork per file costs more than the
// open itself (tens of ms on a busy host, for thousands of files).

// What a child reports of each file it opened, one byte each, in order.
constexpr char kChildOpened = 'o';

// How a child that opened files from `first` on ended.
struct ChildRun {
  size_t done = 0;       // files it reported, from `first` on
  std::string why;       // set when it ended abnormally at file first + done: why that file
  bool crashed = false;  // `why` is a crash (not a hang)
};

// Waits for `child` to end; its wait status.
int reap(pid_t child) {
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Opens paths[first..last) in one child, each in turn.
ChildRun open_in_child(const std::vector<std::string>& paths, size_t first, size_t last) {
  ChildRun run;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    run.done = last - first;  // cannot isolate: fall back to opening in process
    return run;
  }
  const pid_t child = fork();
  if (child < 0) {
    close(fds[0]);
    close(fds[1]);
    run.done = last - first;
    return run;
  }
  if (child == 0) {
    // Silent: the parent names the file and the reason.  A file the library came back
    // from is reported, readable or not (the parent then opens it for the reason);
    // anything else is a crash, whatever a sanitizer or runtime turned it into.
    close(fds[0]);
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
    }
    for (size_t i = first; i < last; ++i) {
      (void)TraceReader::open(paths[i]);
      if (write(fds[1], &kChildOpened, 1) != 1) _exit(1);  // no one to report to
    }
    _exit(0);
  }
  close(fds[1]);
  auto deadline = std::chrono::steady_clock::now() + kMetadataCheckLimit;
  bool ended = false;
  while (first + run.done < last) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char buf[4096];
    const ssize_t got = read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      ended = true;  // the child exited (or died)
      break;
    }
    run.done += static_cast<size_t>(got);
    deadline = std::chrono::steady_clock::now() + kMetadataCheckLimit;
  }
  close(fds[0]);
  if (first + run.done >= last) {
    reap(child);
    return run;
  }
  const std::string& at = paths[first + run.done];
  if (!ended) {
    kill(child, SIGKILL);
    reap(child);
    run.why = at + ": reading its metadata did not finish in " +
              std::to_string(kMetadataCheckLimit.count()) +
              " s (corrupt file: HDF5 loops on it); skipped";
    return run;
  }
  const int status = reap(child);
  const std::string how = WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                              : "exit " + std::to_string(WEXITSTATUS(status));
  run.why = at + ": reading its metadata crashed the HDF5 library (" + how +
            "): its unchecksummed attribute heap is corrupt; skipped";
  run.crashed = true;
  return run;
}

// Why each of `paths` must not be opened in this process; empty where it may.  A file on
// which a child crashed after others is opened again by a child of its own: what an
// earlier file did to the library is not held against it (then each of those is
// checked alone instead).
std::vector<std::string> check_metadata_in_children(const std::vector<std::string>& paths) {
  std::vector<std::string> why(paths.size());
  size_t next = 0;
  while (next < paths.size()) {
    const size_t first = next;
    ChildRun run = open_in_child(paths, first, paths.size());
    next = first + run.done;
    if (next >= paths.size()) break;
    if (!run.crashed || run.done == 0) {
      why[next++] = std::move(run.why);
      continue;
    }
    ChildRun alone = open_in_child(paths, next, next + 1);
    if (alone.done == 0) {
      why[next++] = std::move(alone.why);
      continue;
    }
    for (size_t i = first; i < next; ++i) {
      ChildRun one = open_in_child(paths, i, i + 1);
      if (one.done == 0) why[i] = std::move(one.why);
    }
    ++next;
  }
  return why;
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

std::vector<TraceFileCheck> check_trace_files(const std::vector<std::string>& paths,
                                              TraceDirCache* cache) {
  std::vector<TraceFileCheck> checks(paths.size());
  std::vector<std::optional<FileStamp>> stamps(paths.size());
  std::vector<size_t> unseen;  // indices of the files to open
  for (size_t i = 0; i < paths.size(); ++i) {
    TraceFileCheck& c = checks[i];
    c.path = paths[i];
    if (cache != nullptr) {
      if (auto now = file_stamp(c.path); now.ok()) stamps[i] = now.value();
    }
    if (stamps[i]) {
      if (auto bad = cache->failed.find(c.path);
          bad != cache->failed.end() && bad->second.stamp == *stamps[i]) {
        c.error = bad->second.error;
        c.unsupported_version = bad->second.unsupported_version;
        continue;
      }
      auto seen = cache->files.find(c.path);
      if (seen != cache->files.end() && same_file(seen->second.stamp, *stamps[i])) {
        TraceDirCache::Entry& e = seen->second;
        e.stamp = *stamps[i];  // a later replacement is compared with the size seen last
        c.job = e.job;
        c.step = e.step;
        c.rank = e.rank;
        c.world_size = e.world_size;
        continue;
      }
    }
    unseen.push_back(i);
  }
  std::vector<std::string> unseen_paths;
  for (size_t i : unseen) unseen_paths.push_back(paths[i]);
  std::vector<std::string> why = check_metadata_in_children(unseen_paths);
  if (cache != nullptr) cache->files_checked += unseen.size();
  // A file that could not be listed is remembered while it stays as it was checked, once
  // it had settled (TraceDirCache::failed).
  auto failed = [&](size_t i) {
    const TraceFileCheck& c = checks[i];
    if (!stamps[i]) return;
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    if (now - stamps[i]->mtime_ns >= TraceDirCache::kSettledNs)
      cache->failed[c.path] = {*stamps[i], c.error, c.unsupported_version};
  };
  for (size_t k = 0; k < unseen.size(); ++k) {
    TraceFileCheck& c = checks[unseen[k]];
    if (stamps[unseen[k]]) cache->failed.erase(c.path);
    if (!why[k].empty()) {
      c.error = std::move(why[k]);
      failed(unseen[k]);
      continue;
    }
    auto reader = TraceReader::open(c.path);
    if (!reader.ok()) {
      c.error = reader.message();
      c.unsupported_version = c.error.find("schema_version") != std::string::npos &&
                              c.error.find("not supported") != std::string::npos;
      failed(unseen[k]);
      continue;
    }
    const TraceMeta& meta = reader.value()->meta();
    c.job = meta.job_id;
    c.step = meta.step_id;
    c.rank = meta.rank;
    c.world_size = meta.world_size;
    if (const auto& stamp = stamps[unseen[k]])
      cache->files[c.path] = {*stamp, meta.job_id, meta.step_id, meta.rank, meta.world_size};
  }
  return checks;
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
    checks = check_trace_files(candidates, cache);
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
