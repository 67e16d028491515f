// Waiting on device work without hanging, as nccl-tests' -T and PyTorch's NCCL
// watchdog do.  Every wait of nccl_bench (benchmarks, their out-of-band helpers,
// validate) is Watchdog::wait: it polls the streams with cudaStreamQuery and
// their communicators with ncclCommGetAsyncError, under a time limit.  On an
// asynchronous error (a dead peer is ncclRemoteError) or a timeout it aborts the
// communicators of the wait, so that their ops end and the peers blocked on this
// rank notice, and throws CommFailure naming the failure, the work, the
// communicator and, where it can be known, the peer.
//
// NCCL calls that block the host and cannot be polled (communicator init and
// split, the MPI broadcast of the id) run under a Deadline instead.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/errors.h"
#include "core/world_types.h"

namespace ringside::bench {

// Default of -T/--timeout, seconds (PyTorch's default NCCL timeout).
inline constexpr double kDefaultTimeoutSeconds = 600;

class Watchdog {
 public:
  // `timeout_seconds` bounds each wait; 0 = no time limit.
  explicit Watchdog(double timeout_seconds) : timeout_(timeout_seconds) {}
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  double timeout_seconds() const { return timeout_; }

  // A communicator of this process.  `name` is used in messages ("the world
  // communicator"); `members[i]` is the world rank of its rank i.
  void add(ncclComm_t comm, std::string name, std::vector<int> members);
  // Ends a communicator: ncclCommDestroy when healthy; ncclCommAbort after a
  // failure or when NCCL reports an asynchronous error on it (destroy would
  // wait for ops that never end); nothing when a failed wait already aborted it.
  void release(ncclComm_t comm);
  // Releases every communicator still registered.  No other thread may be
  // using them.
  void release_all();
  // Every rank's description (in world rank order), to name peers.
  void set_rank_infos(std::vector<RankInfo> infos);

  // Returns when the streams of `cs` are idle.  `what` names the work
  // ("all_reduce of 1048576 bytes ..."), `context` optionally what it was for;
  // both are only read on failure.  A `timed` wait ends a measurement: it
  // never sleeps (it yields between polls, as nccl-tests does).  Throws CommFailure after aborting
  // the communicators of `cs` on an asynchronous error, a timeout, or a failure of another thread
  // (stop()).
  void wait(std::span<const CommStream> cs, std::string_view what, std::string_view context = {},
            bool timed = false);

  // The result of an NCCL call that issues work on the communicators of `cs`
  // (collectives, group end, split): an error while one of them reports an
  // asynchronous error is that failure (as in wait()); other errors are thrown
  // as RINGSIDE_NCCL_CHECK throws them.
  void check(ncclResult_t result, std::span<const CommStream> cs, std::string_view what,
             const char* call, const char* file, int line);

  // This process gives up (an error in one of its threads): every later or
  // ongoing wait aborts its communicators and throws (FailureKind::kElsewhere).
  void stop(const std::string& reason);
  bool failed() const { return failed_.load(std::memory_order_acquire); }

  // "rank 3 on node2 (host h2, pid 4242)", or "rank 3" before the ranks are known.
  std::string describe_rank(int world_rank) const;

 private:
  struct Entry {
    ncclComm_t comm = nullptr;
    std::string name;
    std::vector<int> members;
    int my_rank = -1;  // this process's rank in the communicator
    bool aborted = false;
  };

  [[noreturn]] void fail(std::span<const CommStream> cs, size_t index, FailureKind kind,
                         ncclResult_t code, std::string_view what, std::string_view context,
                         double waited);
  void abort_comms(std::span<const CommStream> cs);
  Entry find(ncclComm_t comm) const;

  const double timeout_;
  std::atomic<bool> failed_{false};
  mutable std::mutex mu_;
  std::vector<Entry> comms_;
  std::vector<RankInfo> infos_;
  std::string stop_reason_;
};

// The peer NCCL's error `text` is about, as world ranks, for a communicator
// whose rank i is world rank `members[i]` and in which this process is rank
// `my_rank`: the other member of a two-rank communicator; else the one other
// member the text calls "rank N" (NCCL writes the reporting rank itself as
// "rank N/size"); else the members on the one other host the text names
// (`infos`: every rank's description).  Empty when it cannot be told.
std::vector<int> peers_named_in(const std::string& text, const std::vector<int>& members,
                                int my_rank, const std::vector<RankInfo>& infos);

// Bounds a blocking call that cannot be polled: when the Deadline is still
// alive after `seconds` (0: never), `message` is printed on stderr and the
// process ends with `exit_code`.  The stuck thread cannot be unwound and there
// is no communicator handle to abort yet, so nothing is cleaned up; the peers
// see this process's connections close.
class Deadline {
 public:
  Deadline(double seconds, std::string message, int exit_code);
  ~Deadline();
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace ringside::bench

// RINGSIDE_NCCL_CHECK for calls that issue work on watched communicators.
#define RINGSIDE_NCCL_WATCH(watchdog, cs, what, call) \
  (watchdog).check((call), (cs), (what), #call, __FILE__, __LINE__)
