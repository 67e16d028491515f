// NCCL's profiler plugin interface (NCCL >= 2.23; v5 since 2.28, v4 in 2.25-2.27),
// declared from its public documentation: the function tables a plugin exports as
// `ncclProfiler_v5` / `ncclProfiler_v4`, the event descriptors and the state values.
// Only the members ringside uses are named; the layout (checked below against the
// offsets of NCCL's own headers on LP64) is the ABI.  The probe implements the
// plugin side, the sim the NCCL side.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace ringside::nccl_profiler {

using NcclResult = int;  // ncclResult_t: 0 = ncclSuccess
using DebugLogger = void (*)(int level, unsigned long flags, const char* file, int line,
                             const char* fmt, ...);

// Event type bits (the activation mask and EventDescr::type).
enum EventType : uint64_t {
  kGroup = 1 << 0,
  kColl = 1 << 1,
  kP2p = 1 << 2,
  kProxyOp = 1 << 3,
  kProxyStep = 1 << 4,
  kProxyCtrl = 1 << 5,
  kKernelCh = 1 << 6,
  kNetPlugin = 1 << 7,
  kGroupApi = 1 << 8,
  kCollApi = 1 << 9,
  kP2pApi = 1 << 10,
  kKernelLaunch = 1 << 11,
};

// ncclProfilerEventState_t values NCCL 2.28 records for the events ringside uses.
enum State : int {
  kStepSendGpuWait = 8,     // the proxy waits for the GPU to fill the staging buffer
  kStepSendWait = 9,        // isend posted: the network is transmitting
  kStepRecvWait = 10,       // irecv posted: waiting for data from the network
  kStepRecvFlushWait = 11,  // data arrived: flushing it to the GPU
  kStepRecvGpuWait = 12,    // waiting for the GPU to consume it
  kOpInProgress = 19,       // a proxy op moved to progress
  kStepSendPeerWait = 20,   // waiting for the receiver's clear-to-send credit
  kKernelChStop = 22,
};

struct ProxyOpDescr {
  pid_t pid;  // process that enqueued the op (PXN: another process)
  uint8_t channel_id;
  int peer;  // comm rank of the remote end
  int n_steps;
  int chunk_size;
  int is_send;
};

struct EventDescrV5 {
  uint64_t type;
  void* parent;
  int rank;
  union {
    struct {
      uint64_t seq_number;
      const char* func;
      const void* send_buff;
      void* recv_buff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t n_channels;
      uint8_t n_warps;
      const char* algo;
      const char* proto;
      void* parent_group;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t n_channels;
      void* parent_group;
    } p2p;
    ProxyOpDescr proxy_op;
    struct {
      int step;
    } proxy_step;
    struct {
      uint8_t channel_id;
      uint64_t p_timer;
    } kernel_ch;
  };
};

// v4: `type` is one byte; everything after it is laid out as in v5.
struct EventDescrV4 {
  uint8_t type;
  void* parent;
  int rank;
  union {
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t n_channels;
    } p2p;
    ProxyOpDescr proxy_op;
    struct {
      int step;
    } proxy_step;
    struct {
      uint8_t channel_id;
      uint64_t p_timer;
    } kernel_ch;
    uint64_t layout_[10];  // the largest member (coll: 80 bytes, 8-aligned), never read
  };
};

union StateArgs {
  struct {
    size_t trans_size;  // bytes of the current step (at SendWait, RecvFlushWait, RecvGpuWait)
  } proxy_step;
  struct {
    int appended_proxy_ops;
  } proxy_ctrl;
  struct {
    void* data;
  } net_plugin;
  struct {
    uint64_t p_timer;
  } kernel_ch;
};

struct ProfilerV5 {
  const char* name;
  NcclResult (*init)(void** context, uint64_t comm_id, int* activation_mask, const char* comm_name,
                     int n_nodes, int nranks, int rank, DebugLogger log);
  NcclResult (*start_event)(void* context, void** handle, EventDescrV5* descr);
  NcclResult (*stop_event)(void* handle);
  NcclResult (*record_event_state)(void* handle, int state, StateArgs* args);
  NcclResult (*finalize)(void* context);
};

struct ProfilerV4 {
  const char* name;
  NcclResult (*init)(void** context, int* activation_mask, const char* comm_name,
                     uint64_t comm_hash, int n_nodes, int nranks, int rank, DebugLogger log);
  NcclResult (*start_event)(void* context, void** handle, EventDescrV4* descr);
  NcclResult (*stop_event)(void* handle);
  NcclResult (*record_event_state)(void* handle, int state, StateArgs* args);
  NcclResult (*finalize)(void* context);
};

// The layout of NCCL 2.28's headers (x86_64 and aarch64, LP64).
static_assert(sizeof(EventDescrV5) == 112);
static_assert(sizeof(EventDescrV4) == 104);
static_assert(offsetof(EventDescrV5, proxy_op) == 24);
static_assert(offsetof(EventDescrV5, proxy_op.channel_id) == 28);
static_assert(offsetof(EventDescrV5, proxy_op.peer) == 32);
static_assert(offsetof(EventDescrV5, proxy_op.is_send) == 44);
static_assert(offsetof(EventDescrV5, coll.parent_group) == 104);
static_assert(offsetof(EventDescrV5, kernel_ch.p_timer) == 32);
static_assert(offsetof(EventDescrV5, p2p.peer) == 56);
static_assert(offsetof(EventDescrV4, proxy_op.peer) == 32);
static_assert(offsetof(EventDescrV4, p2p.peer) == 56);
static_assert(offsetof(EventDescrV4, kernel_ch.p_timer) == 32);
static_assert(sizeof(StateArgs) == 8);
static_assert(sizeof(ProfilerV5) == 48 && sizeof(ProfilerV4) == 48);

}  // namespace ringside::nccl_profiler
