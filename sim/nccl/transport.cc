#include "transport.h"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <thread>
#include <unordered_map>

#include "datatypes.h"
#include "last_error.h"
#include "socket_util.h"

namespace ringside::sim::nccl {
namespace {

constexpr uint32_t kMsgMagic = 0x52534d47;    // "RSMG"
constexpr size_t kMaxReadPerTurn = 8u << 20;  // fairness between sockets

const char* func_name(uint8_t f) {
  static const char* const kNames[] = {"AllReduce",     "Broadcast", "Reduce", "AllGather",
                                       "ReduceScatter", "AlltoAll",  "Gather", "Scatter",
                                       "Send",          "Recv",      "Control"};
  return f < sizeof kNames / sizeof kNames[0] ? kNames[f] : "?";
}

}  // namespace

std::string OpSignature::describe() const {
  return std::string(func_name(func)) + "(count=" + std::to_string(count) + ", " +
         datatype_name(static_cast<ncclDataType_t>(dtype)) + ", redop=" + std::to_string(redop) +
         ", root=" + std::to_string(root) + ")";
}

// One thread per process drains every registered socket into its mailbox.
class ProgressEngine {
 public:
  static ProgressEngine& instance() {
    static ProgressEngine* engine = new ProgressEngine();  // leaked: runs until exit
    return *engine;
  }

  void add(const std::shared_ptr<Connection>& c) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      conns_[c->fd_] = c;
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = c->fd_;
    epoll_ctl(epfd_, EPOLL_CTL_ADD, c->fd_, &ev);
  }

 private:
  ProgressEngine() : epfd_(epoll_create1(EPOLL_CLOEXEC)) {
    std::thread([this] { run(); }).detach();
  }

  void run() {
    pthread_setname_np(pthread_self(), "sim-progress");
    epoll_event events[64];
    for (;;) {
      int n = epoll_wait(epfd_, events, 64, -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        warn(std::string("progress thread: epoll_wait failed: ") + std::strerror(errno));
        return;
      }
      for (int i = 0; i < n; ++i) {
        std::shared_ptr<Connection> c;
        {
          std::lock_guard<std::mutex> lock(mu_);
          auto it = conns_.find(events[i].data.fd);
          if (it == conns_.end()) continue;
          c = it->second;
        }
        if (!c->read_available()) {
          epoll_ctl(epfd_, EPOLL_CTL_DEL, c->fd_, nullptr);
          {
            std::lock_guard<std::mutex> lock(mu_);
            conns_.erase(c->fd_);
          }
          c->finish_reading(false);
        }
      }
    }
  }

  int epfd_;
  std::mutex mu_;
  std::unordered_map<int, std::shared_ptr<Connection>> conns_;
};

Connection::Connection(int fd, int peer, std::shared_ptr<CommLinkState> state)
    : fd_(fd), peer_(peer), state_(std::move(state)) {}

Connection::~Connection() {
  if (!fd_closed_) ::close(fd_);
}

std::shared_ptr<Connection> make_connection(int fd, int peer,
                                            std::shared_ptr<CommLinkState> state) {
  set_nonblocking(fd, true);
  auto c = std::make_shared<Connection>(fd, peer, std::move(state));
  ProgressEngine::instance().add(c);
  return c;
}

bool Connection::send(MsgKind kind, uint64_t seq, uint32_t step, const OpSignature& sig,
                      int64_t ready_ns, const void* data, size_t len) {
  MsgHeader h{};
  h.magic = kMsgMagic;
  h.kind = static_cast<uint32_t>(kind);
  h.seq = seq;
  h.step = step;
  h.len = len;
  h.ready_ns = ready_ns;
  h.sig = sig;
  bool ok;
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    ok = send_all(fd_, &h, sizeof h) && (len == 0 || send_all(fd_, data, len));
  }
  if (!ok) {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!state_->aborted && state_->error == ncclSuccess) {
      state_->error = ncclRemoteError;
      state_->error_text = state_->comm_label + ": sending to rank " + std::to_string(peer_) +
                           " failed: the peer process is gone or closed the communicator";
    }
    state_->cv.notify_all();
  }
  return ok;
}

WaitStatus Connection::wait(const MsgKey& key, const OpSignature* expected, Message* out,
                            OpSignature* seen) {
  std::unique_lock<std::mutex> lock(state_->mu);
  for (;;) {
    if (state_->aborted) return WaitStatus::kAborted;
    if (state_->revoked && key.kind != static_cast<uint32_t>(MsgKind::kCtrl))
      return WaitStatus::kAborted;
    auto it = mailbox_.find(key);
    if (it != mailbox_.end()) {
      if (expected && !(it->second.header.sig == *expected)) {
        if (seen) *seen = it->second.header.sig;
        return WaitStatus::kDesync;
      }
      *out = std::move(it->second);
      mailbox_.erase(it);
      return WaitStatus::kOk;
    }
    if (expected) {
      for (auto j = mailbox_.lower_bound(MsgKey{key.kind, key.seq, 0});
           j != mailbox_.end() && j->first.kind == key.kind && j->first.seq == key.seq; ++j) {
        if (!(j->second.header.sig == *expected)) {
          if (seen) *seen = j->second.header.sig;
          return WaitStatus::kDesync;
        }
      }
    }
    // Control exchanges (split/shrink) only care about this peer: shrinking a comm
    // that lost a member must still work between the survivors.
    const bool comm_failed =
        state_->error != ncclSuccess && key.kind != static_cast<uint32_t>(MsgKind::kCtrl);
    if (comm_failed || dead_ || (peer_bye_ && read_done_)) {
      if (state_->error == ncclSuccess) {
        state_->error = ncclRemoteError;
        state_->error_text = state_->comm_label +
                             (dead_ ? ": lost the connection to rank " : ": rank ") +
                             std::to_string(peer_) +
                             (dead_ ? " (its process died or aborted the communicator)"
                                    : " closed the communicator") +
                             " while this rank still expected data from it";
      }
      return WaitStatus::kRemoteError;
    }
    state_->cv.wait(lock);
  }
}

bool Connection::read_available() {
  size_t budget = kMaxReadPerTurn;
  while (budget > 0) {
    if (header_got_ < sizeof pending_header_) {
      ssize_t n = recv(fd_, reinterpret_cast<char*>(&pending_header_) + header_got_,
                       sizeof pending_header_ - header_got_, 0);
      if (n == 0) return false;
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      header_got_ += static_cast<size_t>(n);
      if (header_got_ < sizeof pending_header_) continue;
      if (pending_header_.magic != kMsgMagic) {
        warn("corrupt message from rank " + std::to_string(peer_) + "; dropping the connection");
        return false;
      }
      pending_data_.reset(pending_header_.len ? new char[pending_header_.len] : nullptr);
      data_got_ = 0;
    }
    if (data_got_ < pending_header_.len) {
      size_t want = std::min<size_t>(pending_header_.len - data_got_, budget);
      ssize_t n = recv(fd_, pending_data_.get() + data_got_, want, 0);
      if (n == 0) return false;
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      data_got_ += static_cast<size_t>(n);
      budget -= std::min(budget, static_cast<size_t>(n));
      if (data_got_ < pending_header_.len) continue;
    }
    // A whole message.
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (pending_header_.kind == static_cast<uint32_t>(MsgKind::kBye)) {
        peer_bye_ = true;
      } else {
        MsgKey key{pending_header_.kind, pending_header_.seq, pending_header_.step};
        Message& m = mailbox_[key];
        m.header = pending_header_;
        m.data = std::move(pending_data_);
      }
      state_->cv.notify_all();
    }
    header_got_ = 0;
    data_got_ = 0;
  }
  return true;
}

void Connection::finish_reading(bool) {
  std::lock_guard<std::mutex> lock(state_->mu);
  read_done_ = true;
  // A peer that died is an error only for a wait that still needs its data
  // (see wait()): a rank that exits right after its last op must not fail
  // the survivors' ops whose data from it has already arrived.
  if (!peer_bye_ && !local_closed_) dead_ = true;
  if (local_closed_ && !fd_closed_) {
    ::close(fd_);
    fd_closed_ = true;
  }
  state_->cv.notify_all();
}

void Connection::close_gracefully() {
  send(MsgKind::kBye, 0, 0, OpSignature{}, 0, nullptr, 0);
  ::shutdown(fd_, SHUT_WR);
  std::lock_guard<std::mutex> lock(state_->mu);
  local_closed_ = true;
  if (read_done_ && !fd_closed_) {
    ::close(fd_);
    fd_closed_ = true;
  }
}

void Connection::shutdown_now() {
  std::lock_guard<std::mutex> lock(state_->mu);
  local_closed_ = true;
  if (read_done_) {
    if (!fd_closed_) ::close(fd_);
    fd_closed_ = true;
  } else {
    ::shutdown(fd_, SHUT_RDWR);
  }
}

}  // namespace ringside::sim::nccl
