#include "core/watchdog.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ringside::bench {

namespace {

using Clock = std::chrono::steady_clock;

// A timed wait polls without sleeping, yielding the CPU between polls, as
// nccl-tests does: a sleeping waiter lets its core idle, and waking it (and the
// threads that complete the work, on the sim) costs more than the measurement
// can hide.  Other waits sleep from 20 us up to 1 ms, so that many ranks
// sharing a few cores leave them to the work they wait for.
constexpr double kMinSleepSeconds = 20e-6;
constexpr double kMaxSleepSeconds = 1e-3;
constexpr size_t kMaxNcclText = 400;
// After an asynchronous error the communicator is aborted only after this
// grace: the abort closes this rank's connections, and peers that lose them
// before noticing the original failure themselves would blame this rank.
constexpr double kAbortGraceSeconds = 2;

void pause(double waited, bool timed) {
  if (timed) {
    std::this_thread::yield();
    return;
  }
  const double s = std::clamp(waited / 256, kMinSleepSeconds, kMaxSleepSeconds);
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

const char* result_name(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return "ncclSuccess";
    case ncclUnhandledCudaError:
      return "ncclUnhandledCudaError";
    case ncclSystemError:
      return "ncclSystemError";
    case ncclInternalError:
      return "ncclInternalError";
    case ncclInvalidArgument:
      return "ncclInvalidArgument";
    case ncclInvalidUsage:
      return "ncclInvalidUsage";
    case ncclRemoteError:
      return "ncclRemoteError";
    case ncclInProgress:
      return "ncclInProgress";
    default:
      return "ncclResult";
  }
}

// NCCL's text goes into one line of ours: control characters out, bounded.
std::string printable(const char* text) {
  std::string out;
  if (text == nullptr) return out;
  size_t i = 0;
  for (; text[i] != '\0' && i < kMaxNcclText; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    out.push_back(c < 0x20 || c == 0x7f ? ' ' : static_cast<char>(c));
  }
  if (text[i] != '\0') out += "...";
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", s);
  return buf;
}

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
}

// A name that ends at `end` of `text`: at the end, before a non-name
// character, or before a '.' that ends a sentence.
bool ends_name(const std::string& text, size_t end) {
  return end == text.size() || !is_word_char(text[end]) ||
         (text[end] == '.' && (end + 1 == text.size() || text[end + 1] == ' '));
}

// `word` occurs in `text` with no name character right before or after it.
bool contains_word(const std::string& text, const std::string& word) {
  if (word.empty()) return false;
  for (size_t pos = text.find(word); pos != std::string::npos; pos = text.find(word, pos + 1)) {
    if ((pos == 0 || !is_word_char(text[pos - 1])) && ends_name(text, pos + word.size()))
      return true;
  }
  return false;
}

}  // namespace

void Watchdog::add(ncclComm_t comm, std::string name, std::vector<int> members) {
  Entry e;
  e.comm = comm;
  e.name = std::move(name);
  e.members = std::move(members);
  if (ncclCommUserRank(comm, &e.my_rank) != ncclSuccess) e.my_rank = -1;
  std::lock_guard<std::mutex> lock(mu_);
  comms_.push_back(std::move(e));
}

void Watchdog::set_rank_infos(std::vector<RankInfo> infos) {
  std::lock_guard<std::mutex> lock(mu_);
  infos_ = std::move(infos);
}

Watchdog::Entry Watchdog::find(ncclComm_t comm) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Entry& e : comms_) {
    if (e.comm == comm) return e;
  }
  return Entry{comm, "a communicator", {}, -1, false};
}

void Watchdog::release(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it =
      std::find_if(comms_.begin(), comms_.end(), [&](const Entry& e) { return e.comm == comm; });
  if (it == comms_.end()) return;
  if (!it->aborted) {
    ncclResult_t async = ncclSuccess;
    const bool broken = ncclCommGetAsyncError(comm, &async) != ncclSuccess ||
                        (async != ncclSuccess && async != ncclInProgress);
    if (failed() || broken) {
      ncclCommAbort(comm);
    } else {
      ncclCommDestroy(comm);
    }
  }
  comms_.erase(it);
}

void Watchdog::release_all() {
  std::vector<ncclComm_t> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Entry& e : comms_) all.push_back(e.comm);
  }
  // Newest first: communicators split from the world before the world.
  for (auto it = all.rbegin(); it != all.rend(); ++it) release(*it);
}

std::string Watchdog::describe_rank(int world_rank) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out = "rank " + std::to_string(world_rank);
  if (world_rank < 0 || static_cast<size_t>(world_rank) >= infos_.size()) return out;
  const RankInfo& r = infos_[static_cast<size_t>(world_rank)];
  const std::string node(r.node, strnlen(r.node, sizeof r.node));
  const std::string host(r.hostname, strnlen(r.hostname, sizeof r.hostname));
  out += " on " + node + " (";
  if (host != node) out += "host " + host + ", ";
  out += "pid " + std::to_string(r.pid) + ")";
  return out;
}

std::vector<int> peers_named_in(const std::string& text, const std::vector<int>& members,
                                int my_rank, const std::vector<RankInfo>& infos) {
  const int n = static_cast<int>(members.size());
  if (my_rank < 0 || my_rank >= n) return {};
  if (n == 2) return {members[static_cast<size_t>(1 - my_rank)]};
  std::vector<int> named;
  for (size_t pos = text.find("rank "); pos != std::string::npos;
       pos = text.find("rank ", pos + 1)) {
    if (pos > 0 && is_word_char(text[pos - 1])) continue;
    size_t p = pos + 5;
    long value = 0;
    size_t digits = 0;
    while (p < text.size() && std::isdigit(static_cast<unsigned char>(text[p])) && digits < 9) {
      value = value * 10 + (text[p] - '0');
      ++p;
      ++digits;
    }
    if (digits == 0 || !ends_name(text, p)) continue;
    if (value >= n || value == my_rank) continue;
    const int world = members[static_cast<size_t>(value)];
    if (std::find(named.begin(), named.end(), world) == named.end()) named.push_back(world);
  }
  if (named.size() == 1) return named;
  if (!named.empty()) return {};

  const int me = members[static_cast<size_t>(my_rank)];
  if (me < 0 || static_cast<size_t>(me) >= infos.size()) return {};
  const std::string my_host = infos[static_cast<size_t>(me)].hostname;
  std::string host;
  std::vector<int> on_host;
  for (int m : members) {
    if (m == me || m < 0 || static_cast<size_t>(m) >= infos.size()) continue;
    const std::string h = infos[static_cast<size_t>(m)].hostname;
    if (h == my_host || !contains_word(text, h)) continue;
    if (!host.empty() && h != host) return {};  // several hosts named
    host = h;
    on_host.push_back(m);
  }
  return on_host;
}

void Watchdog::abort_comms(std::span<const CommStream> cs) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const CommStream& c : cs) {
    auto it = std::find_if(comms_.begin(), comms_.end(),
                           [&](const Entry& e) { return e.comm == c.comm; });
    if (it != comms_.end() && it->aborted) continue;
    ncclCommAbort(c.comm);
    if (it != comms_.end()) {
      it->aborted = true;
    } else {
      comms_.push_back(Entry{c.comm, "", {}, -1, true});
    }
  }
}

void Watchdog::stop(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_reason_.empty()) stop_reason_ = reason;
  }
  failed_.store(true, std::memory_order_release);
}

void Watchdog::fail(std::span<const CommStream> cs, size_t index, FailureKind kind,
                    ncclResult_t code, std::string_view what, std::string_view context,
                    double waited) {
  const Entry e = find(cs[index].comm);
  const std::string nccl_text =
      kind == FailureKind::kAsyncError ? printable(ncclGetLastError(cs[index].comm)) : "";
  std::vector<int> peers;
  if (kind == FailureKind::kAsyncError) {
    std::vector<RankInfo> infos;
    {
      std::lock_guard<std::mutex> lock(mu_);
      infos = infos_;
    }
    peers = peers_named_in(nccl_text, e.members, e.my_rank, infos);
  }
  if (kind == FailureKind::kTimeout && e.members.size() == 2 && e.my_rank >= 0 && e.my_rank < 2)
    peers = {e.members[static_cast<size_t>(1 - e.my_rank)]};
  const int me = e.my_rank >= 0 && static_cast<size_t>(e.my_rank) < e.members.size()
                     ? e.members[static_cast<size_t>(e.my_rank)]
                     : -1;
  // Communicators other than the world number their ranks differently.
  bool world = true;
  for (size_t i = 0; i < e.members.size(); ++i)
    world = world && e.members[i] == static_cast<int>(i);
  auto peer_text = [&](int p) {
    std::string s = describe_rank(p);
    if (!world) {
      const auto it = std::find(e.members.begin(), e.members.end(), p);
      if (it != e.members.end()) {
        const std::string note = "rank " + std::to_string(it - e.members.begin()) + " of it";
        s = s.back() == ')' ? s.substr(0, s.size() - 1) + "; " + note + ")" : s + " (" + note + ")";
      }
    }
    return s;
  };
  std::string peers_text;
  for (size_t i = 0; i < peers.size(); ++i) peers_text += (i ? ", " : "") + peer_text(peers[i]);

  std::string work(what);
  if (!context.empty()) work += " (" + std::string(context) + ")";
  work += " on " + e.name;
  std::string msg = (me >= 0 ? describe_rank(me) : error_context()) + ": ";
  switch (kind) {
    case FailureKind::kAsyncError: {
      std::string nccl = std::string("NCCL: ") + result_name(code);
      if (!nccl_text.empty()) nccl += ", \"" + nccl_text + "\"";
      if (code == ncclRemoteError && !peers.empty()) {
        msg += "lost peer " + peers_text + " during " + work +
               ": its process died or it aborted the communicator (" + nccl + ")";
      } else if (!peers.empty()) {
        msg += "NCCL reported an error naming peer " + peers_text + " during " + work + " (" +
               nccl + ")";
      } else {
        msg += "NCCL reported an error during " + work + " and does not say which peer failed (" +
               nccl + ")";
      }
      break;
    }
    case FailureKind::kTimeout:
      if (!peers.empty()) {
        msg += "peer " + peers_text + " did not respond: " + work + " did not finish within " +
               format_seconds(timeout_) + " s (-T)";
      } else {
        msg += work + " did not finish within " + format_seconds(timeout_) +
               " s (-T) and NCCL reports no error: a rank of the communicator stopped "
               "responding or is slower than -T allows (other ranks' messages may name it)";
      }
      break;
    case FailureKind::kElsewhere: {
      std::lock_guard<std::mutex> lock(mu_);
      msg += "gave up " + work + ": " + stop_reason_;
      break;
    }
  }
  msg += "; aborted the communicator after waiting " + format_seconds(waited) + " s";
  if (kind != FailureKind::kElsewhere) stop(msg);
  if (kind == FailureKind::kAsyncError)
    std::this_thread::sleep_for(std::chrono::duration<double>(kAbortGraceSeconds));
  abort_comms(cs);
  throw CommFailure(msg, kind, code, std::move(peers), waited);
}

void Watchdog::wait(std::span<const CommStream> cs, std::string_view what, std::string_view context,
                    bool timed) {
  if (cs.empty()) return;
  if (cs.size() > 64) throw RuntimeError("Watchdog::wait: more than 64 streams");
  const Clock::time_point start = Clock::now();
  uint64_t pending = cs.size() == 64 ? ~0ull : (1ull << cs.size()) - 1;
  for (;;) {
    if (failed()) fail(cs, 0, FailureKind::kElsewhere, ncclSuccess, what, context, 0);
    for (size_t i = 0; i < cs.size(); ++i) {
      if ((pending & (1ull << i)) == 0) continue;
      const cudaError_t err = cudaStreamQuery(cs[i].stream);
      if (err == cudaSuccess) {
        pending &= ~(1ull << i);
        continue;
      }
      if (err != cudaErrorNotReady) {
        // The device is unusable: its communicators are not destroyed cleanly.
        stop(std::string("cudaStreamQuery failed: ") + cudaGetErrorName(err));
        abort_comms(cs);
        throw_cuda("cudaStreamQuery", err, __FILE__, __LINE__);
      }
      ncclResult_t async = ncclSuccess;
      const ncclResult_t r = ncclCommGetAsyncError(cs[i].comm, &async);
      if (r != ncclSuccess) throw_nccl("ncclCommGetAsyncError", r, __FILE__, __LINE__);
      if (async != ncclSuccess && async != ncclInProgress) {
        fail(cs, i, FailureKind::kAsyncError, async, what, context, seconds_since(start));
      }
    }
    if (pending == 0) return;
    const double waited = seconds_since(start);
    if (timeout_ > 0 && waited > timeout_) {
      size_t first = 0;
      while ((pending & (1ull << first)) == 0) ++first;
      fail(cs, first, FailureKind::kTimeout, ncclSuccess, what, context, waited);
    }
    pause(waited, timed);
  }
}

void Watchdog::check(ncclResult_t result, std::span<const CommStream> cs, std::string_view what,
                     const char* call, const char* file, int line) {
  if (result == ncclSuccess) return;
  for (size_t i = 0; i < cs.size(); ++i) {
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(cs[i].comm, &async) == ncclSuccess && async != ncclSuccess &&
        async != ncclInProgress) {
      fail(cs, i, FailureKind::kAsyncError, async, what, {}, 0);
    }
  }
  throw_nccl(call, result, file, line);
}

Deadline::Deadline(double seconds, std::string message, int exit_code) {
  if (seconds <= 0) return;
  thread_ = std::thread([this, seconds, message = std::move(message), exit_code] {
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; }))
      return;
    const std::string line = message + "\n";
    std::fflush(stdout);
    [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
    std::_Exit(exit_code);
  });
}

Deadline::~Deadline() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace ringside::bench
