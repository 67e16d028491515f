// Communicators the probe has seen, looked up by ncclComm_t on the hot path
// without locks: a fixed open-addressing table whose keys are only ever
// claimed (never removed).  A destroyed handle keeps its slot; if NCCL hands
// the same address out again, the new state replaces the old one.  States are
// never freed, so a pending op may keep pointing at its communicator.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "ringside/trace_schema.h"

namespace ringside::probe {

struct CommState {
  uint64_t id = 0;
  uint64_t parent_id = 0;
  int32_t color = -1;
  int32_t key = -1;
  uint32_t ordinal = 0;
  trace::CommOrigin origin = trace::CommOrigin::kInitRank;
  int64_t t_created_ns = 0;
  std::atomic<int32_t> nranks{-1};
  std::atomic<int32_t> rank{-1};
  std::atomic<int32_t> device{-1};
  std::atomic<bool> described{false};  // its CommRecord has been queued

  std::atomic<uint64_t> coll_seq{0};       // next collective sequence number
  std::atomic<uint32_t> child_ordinal{0};  // splits and shrinks made from this comm
  // send at [2*peer], recv at [2*peer+1]; allocated once nranks is known
  std::atomic<std::atomic<uint32_t>*> p2p_seq{nullptr};

  std::atomic<bool> aborted{false};  // ncclCommAbort (or revoke) entered; set before `ended`
  std::atomic<bool> ended{false};    // destroyed or aborted
  std::atomic<int64_t> ended_ns{0};
  std::atomic<int> last_async_error{0};

  // Per-(peer, direction) sequence; 0 when the peer is out of range.
  uint32_t next_p2p_seq(int peer, bool recv);
};

class CommRegistry {
 public:
  static constexpr uint64_t kCapacity = 1 << 14;
  CommRegistry();

  CommState* find(const void* handle) const;
  // Returns false when the table is full (the comm is then untracked).
  bool insert(const void* handle, CommState* state);

 private:
  struct Entry {
    std::atomic<const void*> key{nullptr};
    std::atomic<CommState*> value{nullptr};
  };
  std::unique_ptr<Entry[]> entries_;
};

}  // namespace ringside::probe
