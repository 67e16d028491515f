// Small blocking TCP helpers for the bootstrap and the transport (IPv4).
#pragma once

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace ringside::sim::nccl {

struct SocketAddress {
  uint32_t ip = 0;    // network byte order
  uint16_t port = 0;  // host byte order
  std::string to_string() const;
};

// Parses "host:port" (IPv4 literal or resolvable name). Empty result + `error` on failure.
bool parse_host_port(const std::string& text, SocketAddress* out, std::string* error);

// Listens on addr (port 0 = ephemeral); returns the fd or -1 with `error`.
// The bound address (with the actual port) is stored back in *addr.
int listen_on(SocketAddress* addr, std::string* error);

// Accepts one connection, waiting at most timeout_ms (-1 = forever). -1 on timeout/error.
int accept_with_timeout(int listen_fd, int timeout_ms, std::string* error);

// Connects, retrying on refusal until timeout_ms elapses (the listener may start later).
int connect_with_retry(const SocketAddress& addr, int timeout_ms, std::string* error);

// Full blocking transfers; false on EOF or error. Work on non-blocking fds too (poll on EAGAIN).
bool send_all(int fd, const void* data, size_t len);
bool recv_all(int fd, void* data, size_t len);

void set_nonblocking(int fd, bool on);
void tune_socket(int fd);  // TCP_NODELAY and large buffers

// Milliseconds the bootstrap waits for peers: RINGSIM_BOOTSTRAP_TIMEOUT (seconds), default 120.
int bootstrap_timeout_ms();

}  // namespace ringside::sim::nccl
