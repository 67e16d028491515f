// Events: a record is a marker task on a stream that stamps the time it ran.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "stream.h"

namespace ringside::sim {

struct EventRecord {
  std::shared_ptr<StreamCore> stream;
  uint64_t seq = 0;
  std::atomic<int64_t> ns{-1};  // steady clock, set when the marker runs
};

}  // namespace ringside::sim

// The handle behind CUevent / cudaEvent_t.
struct CUevent_st {
  static constexpr uint32_t kMagic = 0x45564e54;  // "EVNT"
  uint32_t magic = kMagic;
  unsigned flags = 0;  // CU_EVENT_*
  std::mutex mu;
  std::shared_ptr<ringside::sim::EventRecord> record;  // latest record, null if never recorded
};
