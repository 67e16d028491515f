// Point-to-point message transport between the ranks of a communicator: one TCP
// connection per peer, a per-process progress thread that drains every socket into
// per-connection mailboxes (so a sender never waits for the receiver to post, and
// grouped send/recv pairs cannot deadlock), and waits keyed by (kind, seq, step).
#pragma once

#include <nccl.h>

#include <atomic>
#include <compare>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace ringside::sim::nccl {

enum class MsgKind : uint32_t { kColl = 1, kP2P = 2, kP2PAck = 3, kCtrl = 4, kBye = 5 };

// What an op looks like on the wire, so ranks that issue different ops at the same
// point (a desync) notice instead of combining unrelated data.
struct OpSignature {
  uint8_t func = 0;
  uint8_t dtype = 0;
  uint8_t redop = 0;
  uint8_t pad = 0;
  int32_t root = -1;
  uint64_t count = 0;
  bool operator==(const OpSignature&) const = default;
  std::string describe() const;
};

struct MsgHeader {
  uint32_t magic = 0;
  uint32_t kind = 0;
  uint64_t seq = 0;
  uint32_t step = 0;
  uint32_t pad = 0;
  uint64_t len = 0;
  int64_t ready_ns = 0;  // latest arrival (steady clock) the sender knows of, for pacing
  OpSignature sig;
};

struct MsgKey {
  uint32_t kind = 0;
  uint64_t seq = 0;
  uint32_t step = 0;
  auto operator<=>(const MsgKey&) const = default;
};

struct Message {
  MsgHeader header;
  std::unique_ptr<char[]> data;
};

// Shared by a communicator's connections: the lock and condition every wait uses,
// and the communicator-wide failure state.
struct CommLinkState {
  std::mutex mu;
  std::condition_variable cv;
  bool aborted = false;  // ncclCommAbort: every wait returns
  bool revoked = false;  // ncclCommRevoke / shrink-abort: op waits return, control exchanges go on
  bool warned = false;   // the asynchronous error was printed once
  ncclResult_t error = ncclSuccess;  // first asynchronous error (ncclRemoteError on a dead peer)
  std::string error_text;
  std::string comm_label;  // for messages: "comm 0x... rank r/n"
};

enum class WaitStatus { kOk, kAborted, kRemoteError, kDesync };

class Connection {
 public:
  Connection(int fd, int peer, std::shared_ptr<CommLinkState> state);
  ~Connection();

  int peer() const { return peer_; }

  // Sends one message; false if the peer is gone (the comm error is recorded).
  bool send(MsgKind kind, uint64_t seq, uint32_t step, const OpSignature& sig, int64_t ready_ns,
            const void* data, size_t len);

  // Waits for the message `key`; `expected` (may be null) is compared to the
  // signature of any message of the same kind and seq to detect a desync.
  WaitStatus wait(const MsgKey& key, const OpSignature* expected, Message* out, OpSignature* seen);

  // Graceful close: tells the peer, then lets the progress thread close the socket
  // once the peer has closed its side too (closing first could lose its last data).
  void close_gracefully();
  // Abort: shuts the socket down at once; the peer sees an error.
  void shutdown_now();

 private:
  friend class ProgressEngine;
  bool read_available();  // progress thread: false when the socket is finished
  void finish_reading(bool peer_said_bye);

  int fd_;
  int peer_;
  std::shared_ptr<CommLinkState> state_;
  std::mutex write_mu_;
  // Guarded by state_->mu:
  std::map<MsgKey, Message> mailbox_;
  bool peer_bye_ = false;
  bool read_done_ = false;
  bool dead_ = false;
  bool local_closed_ = false;
  bool fd_closed_ = false;
  // Progress-thread-only read state:
  MsgHeader pending_header_{};
  size_t header_got_ = 0;
  std::unique_ptr<char[]> pending_data_;
  size_t data_got_ = 0;
};

// Registers a connected socket with the process's progress thread.
std::shared_ptr<Connection> make_connection(int fd, int peer, std::shared_ptr<CommLinkState> state);

}  // namespace ringside::sim::nccl
