// Prometheus /metrics endpoint (include/yolo11/io/metrics_server.h) over Debian's cpp-httplib.
#include "yolo11/io/metrics_server.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "yolo11_features.h"

#if YOLO11_HAS_METRICS_SERVER
#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <vector>
#endif

namespace yolo11::io {

namespace {
std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}
}  // namespace

bool metrics_server_available() { return YOLO11_HAS_METRICS_SERVER != 0; }

void MetricsRegistry::declare(const std::string& name, Type type, const std::string& help) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, added] = families_.try_emplace(name);
  if (added) it->second.type = type, it->second.help = help, stale_ = true;
}

void MetricsRegistry::set(const std::string& name, const std::string& labels, double value) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = families_.find(name);
  if (it == families_.end()) throw std::logic_error("metrics: undeclared family " + name);
  it->second.samples[labels] = value;
  stale_ = true;
}

void MetricsRegistry::add(const std::string& name, const std::string& labels, double delta) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = families_.find(name);
  if (it == families_.end()) throw std::logic_error("metrics: undeclared family " + name);
  it->second.samples[labels] += delta;
  stale_ = true;
}

std::string MetricsRegistry::render() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!stale_) return text_;
  std::string out;
  for (const auto& [name, f] : families_) {
    if (f.samples.empty()) continue;
    out += "# HELP " + name + " " + f.help + "\n";
    out += "# TYPE " + name + (f.type == Type::counter ? " counter\n" : " gauge\n");
    for (const auto& [labels, v] : f.samples)
      out += name + (labels.empty() ? "" : "{" + labels + "}") + " " + number(v) + "\n";
  }
  text_ = out;
  stale_ = false;
  return out;
}

#if YOLO11_HAS_METRICS_SERVER

namespace {

using Clock = std::chrono::steady_clock;

/// Status of the response the current thread wrote last (httplib's logger runs on the thread that answers).
thread_local int tl_last_status = 0;

/// One client connection: its socket and the bytes received but not yet consumed by httplib.
struct Conn {
  int fd = -1;
  std::string in;  // received bytes; [pos, size) not yet consumed
  size_t pos = 0;
  Clock::time_point deadline;   // waiting: the head must be complete by then; in a worker: the response must be sent
  Clock::time_point waiting_since;
  int served = 0;  // requests answered on this connection
  size_t scanned = 0;  // offset in `in` up to which no blank line was found
  std::string out;     // the response being sent; [out_pos, size) not yet taken by the socket
  size_t out_pos = 0;
  bool close_after = false;  // close once `out` is sent (else wait for the next request)

  /// Bytes of the request head (through its blank line) waiting in `in`; 0 while it is incomplete.
  size_t head_bytes() {
    const size_t from = std::max(pos, scanned < 3 ? size_t{0} : scanned - 3);
    const size_t end = in.find("\r\n\r\n", from);
    if (end != std::string::npos) return end + 4 - pos;
    scanned = in.size();
    return 0;
  }
  size_t pending() const { return in.size() - pos; }
  void consume_all() { in.clear(), pos = 0, scanned = 0; }
};

/// Waits until `fd` is ready for `events` or `deadline` passes; true when ready.
bool wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

std::string address_of(int fd, bool peer, int& port) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  port = 0;
  if ((peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
            : ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len)) != 0)
    return "";
  char host[INET6_ADDRSTRLEN] = "";
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
    port = ntohs(v6->sin6_port);
  }
  return host;
}

/// httplib's view of a connection: first the bytes the poll thread already read, then (`may_wait`, in a worker) the
/// socket, all within the connection's deadline (httplib's own SocketStream only bounds each recv, not the whole
/// request). Writes are gathered into the connection's `out` and sent by flush() (httplib writes the head and the
/// body separately: two small segments would meet the client's delayed ACK).
class ConnStream final : public httplib::Stream {
 public:
  ConnStream(Conn& c, bool may_wait) : c_(c), may_wait_(may_wait) {}
  bool is_readable() const override {
    return c_.pending() > 0 || (may_wait_ && wait_fd(c_.fd, POLLIN, c_.deadline));
  }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    if (c_.pending() == 0) {
      c_.consume_all();
      if (!may_wait_ || !wait_fd(c_.fd, POLLIN, c_.deadline)) return -1;
      char buf[4096];
      ssize_t n;
      while ((n = ::recv(c_.fd, buf, sizeof buf, MSG_DONTWAIT)) < 0 && (errno == EAGAIN || errno == EINTR))
        if (!wait_fd(c_.fd, POLLIN, c_.deadline)) return -1;
      if (n <= 0) return n;
      c_.in.assign(buf, static_cast<size_t>(n));
    }
    const size_t n = std::min(size, c_.pending());
    std::memcpy(ptr, c_.in.data() + c_.pos, n);
    c_.pos += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    c_.out.append(ptr, size);
    if (may_wait_ && c_.out.size() - c_.out_pos >= 65536 && flush(c_, true) != Flushed::all) return -1;
    return static_cast<ssize_t>(size);
  }
  enum class Flushed { all, some, failed };
  /// Sends the connection's unsent output: by its deadline (`may_wait`), or what the socket takes now (else `some`
  /// when bytes are left); `failed` when the client did not take it.
  static Flushed flush(Conn& c, bool may_wait) {
    while (c.out_pos < c.out.size()) {
      const ssize_t n = ::send(c.fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c.out_pos += static_cast<size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        if (!may_wait) return Flushed::some;
        if (!wait_fd(c.fd, POLLOUT, c.deadline)) return Flushed::failed;
      } else {
        return Flushed::failed;
      }
    }
    c.out.clear();
    c.out_pos = 0;
    return Flushed::all;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { ip = address_of(c_.fd, true, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { ip = address_of(c_.fd, false, port); }
  socket_t socket() const override { return c_.fd; }

 private:
  Conn& c_;
  bool may_wait_;
};

/// Runs each task on the thread that enqueues it: httplib's accept loop then only hands the socket to
/// GuardedServer::process_and_close_socket, which parks it without blocking.
struct InlineQueue final : httplib::TaskQueue {
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

/// httplib::Server whose connections wait for a complete request head in one poll() thread (the file comment of
/// include/yolo11/io/metrics_server.h): httplib's thread-per-connection model would let a client that trickles its
/// head hold a thread indefinitely, since its read timeout applies to each recv.
class GuardedServer final : public httplib::Server {
 public:
  explicit GuardedServer(const MetricsServer::Limits& limits) : limits_(limits) {
    if (::pipe2(wake_, O_NONBLOCK | O_CLOEXEC) != 0) throw std::runtime_error("metrics server: pipe2 failed");
    new_task_queue = [] { return new InlineQueue; };
    set_keep_alive_max_count(static_cast<size_t>(limits.keep_alive_max_requests));
    set_keep_alive_timeout(std::max<time_t>(1, limits.request_timeout.count() / 1000));  // the Keep-Alive header
    set_logger([](const httplib::Request&, const httplib::Response& res) { tl_last_status = res.status; });
    poller_ = std::thread([this] {
      ::pthread_setname_np(::pthread_self(), "metrics-poll");  // named for top -H, /proc/PID/task/*/comm
      poll_loop();
    });
    for (int i = 0; i < limits.workers; ++i)
      workers_.emplace_back([this] {
        ::pthread_setname_np(::pthread_self(), "metrics-work");
        work_loop();
      });
  }
  /// httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed in Debian's build): a burst of connects
  /// past it waits for the client's SYN retry (1 s). listen() again on the bound socket sets a longer one.
  void widen_backlog(int backlog) { ::listen(svr_sock_, backlog); }
  ~GuardedServer() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      for (Conn* c : busy_) ::shutdown(c->fd, SHUT_RDWR);  // a worker's waits return at once
    }
    ready_cv_.notify_all();
    wake();
    poller_.join();
    for (auto& t : workers_) t.join();
    for (auto& c : inbox_) ::close(c->fd);
    for (auto& c : ready_) ::close(c->fd);
    ::close(wake_[0]), ::close(wake_[1]);
  }

 private:
  bool process_and_close_socket(socket_t sock) override {
    ::fcntl(sock, F_SETFD, FD_CLOEXEC);
    int yes = 1;
    ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);  // a flushed response goes out at once
    auto c = std::make_unique<Conn>();
    c->fd = sock;
    park(std::move(c));
    return true;
  }

  /// Hands `c` to the poll thread, which waits for its next request head.
  void park(std::unique_ptr<Conn> c) {
    c->waiting_since = Clock::now();
    c->deadline = c->waiting_since + limits_.request_timeout;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) {
        ::close(c->fd);
        return;
      }
      inbox_.push_back(std::move(c));
    }
    wake();
  }
  void wake() {
    const char b = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_[1], &b, 1);  // a full pipe already wakes the poll thread
  }
  /// Sends `reply` (when given) and closes. What the client sent and nobody read is drained first: closing a socket
  /// with unread input resets the connection, and the client could lose the reply.
  static void close_conn(std::unique_ptr<Conn>& c, const char* reply = nullptr) {
    if (reply != nullptr) {
      [[maybe_unused]] const ssize_t n = ::send(c->fd, reply, std::strlen(reply), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    char buf[4096];
    for (int i = 0; i < 16 && ::recv(c->fd, buf, sizeof buf, MSG_DONTWAIT) > 0; ++i) {
    }
    ::close(c->fd);
    c.reset();
  }

  void poll_loop() {
    static const char k408[] = "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
    static const char k431[] =
        "HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
    std::vector<std::unique_ptr<Conn>> waiting;
    std::vector<pollfd> fds;
    for (;;) {
      size_t in_workers = 0;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) break;
        for (auto& c : inbox_) waiting.push_back(std::move(c));
        inbox_.clear();
        in_workers = in_workers_;
      }
      // Over the connection cap: close the ones waiting longest (a scrape's head arrives at once, a slow client's not).
      while (waiting.size() + in_workers > static_cast<size_t>(limits_.max_connections) && !waiting.empty()) {
        auto oldest = std::min_element(waiting.begin(), waiting.end(), [](const auto& a, const auto& b) {
          return a->waiting_since < b->waiting_since;
        });
        close_conn(*oldest);
        waiting.erase(oldest);
      }
      // Complete heads are answered here, each pipelined one in turn: a scrape takes microseconds, and handing it to
      // a worker cost two thread switches more per request. What the socket does not take at once is finished by a
      // worker (a client that does not read). Expired connections are closed.
      auto next = Clock::now() + std::chrono::hours(1);
      for (auto& c : waiting) {
        for (size_t head = 0; c && (head = c->head_bytes()) > 0 && head <= limits_.max_head_bytes;) {
          switch (answer(*c)) {
            case Next::wait_request:
              c->waiting_since = Clock::now();
              c->deadline = c->waiting_since + limits_.request_timeout;
              break;
            case Next::close: close_conn(c); break;
            case Next::finish_in_worker:
              {
                std::lock_guard<std::mutex> lock(mutex_);
                ++in_workers_;
                ready_.push_back(std::move(c));
              }
              ready_cv_.notify_one();  // after unlocking: the worker it wakes does not block on the mutex at once
              break;
          }
        }
        if (!c) continue;
        const auto now = Clock::now();
        if (c->head_bytes() > limits_.max_head_bytes) {
          close_conn(c, k431);
        } else if (c->deadline <= now) {
          close_conn(c, c->pending() > 0 ? k408 : nullptr);
        } else {
          next = std::min(next, c->deadline);
        }
      }
      waiting.erase(std::remove(waiting.begin(), waiting.end(), nullptr), waiting.end());
      fds.assign(1, pollfd{wake_[0], POLLIN, 0});
      for (auto& c : waiting) fds.push_back(pollfd{c->fd, POLLIN, 0});
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count() + 1;
      if (::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(ms, 0, 60'000))) <= 0) continue;
      if (fds[0].revents != 0) {
        char buf[64];
        while (::read(wake_[0], buf, sizeof buf) > 0) {
        }
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        auto& c = waiting[i - 1];
        char buf[4096];
        const ssize_t n = ::recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          close_conn(c);  // the client went away
          continue;
        }
        if (n > 0) c->in.append(buf, static_cast<size_t>(n));
        if (c->head_bytes() == 0 && c->pending() > limits_.max_head_bytes) close_conn(c, k431);
      }
      waiting.erase(std::remove(waiting.begin(), waiting.end(), nullptr), waiting.end());
    }
    for (auto& c : waiting) ::close(c->fd);
  }

  enum class Next { wait_request, close, finish_in_worker };
  /// Answers the request whose whole head is buffered in `c`, without waiting (the poll thread): the response goes
  /// out as far as the socket takes it now.
  Next answer(Conn& c) {
    c.deadline = Clock::now() + limits_.io_timeout;
    ConnStream strm(c, /*may_wait=*/false);
    const bool last = c.served + 1 >= limits_.keep_alive_max_requests;
    bool closed = false;
    tl_last_status = 0;
    const bool ok = process_request(strm, last, closed, nullptr);
    ++c.served;
    if (!ok) return Next::close;
    c.close_after = closed || last || tl_last_status >= 400 || tl_last_status == 0;
    switch (ConnStream::flush(c, /*may_wait=*/false)) {
      case ConnStream::Flushed::all: return c.close_after ? Next::close : Next::wait_request;
      case ConnStream::Flushed::some: return Next::finish_in_worker;
      default: return Next::close;
    }
  }

  /// Finishes responses the poll thread could not send at once, each within Limits::io_timeout.
  void work_loop() {
    for (;;) {
      std::unique_ptr<Conn> c;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_cv_.wait(lock, [&] { return stopping_ || !ready_.empty(); });
        if (stopping_) return;
        c = std::move(ready_.front());
        ready_.pop_front();
        busy_.push_back(c.get());
      }
      c->deadline = Clock::now() + limits_.io_timeout;
      const bool ok = ConnStream::flush(*c, /*may_wait=*/true) == ConnStream::Flushed::all;
      bool stopping;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        busy_.erase(std::find(busy_.begin(), busy_.end(), c.get()));
        --in_workers_;
        stopping = stopping_;
      }
      if (!ok || c->close_after || stopping) {
        close_conn(c);
      } else {
        park(std::move(c));
      }
    }
  }

  const MetricsServer::Limits limits_;
  int wake_[2] = {-1, -1};
  std::mutex mutex_;
  bool stopping_ = false;
  std::vector<std::unique_ptr<Conn>> inbox_;  // parked, not yet seen by the poll thread
  std::deque<std::unique_ptr<Conn>> ready_;   // responses the socket did not take at once, waiting for a worker
  std::condition_variable ready_cv_;
  std::vector<Conn*> busy_;                   // in a worker
  size_t in_workers_ = 0;                     // in ready_ or busy_
  std::thread poller_;
  std::vector<std::thread> workers_;
};

}  // namespace

struct MetricsServer::Impl {
  explicit Impl(const Limits& limits) : server(limits) {}
  GuardedServer server;
  std::thread thread;
  std::atomic<bool> exited{false};

  /// Until the accept loop runs (stop() before that would be lost) or has returned.
  void wait_running() const {
    while (!server.is_running() && !exited.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
};

MetricsServer::MetricsServer(std::shared_ptr<MetricsRegistry> registry, const std::string& host, int port)
    : MetricsServer(std::move(registry), host, port, Limits()) {}

MetricsServer::MetricsServer(std::shared_ptr<MetricsRegistry> registry, const std::string& host, int port,
                             const Limits& limits)
    : port_(port) {
  if (limits.request_timeout.count() <= 0 || limits.io_timeout.count() <= 0 || limits.max_head_bytes == 0 ||
      limits.max_connections <= 0 || limits.keep_alive_max_requests <= 0 || limits.workers <= 0)
    throw std::invalid_argument("MetricsServer: every limit must be positive");
  impl_ = std::make_unique<Impl>(limits);
  auto& s = impl_->server;
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which would let a second server share a busy port.
  s.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  s.Get("/metrics", [registry](const httplib::Request&, httplib::Response& res) {
    res.set_content(registry->render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  // Before the body would be read: only GET/HEAD, and without a body.
  s.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    if (req.method != "GET" && req.method != "HEAD") {
      res.status = 405;
      res.set_header("Allow", "GET, HEAD");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.has_header("Transfer-Encoding") ||
        (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0")) {
      res.status = 413;
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    res.set_header("Connection", "close");
    switch (res.status) {
      case 404: res.set_content("not found; metrics are at /metrics\n", "text/plain"); break;
      case 405: res.set_content("only GET and HEAD /metrics\n", "text/plain"); break;
      case 413: res.set_content("GET /metrics takes no request body\n", "text/plain"); break;
      default: res.set_content("bad request; metrics are at GET /metrics\n", "text/plain"); break;
    }
  });
  if (!s.bind_to_port(host, port))
    throw std::runtime_error("metrics_port=" + std::to_string(port) + ": cannot listen on " + host + ":" +
                             std::to_string(port) + " (port " + std::to_string(port) +
                             " in use, or metrics_host is not an address of this machine); choose another "
                             "metrics_port, or metrics_port=0 to turn the endpoint off");
  s.widen_backlog(std::max(128, limits.max_connections));
  Impl* m = impl_.get();
  m->thread = std::thread([m] {
    ::pthread_setname_np(::pthread_self(), "metrics-accept");
    m->server.listen_after_bind();
    m->exited = true;
  });
  m->wait_running();
}

MetricsServer::~MetricsServer() {
  impl_->wait_running();
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

#else

struct MetricsServer::Impl {};

MetricsServer::MetricsServer(std::shared_ptr<MetricsRegistry> registry, const std::string& host, int port)
    : MetricsServer(std::move(registry), host, port, Limits()) {}

MetricsServer::MetricsServer(std::shared_ptr<MetricsRegistry>, const std::string& host, int port, const Limits&)
    : port_(port) {
  throw std::runtime_error("metrics_port=" + std::to_string(port) + ", but this build has no /metrics endpoint "
                           "(cpp-httplib was not found when it was configured): install it (apt-get install "
                           "libcpp-httplib-dev), re-run cmake and rebuild, or set metrics_port=0");
}

MetricsServer::~MetricsServer() = default;

#endif

}  // namespace yolo11::io
