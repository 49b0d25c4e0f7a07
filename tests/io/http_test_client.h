#pragma once
// Plain-socket HTTP on 127.0.0.1 for the /metrics tests (tests/io/test_metrics_server.cpp, test_metrics_faults.cpp):
// the client side is written by hand so that tests can misbehave (trickle, stall, send garbage) as no library would.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>

namespace yolo11::test {

/// A listening TCP socket on 127.0.0.1 (port 0: the kernel picks one); closed at destruction.
struct Listener {
  int fd = -1;
  int port = 0;
  explicit Listener(int want = 0) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(want));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 4) != 0)
      throw std::runtime_error("test listener: bind/listen failed");
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Listener() { ::close(fd); }
};

/// A port that was free a moment ago.
inline int free_port() { return Listener().port; }

/// A connected socket to `address`:port (IPv4, network order in `address`), or −1 when refused.
inline int connect_to(int port, uint32_t address = htonl(INADDR_LOOPBACK)) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = address;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Sends all of `data` (false when the peer is gone).
inline bool send_all(int fd, const std::string& data) {
  for (size_t off = 0; off < data.size();) {
    const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

/// Reads until the peer closes or `timeout` passes; `closed` says which.
inline std::string read_until_close(int fd, std::chrono::milliseconds timeout, bool* closed = nullptr) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  std::string out;
  if (closed) *closed = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return out;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      if (closed) *closed = true;
      return out;
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

/// The status code of an HTTP response's first line (0 when there is none).
inline int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) return 0;
  return std::stoi(response.substr(9, 3));
}

/// HTTP/1.0 GET over a plain socket: (status code, body); status −1 when the connection is refused, 0 when no whole
/// response came within `timeout`.
inline std::pair<int, std::string> http_get(int port, const std::string& path,
                                            std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const int fd = connect_to(port);
  if (fd < 0) return {-1, ""};
  send_all(fd, "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  bool closed = false;
  const std::string resp = read_until_close(fd, timeout, &closed);
  ::close(fd);
  const auto body = resp.find("\r\n\r\n");
  if (!closed || status_of(resp) == 0 || body == std::string::npos) return {0, resp};
  return {status_of(resp), resp.substr(body + 4)};
}

}  // namespace yolo11::test
