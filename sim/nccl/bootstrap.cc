#include "bootstrap.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "last_error.h"

namespace ringside::sim::nccl {
namespace {

constexpr uint32_t kIdMagic = 0x52534944;     // "RSID"
constexpr uint32_t kHelloMagic = 0x5253484c;  // "RSHL"
constexpr uint32_t kMeshMagic = 0x52534d48;   // "RSMH"

struct IdPayload {
  uint32_t magic;
  uint32_t version;
  uint32_t root_ip;
  uint16_t root_port;
  uint8_t from_env;
  uint8_t pad;
  uint64_t nonce;
};
static_assert(sizeof(IdPayload) <= NCCL_UNIQUE_ID_BYTES);

struct Hello {
  uint32_t magic;
  int32_t nranks;
  uint64_t nonce;
  RankInfo info;
};

struct RootReply {
  int32_t status;  // 0 ok, else an ncclResult_t; followed by nranks RankInfo or a message
  uint32_t text_len;
};

struct MeshHello {
  uint32_t magic;
  int32_t rank;
  uint64_t nonce;
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

void root_serve(int listen_fd, uint64_t nonce) {
  pthread_setname_np(pthread_self(), "sim-root");
  std::vector<int> fds;
  std::vector<Hello> hellos;
  int nranks = -1;
  std::string error;
  while (nranks < 0 || static_cast<int>(hellos.size()) < nranks) {
    std::string accept_error;
    int fd = accept_with_timeout(listen_fd, -1, &accept_error);
    if (fd < 0) {
      error = "bootstrap root: " + accept_error;
      break;
    }
    set_nonblocking(fd, false);
    Hello h{};
    if (!recv_all(fd, &h, sizeof h) || h.magic != kHelloMagic) {
      ::close(fd);  // a stray connection, not a rank
      continue;
    }
    if (h.nonce != nonce) {
      RootReply r{ncclInvalidUsage, 0};
      std::string text = "this bootstrap root serves another communicator (stale ncclUniqueId?)";
      r.text_len = static_cast<uint32_t>(text.size());
      send_all(fd, &r, sizeof r);
      send_all(fd, text.data(), text.size());
      ::close(fd);
      continue;
    }
    if (nranks < 0) nranks = h.nranks;
    if (h.nranks != nranks) {
      error = "ranks disagree on the communicator size: rank " + std::to_string(h.info.rank) +
              " says " + std::to_string(h.nranks) + ", an earlier rank said " +
              std::to_string(nranks);
    }
    for (const Hello& o : hellos) {
      if (o.info.rank == h.info.rank)
        error = "two processes claim rank " + std::to_string(h.info.rank);
    }
    if (h.info.rank < 0 || h.info.rank >= h.nranks)
      error = "rank " + std::to_string(h.info.rank) + " out of range";
    fds.push_back(fd);
    hellos.push_back(h);
    if (!error.empty()) break;
  }
  ::close(listen_fd);
  std::vector<RankInfo> table(nranks > 0 ? nranks : 0);
  for (const Hello& h : hellos) {
    if (error.empty()) table[h.info.rank] = h.info;
  }
  for (int fd : fds) {
    RootReply r{error.empty() ? 0 : ncclInvalidUsage, static_cast<uint32_t>(error.size())};
    send_all(fd, &r, sizeof r);
    if (error.empty()) {
      send_all(fd, table.data(), table.size() * sizeof(RankInfo));
    } else {
      send_all(fd, error.data(), error.size());
    }
    ::close(fd);
  }
}

}  // namespace

ncclResult_t make_unique_id(ncclUniqueId* id) {
  IdPayload p{};
  p.magic = kIdMagic;
  p.version = 1;
  if (const char* env = std::getenv("NCCL_COMM_ID"); env && *env) {
    SocketAddress addr;
    std::string error;
    if (!parse_host_port(env, &addr, &error)) {
      return fail(ncclInvalidArgument, "NCCL_COMM_ID: " + error);
    }
    p.root_ip = addr.ip;
    p.root_port = addr.port;
    p.from_env = 1;
    p.nonce = fnv1a(std::string("NCCL_COMM_ID=") + env);
  } else {
    SocketAddress addr;
    addr.ip = htonl(INADDR_LOOPBACK);
    std::string error;
    int fd = listen_on(&addr, &error);
    if (fd < 0) return fail(ncclSystemError, "ncclGetUniqueId: bootstrap root: " + error);
    p.root_ip = addr.ip;
    p.root_port = addr.port;
    std::random_device rd;
    p.nonce = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ (static_cast<uint64_t>(getpid()) << 16);
    start_root_service(fd, p.nonce);
  }
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, &p, sizeof p);
  return ncclSuccess;
}

bool decode_unique_id(const ncclUniqueId& id, UniqueIdContent* out) {
  IdPayload p{};
  std::memcpy(&p, id.internal, sizeof p);
  if (p.magic != kIdMagic || p.version != 1) return false;
  out->root.ip = p.root_ip;
  out->root.port = p.root_port;
  out->nonce = p.nonce;
  out->from_env = p.from_env != 0;
  return true;
}

void start_root_service(int listen_fd, uint64_t nonce) {
  std::thread([listen_fd, nonce] { root_serve(listen_fd, nonce); }).detach();
}

ncclResult_t start_env_root(const UniqueIdContent& id) {
  SocketAddress addr = id.root;
  std::string error;
  int fd = listen_on(&addr, &error);
  if (fd < 0) {
    return fail(ncclSystemError,
                "rank 0 cannot host the bootstrap root at NCCL_COMM_ID=" + id.root.to_string() +
                    ": " + error + " (is the port in use? pick another)");
  }
  start_root_service(fd, id.nonce);
  return ncclSuccess;
}

ncclResult_t exchange_with_root(const UniqueIdContent& id, int nranks, const RankInfo& me,
                                std::vector<RankInfo>* all) {
  std::string error;
  int fd = connect_with_retry(id.root, bootstrap_timeout_ms(), &error);
  if (fd < 0)
    return fail(ncclSystemError, "rank " + std::to_string(me.rank) + ": bootstrap root: " + error);
  Hello h{};
  h.magic = kHelloMagic;
  h.nranks = nranks;
  h.nonce = id.nonce;
  h.info = me;
  RootReply r{};
  if (!send_all(fd, &h, sizeof h) || !recv_all(fd, &r, sizeof r)) {
    ::close(fd);
    return fail(ncclSystemError, "rank " + std::to_string(me.rank) + ": the bootstrap root at " +
                                     id.root.to_string() + " closed the connection");
  }
  if (r.status != 0) {
    std::string text(r.text_len, '\0');
    recv_all(fd, text.data(), text.size());
    ::close(fd);
    return fail(static_cast<ncclResult_t>(r.status), "bootstrap: " + text);
  }
  all->assign(nranks, RankInfo{});
  bool ok = recv_all(fd, all->data(), all->size() * sizeof(RankInfo));
  ::close(fd);
  if (!ok) return fail(ncclSystemError, "bootstrap: truncated rank table from the root");
  return ncclSuccess;
}

ncclResult_t open_rank_listener(int* fd, SocketAddress* addr) {
  addr->ip = htonl(INADDR_LOOPBACK);
  addr->port = 0;
  std::string error;
  *fd = listen_on(addr, &error);
  if (*fd < 0) return fail(ncclSystemError, "cannot open the rank's listening socket: " + error);
  return ncclSuccess;
}

ncclResult_t build_mesh(int my_rank, const std::vector<RankInfo>& all, int listen_fd,
                        uint64_t nonce, std::vector<int>* fds) {
  const int n = static_cast<int>(all.size());
  fds->assign(n, -1);
  auto cleanup = [&] {
    ::close(listen_fd);
    for (int& fd : *fds) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  };
  for (int peer = 0; peer < my_rank; ++peer) {
    SocketAddress addr{all[peer].listen_ip, all[peer].listen_port};
    std::string error;
    int fd = connect_with_retry(addr, bootstrap_timeout_ms(), &error);
    MeshHello h{kMeshMagic, my_rank, nonce};
    if (fd < 0 || !send_all(fd, &h, sizeof h)) {
      if (fd >= 0) ::close(fd);
      cleanup();
      return fail(ncclSystemError, "rank " + std::to_string(my_rank) + " cannot connect to rank " +
                                       std::to_string(peer) + ": " + error);
    }
    (*fds)[peer] = fd;
  }
  for (int accepted = 0; accepted < n - 1 - my_rank;) {
    std::string error;
    int fd = accept_with_timeout(listen_fd, bootstrap_timeout_ms(), &error);
    if (fd < 0) {
      cleanup();
      return fail(ncclSystemError,
                  "rank " + std::to_string(my_rank) + ": waiting for higher ranks: " + error);
    }
    MeshHello h{};
    if (!recv_all(fd, &h, sizeof h) || h.magic != kMeshMagic || h.nonce != nonce ||
        h.rank <= my_rank || h.rank >= n || (*fds)[h.rank] >= 0) {
      ::close(fd);  // not one of ours
      continue;
    }
    (*fds)[h.rank] = fd;
    ++accepted;
  }
  ::close(listen_fd);
  return ncclSuccess;
}

}  // namespace ringside::sim::nccl
