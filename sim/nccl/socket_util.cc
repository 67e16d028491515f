#include "socket_util.h"

#include "last_error.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace ringside::sim::nccl {

std::string SocketAddress::to_string() const {
  char buf[INET_ADDRSTRLEN] = {};
  in_addr a{};
  a.s_addr = ip;
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return std::string(buf) + ":" + std::to_string(port);
}

bool parse_host_port(const std::string& text, SocketAddress* out, std::string* error) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    *error = "'" + text + "' is not host:port (example: 127.0.0.1:29500)";
    return false;
  }
  std::string host = text.substr(0, colon);
  std::string port_text = text.substr(colon + 1);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 ||
      port > 65535) {
    *error = "port '" + port_text + "' in '" + text + "' is not a number in 1..65535";
    return false;
  }
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) {
    *error = "cannot resolve host '" + host + "' in '" + text + "' (IPv4 only)";
    return false;
  }
  out->ip = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr.s_addr;
  out->port = static_cast<uint16_t>(port);
  freeaddrinfo(res);
  return true;
}

void tune_socket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int buf = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
}

void set_nonblocking(int fd, bool on) {
  int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK));
}

int listen_on(SocketAddress* addr, std::string* error) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket(): ") + std::strerror(errno);
    return -1;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = addr->ip;
  sa.sin_port = htons(addr->port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || listen(fd, 512) != 0) {
    *error = "cannot listen on " + addr->to_string() + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  socklen_t len = sizeof sa;
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  addr->port = ntohs(sa.sin_port);
  return fd;
}

int accept_with_timeout(int listen_fd, int timeout_ms, std::string* error) {
  pollfd p{listen_fd, POLLIN, 0};
  for (;;) {
    int r = poll(&p, 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      *error = "timed out after " + std::to_string(timeout_ms / 1000) +
               " s waiting for peers to connect";
      return -1;
    }
    if (r < 0) {
      *error = std::string("poll(): ") + std::strerror(errno);
      return -1;
    }
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      *error = std::string("accept(): ") + std::strerror(errno);
      return -1;
    }
    tune_socket(fd);
    return fd;
  }
}

int connect_with_retry(const SocketAddress& addr, int timeout_ms, std::string* error) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int delay_ms = 1;
  for (;;) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      *error = std::string("socket(): ") + std::strerror(errno);
      return -1;
    }
    tune_socket(fd);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = addr.ip;
    sa.sin_port = htons(addr.port);
    if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) return fd;
    int err = errno;
    close(fd);
    if (std::chrono::steady_clock::now() >= deadline) {
      *error = "cannot connect to " + addr.to_string() + ": " + std::strerror(err) +
               " (gave up after " + std::to_string(timeout_ms / 1000) + " s)";
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    delay_ms = std::min(delay_ms * 2, 100);
  }
}

bool send_all(int fd, const void* data, size_t len) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pf{fd, POLLOUT, 0};
      poll(&pf, 1, 1000);
    } else {
      return false;
    }
  }
  return true;
}

bool recv_all(int fd, void* data, size_t len) {
  char* p = static_cast<char*>(data);
  while (len > 0) {
    ssize_t n = recv(fd, p, len, 0);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pf{fd, POLLIN, 0};
      poll(&pf, 1, 1000);
    } else {
      return false;
    }
  }
  return true;
}

int bootstrap_timeout_ms() {
  static const int ms = [] {
    const char* v = std::getenv("RINGSIM_BOOTSTRAP_TIMEOUT");
    if (v == nullptr || *v == '\0') return 120000;
    int s = 0;
    auto [end, ec] = std::from_chars(v, v + std::strlen(v), s);
    if (ec != std::errc() || *end != '\0' || s <= 0) {
      warn(std::string("RINGSIM_BOOTSTRAP_TIMEOUT='") + v +
           "' is not a positive whole number of seconds; using 120 (fix or unset it)");
      return 120000;
    }
    return s * 1000;
  }();
  return ms;
}

}  // namespace ringside::sim::nccl
