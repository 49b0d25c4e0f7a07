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
#include <httplib.h>
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
  if (added) it->second.type = type, it->second.help = help;
}

void MetricsRegistry::set(const std::string& name, const std::string& labels, double value) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = families_.find(name);
  if (it == families_.end()) throw std::logic_error("metrics: undeclared family " + name);
  it->second.samples[labels] = value;
}

void MetricsRegistry::add(const std::string& name, const std::string& labels, double delta) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = families_.find(name);
  if (it == families_.end()) throw std::logic_error("metrics: undeclared family " + name);
  it->second.samples[labels] += delta;
}

std::string MetricsRegistry::render() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  for (const auto& [name, f] : families_) {
    if (f.samples.empty()) continue;
    out += "# HELP " + name + " " + f.help + "\n";
    out += "# TYPE " + name + (f.type == Type::counter ? " counter\n" : " gauge\n");
    for (const auto& [labels, v] : f.samples)
      out += name + (labels.empty() ? "" : "{" + labels + "}") + " " + number(v) + "\n";
  }
  return out;
}

#if YOLO11_HAS_METRICS_SERVER

struct MetricsServer::Impl {
  httplib::Server server;
  std::thread thread;
  std::atomic<bool> exited{false};

  /// Until the accept loop runs (stop() before that would be lost) or has returned.
  void wait_running() const {
    while (!server.is_running() && !exited.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
};

MetricsServer::MetricsServer(std::shared_ptr<MetricsRegistry> registry, const std::string& host, int port)
    : impl_(std::make_unique<Impl>()), port_(port) {
  auto& s = impl_->server;
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which would let a second server share a busy port.
  s.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  s.new_task_queue = [] { return new httplib::ThreadPool(2); };  // scrapes are rare; httplib's default is ≥ 8 threads
  s.Get("/metrics", [registry](const httplib::Request&, httplib::Response& res) {
    res.set_content(registry->render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 404) res.set_content("not found; metrics are at /metrics\n", "text/plain");
  });
  if (!s.bind_to_port(host, port))
    throw std::runtime_error("metrics_port=" + std::to_string(port) + ": cannot listen on " + host + ":" +
                             std::to_string(port) + " (port " + std::to_string(port) +
                             " in use, or metrics_host is not an address of this machine); choose another "
                             "metrics_port, or metrics_port=0 to turn the endpoint off");
  Impl* m = impl_.get();
  m->thread = std::thread([m] {
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

MetricsServer::MetricsServer(std::shared_ptr<MetricsRegistry>, const std::string& host, int port) : port_(port) {
  throw std::runtime_error("metrics_port=" + std::to_string(port) + ", but this build has no /metrics endpoint "
                           "(cpp-httplib was not found when it was configured): install it (apt-get install "
                           "libcpp-httplib-dev), re-run cmake and rebuild, or set metrics_port=0");
}

MetricsServer::~MetricsServer() = default;

#endif

}  // namespace yolo11::io
