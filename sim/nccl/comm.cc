#include "comm.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "cuda_bridge.h"
#include "last_error.h"
#include "profiler.h"

namespace ringside::sim::nccl {
namespace {

std::mutex g_registry_mu;
int g_next_comm_index = 0;
int g_first_rank = -1;

}  // namespace

std::string Comm::label() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "comm %016llx rank %d/%d", static_cast<unsigned long long>(nonce),
                rank, nranks);
  return buf;
}

ncclResult_t Comm::wait_ready() {
  std::unique_lock<std::mutex> lock(init_mu);
  init_cv.wait(lock, [&] { return init_state.load() != ncclInProgress; });
  return static_cast<ncclResult_t>(init_state.load());
}

ncclResult_t Comm::async_state() {
  int s = init_state.load();
  if (s != ncclSuccess) return static_cast<ncclResult_t>(s);
  std::lock_guard<std::mutex> lock(link->mu);
  return link->error;
}

void Comm::op_started() {
  std::lock_guard<std::mutex> lock(inflight_mu);
  ++inflight;
}

void Comm::op_finished() {
  std::lock_guard<std::mutex> lock(inflight_mu);
  --inflight;
  inflight_cv.notify_all();
}

void Comm::wait_idle() {
  std::unique_lock<std::mutex> lock(inflight_mu);
  inflight_cv.wait(lock, [&] { return inflight == 0; });
}

void Comm::close_connections() {
  if (closed.exchange(true)) return;
  for (auto& c : conns) {
    if (c) c->close_gracefully();
  }
}

void Comm::abort_now() {
  {
    std::lock_guard<std::mutex> lock(link->mu);
    link->aborted = true;
    link->cv.notify_all();
  }
  if (closed.exchange(true)) return;
  for (auto& c : conns) {
    if (c) c->shutdown_now();
  }
}

RankInfo local_rank_info(int rank, int device) {
  RankInfo info;
  info.rank = rank;
  info.gpu = device_local_gpu(device);
  info.pid = getpid();
  info.slow_factor = std::max(1.0, device_slow_factor(device));
  const Cluster& c = cluster();
  std::snprintf(info.node_name, sizeof info.node_name, "%s", c.my_node().name.c_str());
  return info;
}

void register_new_comm(Comm& comm) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  comm.comm_index = g_next_comm_index++;
  if (g_first_rank < 0) g_first_rank = comm.rank;
  int env_rank = cluster().global_rank();
  comm.global_rank = env_rank >= 0 ? env_rank : g_first_rank;
}

ncclResult_t connect_comm(Comm& comm, const std::vector<RankInfo>& all, int listen_fd) {
  comm.members = all;
  comm.link->comm_label = comm.label();
  std::vector<int> fds;
  if (ncclResult_t r = build_mesh(comm.rank, all, listen_fd, comm.nonce, &fds); r != ncclSuccess)
    return r;
  comm.conns.assign(comm.nranks, nullptr);
  for (int p = 0; p < comm.nranks; ++p) {
    if (p != comm.rank) comm.conns[p] = make_connection(fds[p], p, comm.link);
  }
  // Node names, not indices: indices differ between processes' copies of the model.
  comm.node_names.clear();
  comm.slow_factor = 1.0;
  for (const RankInfo& m : all) {
    comm.node_names.emplace_back(m.node_name, strnlen(m.node_name, sizeof m.node_name));
    comm.slow_factor = std::max(comm.slow_factor, m.slow_factor);
  }
  comm.send_seq.assign(comm.nranks, 0);
  comm.recv_seq.assign(comm.nranks, 0);
  debug_log(comm.label() + ": connected (node " + std::string(all[comm.rank].node_name) + ", gpu " +
            std::to_string(all[comm.rank].gpu) + ", comm index " + std::to_string(comm.comm_index) +
            ")");
  profiler::comm_init(comm);
  return ncclSuccess;
}

ncclResult_t init_from_id(Comm& comm, const ncclUniqueId& id) {
  UniqueIdContent content;
  if (!decode_unique_id(id, &content)) {
    return fail(ncclInvalidArgument,
                "ncclCommInitRank: the ncclUniqueId was not made by ncclGetUniqueId of this "
                "library (bad magic)");
  }
  comm.nonce = content.nonce;
  comm.link->comm_label = comm.label();
  if (content.from_env && comm.rank == 0) {
    if (ncclResult_t r = start_env_root(content); r != ncclSuccess) return r;
  }
  int listen_fd = -1;
  SocketAddress addr;
  if (ncclResult_t r = open_rank_listener(&listen_fd, &addr); r != ncclSuccess) return r;
  RankInfo me = local_rank_info(comm.rank, comm.device);
  me.global_rank = comm.global_rank;
  me.listen_ip = addr.ip;
  me.listen_port = addr.port;
  std::vector<RankInfo> all;
  if (ncclResult_t r = exchange_with_root(content, comm.nranks, me, &all); r != ncclSuccess) {
    ::close(listen_fd);
    return r;
  }
  return connect_comm(comm, all, listen_fd);
}

}  // namespace ringside::sim::nccl
