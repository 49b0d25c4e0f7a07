#pragma once
// A Prometheus scrape endpoint: GET (or HEAD) /metrics answers the text exposition format (version 0.0.4) of the
// values set so far. Served by cpp-httplib (Debian's libcpp-httplib) on its own threads; the trainer only calls
// set()/add(), which take one mutex (held by render() for the few microseconds it formats the samples) and never
// block on a client. Optional at build time (metrics_server_available()).
//
// Misbehaving clients cannot block the trainer, exhaust threads or starve a normal scrape
// (tests/io/test_metrics_server.cpp, "MetricsEndpointFaults"):
//  - Threads: a fixed set, whatever the clients do: httplib's accept thread, one poll() thread that reads every
//    connection's request head and answers it once the whole head (up to the blank line) has arrived, and
//    MetricsServer::Limits::workers threads that finish the responses a client does not take at once (named
//    metrics-accept, metrics-poll, metrics-work in /proc/PID/task/*/comm). The poll thread never waits on a client:
//    it reads and sends only what the socket has or takes at that moment.
//  - Slow ("slowloris") and half-open clients wait in the poll thread's set. Each connection must deliver a
//    complete head within Limits::request_timeout of connecting or of its previous response (keep-alive idle
//    included): else it is closed, with 408 Request Timeout when part of a head had arrived.
//  - A worker spends at most Limits::io_timeout on one response (a client that does not read it is cut off).
//  - At most Limits::max_connections connections are open; a new one beyond that closes the one waiting longest.
//  - Keep-alive: at most Limits::keep_alive_max_requests requests per connection.
//  - Bad requests get 4xx and the connection is closed: a head over Limits::max_head_bytes → 431; a request line
//    over 8 KiB → 414; a malformed request line, an unknown method, a header line over 8 KiB or an HTTP version
//    other than 1.0/1.1 → 400; a method other than GET/HEAD → 405; a request with a body → 413; another path → 404.
//  - Binding: metrics_host (default 127.0.0.1, loopback only); another address only when asked.
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace yolo11::io {

/// True when this build has the /metrics endpoint (cpp-httplib was found at configure time).
bool metrics_server_available();

/// Prometheus metric families with labelled samples, rendered on demand. Thread-safe.
class MetricsRegistry {
 public:
  enum class Type { gauge, counter };
  /// Declares a family (name: [a-zA-Z_:][a-zA-Z0-9_:]*, counters end in _total). Redeclaring keeps the first.
  void declare(const std::string& name, Type type, const std::string& help);
  /// Sets the sample `name{labels}` (labels: already rendered, e.g. `stage="forward",rank="0"`, or "").
  /// Throws std::logic_error for an undeclared family.
  void set(const std::string& name, const std::string& labels, double value);
  /// Adds `delta` to the sample (counters; starts at 0).
  void add(const std::string& name, const std::string& labels, double delta);
  /// The exposition text: "# HELP", "# TYPE" and one line per sample, families in name order. Built once per change
  /// of the registry: scrapes between two updates get the same text (formatting the numbers was a fifth of the
  /// endpoint's CPU time under 1,400 scrapes/s, docs/benchmarks.md).
  std::string render() const;

 private:
  struct Family {
    Type type = Type::gauge;
    std::string help;
    std::map<std::string, double> samples;  // labels → value
  };
  mutable std::mutex mutex_;
  std::map<std::string, Family> families_;
  mutable std::string text_;   // render()'s last result
  mutable bool stale_ = true;  // a family or sample changed since text_ was built
};

/// Serves `registry` at http://host:port/metrics until destroyed.
class MetricsServer {
 public:
  /// Bounds on what clients may hold (see the file comment); the defaults are the trainer's.
  struct Limits {
    std::chrono::milliseconds request_timeout{5000};  ///< whole request head must arrive within this
    std::chrono::milliseconds io_timeout{2000};       ///< a worker's time on one response
    size_t max_head_bytes = 16384;                    ///< request line + headers
    int max_connections = 64;                         ///< open at once (more: the oldest waiting one is closed)
    int keep_alive_max_requests = 100;                ///< requests per connection
    int workers = 2;                                  ///< threads finishing responses not taken at once (≥ 1)
  };
  /// Binds host:port and starts serving (returns once the socket listens). Throws std::runtime_error naming
  /// host:port when it cannot bind (the port is in use, the address is not local) and when the build lacks
  /// cpp-httplib (saying how to get it); std::invalid_argument for limits that are not positive.
  MetricsServer(std::shared_ptr<MetricsRegistry> registry, const std::string& host, int port);
  MetricsServer(std::shared_ptr<MetricsRegistry> registry, const std::string& host, int port, const Limits& limits);
  ~MetricsServer();  ///< stops the server and joins its thread
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  int port() const { return port_; }

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace yolo11::io
