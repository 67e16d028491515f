#include "trace_test_util.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace ringside::trace::testing {

std::string make_temp_dir(const std::string& tag) {
  std::string templ = "/tmp/ringside-" + tag + "-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return templ;
}

TraceMeta sample_meta(const std::string& job, int64_t rank, int64_t world) {
  TraceMeta m;
  m.producer = "test";
  m.job_id = job;
  m.rank = rank;
  m.local_rank = rank % 4;
  m.world_size = world;
  m.rank_source = "torchrun";
  m.node = "node" + std::to_string(1 + rank / 4);
  m.hostname = "host-" + m.node;
  m.pid = 4242 + rank;
  m.gpu_device = rank % 4;
  m.gpu_pci_bus_id = "00000000:1" + std::to_string(rank % 4) + ":00.0";
  m.gpu_name = "ringside-sim H100";
  m.gpu_uuid = "GPU-test-" + std::to_string(rank);
  m.nccl_version = 22809;
  m.cuda_driver_version = 13000;
  m.clock_realtime_ns = 1'700'000'000'000'000'000;
  m.clock_monotonic_ns = 5'000'000'000;
  m.config = R"({"RINGSIDE_OUTPUT":"traces"})";
  return m;
}

OpRecord make_op(uint64_t i) {
  OpRecord op{};
  // A step of 20 collectives every ~50 ms, ops a few hundred us apart.
  const int64_t step = static_cast<int64_t>(i / 20);
  const int64_t base = step * 50'000'000 + static_cast<int64_t>(i % 20) * 400'000 +
                       static_cast<int64_t>((i * 7919) % 9973);
  op.t_enter_ns = base;
  op.t_exit_ns = base + 3'000 + static_cast<int64_t>(i % 97);
  op.t_dev_start_ns = base + 20'000 + static_cast<int64_t>((i * 31) % 5000);
  op.t_dev_end_ns = op.t_dev_start_ns + 250'000 + static_cast<int64_t>((i * 131) % 40000);
  op.comm_id = 0x9e3779b97f4a7c15ULL + (i % 3 == 0 ? 1 : 0);
  op.seq = i;
  op.count = (25ULL << 20) / 4;
  op.bytes = op.count * 4;
  op.stream = 0x7f0000001000ULL;
  op.group_id = (i % 20 >= 18) ? static_cast<uint32_t>(step + 1) : 0;
  op.peer = -1;
  op.peer_seq = 0;
  op.op = static_cast<uint8_t>(OpKind::kAllReduce);
  op.dtype = 7;
  op.redop = 0;
  op.flags = kFlagDeviceTimed;
  op.status = static_cast<uint8_t>(OpStatus::kComplete);
  return op;
}

SampleRecord make_sample(uint64_t i) {
  SampleRecord s{};
  s.t_ns = static_cast<int64_t>(i) * 500'000'000;
  s.device = 1;
  s.valid = kValidClocks | kValidTemperature | kValidPower;
  s.sm_clock_mhz = 1980 - static_cast<uint32_t>(i % 3);
  s.mem_clock_mhz = 2619;
  s.clock_event_reasons = i % 2 ? 0x20 : 0;
  s.temperature_c = 60 + static_cast<uint32_t>(i % 10);
  s.power_mw = 350000;
  s.util_gpu_pct = 97;
  s.util_mem_pct = 40;
  s.mem_used_bytes = 40ULL << 30;
  s.ecc_corrected = i;
  s.ecc_uncorrected = 0;
  s.remapped_rows = 1;
  s.pcie_replays = 2;
  return s;
}

EventRecord make_event(uint64_t i) {
  EventRecord e{};
  e.t_ns = static_cast<int64_t>(i) * 1000;
  e.comm_id = 77;
  e.seq = i;
  e.value = 79;
  e.device = 0;
  e.kind = static_cast<uint32_t>(EventKind::kXid);
  std::snprintf(e.text, sizeof e.text, "event %llu", static_cast<unsigned long long>(i));
  return e;
}

CommRecord make_comm(uint64_t i) {
  CommRecord c{};
  c.t_ns = static_cast<int64_t>(i) * 10;
  c.comm_id = 1000 + i;
  c.parent_id = i == 0 ? 0 : 1000;
  c.color = i == 0 ? -1 : static_cast<int32_t>(i);
  c.key = i == 0 ? -1 : 0;
  c.ordinal = static_cast<uint32_t>(i);
  c.nranks = 8;
  c.rank = 3;
  c.device = 3;
  c.origin = static_cast<uint8_t>(i == 0 ? CommOrigin::kInitRank : CommOrigin::kSplit);
  return c;
}

}  // namespace ringside::trace::testing
