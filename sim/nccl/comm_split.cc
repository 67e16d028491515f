#include "comm_split.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "last_error.h"
#include "op_run.h"

namespace ringside::sim::nccl {
namespace {

struct SplitEntry {
  int32_t color;
  int32_t key;
  int32_t parent_rank;
  int32_t pad;
  RankInfo info;
};

}  // namespace

ncclResult_t split_comm(Comm& parent, int color, int key, const std::vector<int>& participants,
                        const ncclConfig_t* config, ncclComm_t* newcomm) {
  *newcomm = nullptr;
  int listen_fd = -1;
  SocketAddress addr;
  if (color != NCCL_SPLIT_NOCOLOR) {
    if (ncclResult_t r = open_rank_listener(&listen_fd, &addr); r != ncclSuccess) return r;
  }
  SplitEntry mine{};
  mine.color = color;
  mine.key = key;
  mine.parent_rank = parent.rank;
  mine.info = parent.members[parent.rank];
  mine.info.listen_ip = addr.ip;
  mine.info.listen_port = addr.port;

  OpDesc ctrl;
  ctrl.func = Func::kControl;
  ctrl.dtype = ncclUint8;
  ctrl.count = sizeof(SplitEntry);
  {
    std::lock_guard<std::mutex> lock(parent.issue_mu);
    ctrl.seq = parent.ctrl_seq++;
  }
  std::vector<SplitEntry> entries;
  try {
    OpRun run(parent, ctrl, MsgKind::kCtrl);
    for (int p : participants) {
      if (p != parent.rank) run.send(p, 0, &mine, sizeof mine);
    }
    for (int p : participants) {
      if (p == parent.rank) {
        entries.push_back(mine);
      } else {
        Message m = run.recv(p, 0, sizeof(SplitEntry));
        SplitEntry e;
        std::memcpy(&e, m.data.get(), sizeof e);
        entries.push_back(e);
      }
    }
  } catch (const OpFailed& f) {
    if (listen_fd >= 0) ::close(listen_fd);
    return fail(f.code, parent.label() + ": ncclCommSplit/Shrink: a participating rank is gone");
  }
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;

  std::vector<SplitEntry> group;
  for (const SplitEntry& e : entries) {
    if (e.color == color) group.push_back(e);
  }
  std::stable_sort(group.begin(), group.end(), [](const SplitEntry& a, const SplitEntry& b) {
    return a.key != b.key ? a.key < b.key : a.parent_rank < b.parent_rank;
  });
  auto comm = std::make_shared<Comm>();
  comm->nranks = static_cast<int>(group.size());
  std::vector<RankInfo> infos;
  for (int i = 0; i < comm->nranks; ++i) {
    if (group[i].parent_rank == parent.rank) comm->rank = i;
    infos.push_back(group[i].info);
    infos.back().rank = i;
  }
  comm->device = parent.device;
  comm->blocking = (config && config->blocking != NCCL_CONFIG_UNDEF_INT) ? config->blocking != 0
                                                                         : parent.blocking;
  // Same on every member: parent id, this exchange's number, and the colour.
  comm->nonce = (parent.nonce ^ (0x9e3779b97f4a7c15ull * (ctrl.seq + 1))) * 1099511628211ull +
                static_cast<uint64_t>(static_cast<uint32_t>(color));
  register_new_comm(*comm);
  ncclResult_t r = connect_comm(*comm, infos, listen_fd);
  comm->init_state = r;
  if (r != ncclSuccess) return r;
  *newcomm = new ncclComm{comm};
  return ncclSuccess;
}

}  // namespace ringside::sim::nccl
