#pragma once
// A Prometheus scrape endpoint: GET /metrics answers the text exposition format (version 0.0.4) of the values set
// so far; any other path is 404. Served by cpp-httplib (Debian's libcpp-httplib) on its own threads; the trainer
// only calls set()/add(), which take one mutex and never block on a client. Optional at build time
// (metrics_server_available()).
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
  /// The exposition text: "# HELP", "# TYPE" and one line per sample, families in name order.
  std::string render() const;

 private:
  struct Family {
    Type type = Type::gauge;
    std::string help;
    std::map<std::string, double> samples;  // labels → value
  };
  mutable std::mutex mutex_;
  std::map<std::string, Family> families_;
};

/// Serves `registry` at http://host:port/metrics until destroyed.
class MetricsServer {
 public:
  /// Binds host:port and starts serving (returns once the socket listens). Throws std::runtime_error naming
  /// host:port when it cannot bind (the port is in use, the address is not local) and when the build lacks
  /// cpp-httplib (saying how to get it).
  MetricsServer(std::shared_ptr<MetricsRegistry> registry, const std::string& host, int port);
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
