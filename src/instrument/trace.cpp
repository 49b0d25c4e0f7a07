// Chrome trace recorder: per-thread buffers registered in one process-wide registry.
#include "yolo11/instrument/trace.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <spdlog/fmt/fmt.h>
#include <string>
#include <vector>

#include "yolo11/io/file.h"

namespace yolo11::instrument {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace trace {
namespace {

constexpr int64_t kMaxEvents = 2'000'000;  // ~250 MB of JSON; beyond it events are dropped and counted

struct Event {
  const char* name = nullptr;  // literal, or nullptr when `owned` holds the name
  std::string owned;
  int64_t ts_ns = 0, dur_ns = 0;
  double value = 0;
  int64_t arg = 0;
  char ph = 'X';
  bool has_arg = false;
};

struct ThreadBuffer {
  std::mutex mutex;
  std::vector<Event> events;
  uint32_t tid = 0;
  std::string name;
};

struct Registry {
  std::mutex mutex;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  std::atomic<bool> recording{false};
  std::atomic<int64_t> origin_ns{0};
  std::atomic<int64_t> count{0};
  std::atomic<int64_t> dropped{0};
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: threads may record during static destruction
  return *r;
}

ThreadBuffer& this_thread_buffer() {
  thread_local std::shared_ptr<ThreadBuffer> buf;
  if (!buf) {
    buf = std::make_shared<ThreadBuffer>();
    buf->tid = static_cast<uint32_t>(syscall(SYS_gettid));
    char os_name[32] = {0};
    if (pthread_getname_np(pthread_self(), os_name, sizeof(os_name)) == 0) buf->name = os_name;
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.buffers.push_back(buf);
  }
  return *buf;
}

bool reserve_slot() {
  Registry& r = registry();
  if (r.count.fetch_add(1, std::memory_order_relaxed) >= kMaxEvents) {
    r.count.fetch_sub(1, std::memory_order_relaxed);
    r.dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void append(Event&& e) {
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.events.push_back(std::move(e));
}

}  // namespace

bool recording() { return registry().recording.load(std::memory_order_relaxed); }

void set_recording(bool on) {
  Registry& r = registry();
  if (on) {
    int64_t expected = 0;
    r.origin_ns.compare_exchange_strong(expected, now_ns());
  }
  r.recording.store(on, std::memory_order_relaxed);
}

void set_origin(int64_t origin_ns) { registry().origin_ns.store(origin_ns); }

void complete(const char* name, int64_t start_ns, int64_t end_ns) {
  if (!recording() || !reserve_slot()) return;
  Event e;
  e.name = name;
  e.ts_ns = start_ns;
  e.dur_ns = std::max<int64_t>(0, end_ns - start_ns);
  append(std::move(e));
}

void complete(std::string name, int64_t start_ns, int64_t end_ns, int64_t arg, bool even_if_stopped) {
  if ((!even_if_stopped && !recording()) || !reserve_slot()) return;
  Event e;
  e.owned = std::move(name);
  e.ts_ns = start_ns;
  e.dur_ns = std::max<int64_t>(0, end_ns - start_ns);
  e.arg = arg;
  e.has_arg = true;
  append(std::move(e));
}

void counter(const char* name, double value, int64_t ts_ns) {
  if (!recording() || !reserve_slot()) return;
  Event e;
  e.name = name;
  e.ph = 'C';
  e.ts_ns = ts_ns;
  e.value = value;
  append(std::move(e));
}

void set_thread_name(const std::string& name) {
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.name = name;
}

int64_t event_count() { return registry().count.load(); }

void write(const std::string& path, const std::string& other_data_json, const TraceMeta& meta) {
  Registry& r = registry();
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    buffers = r.buffers;
  }
  const int64_t origin = r.origin_ns.load();
  const int pid = static_cast<int>(getpid());
  auto us = [origin](int64_t ns) { return static_cast<double>(ns - origin) / 1000.0; };

  // Streamed as text (a DOM of a million events would need gigabytes); names are escaped through nlohmann.
  std::string out;
  out.reserve(1 << 20);
  out += "{\"schemaVersion\":1,\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  out += fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"tid":0,"args":{{"name":{}}}}})", pid,
                     nlohmann::json(meta.process_name).dump());
  out += fmt::format(R"(,{{"name":"process_labels","ph":"M","pid":{},"tid":0,"args":{{"labels":{}}}}})", pid,
                     nlohmann::json(fmt::format("rank {}{}{}", meta.rank, meta.device.empty() ? "" : ", ", meta.device)).dump());
  out += fmt::format(R"(,{{"name":"process_sort_index","ph":"M","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", pid,
                     meta.rank);
  for (const auto& b : buffers) {
    std::vector<Event> copy;
    std::string name;
    {
      std::lock_guard<std::mutex> lock(b->mutex);
      copy = b->events;
      name = b->name;
    }
    if (copy.empty()) continue;
    if (name.empty()) name = "thread " + std::to_string(b->tid);
    out += fmt::format(",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}", pid,
                       b->tid, nlohmann::json(name).dump());
    // Parents before children at equal start: sort by start, then longer first.
    std::stable_sort(copy.begin(), copy.end(), [](const Event& a, const Event& c) {
      return a.ts_ns != c.ts_ns ? a.ts_ns < c.ts_ns : a.dur_ns > c.dur_ns;
    });
    for (const Event& e : copy) {
      const std::string n = nlohmann::json(e.name != nullptr ? std::string(e.name) : e.owned).dump();
      if (e.ph == 'C') {
        out += fmt::format(",\n{{\"name\":{},\"ph\":\"C\",\"ts\":{:.3f},\"pid\":{},\"tid\":{},\"args\":{{\"value\":{}}}}}", n,
                           us(e.ts_ns), pid, b->tid, std::isfinite(e.value) ? e.value : 0.0);
      } else {
        out += fmt::format(",\n{{\"name\":{},\"cat\":\"user_annotation\",\"ph\":\"X\",\"ts\":{:.3f},\"dur\":{:.3f},\"pid\":{},\"tid\":{}",
                           n, us(e.ts_ns), e.dur_ns / 1000.0, pid, b->tid);
        out += e.has_arg ? fmt::format(",\"args\":{{\"value\":{}}}}}", e.arg) : std::string("}");
      }
    }
  }
  nlohmann::json other = other_data_json.empty() ? nlohmann::json::object() : nlohmann::json::parse(other_data_json);
  other["dropped_events"] = r.dropped.load();
  const nlohmann::json dist = {{"rank", meta.rank}, {"world_size", meta.world_size}, {"backend", meta.backend}};
  out += "\n],\n\"distributedInfo\":" + dist.dump() + ",\n\"otherData\":" + other.dump() + "}\n";
  io::write_file_atomic(path, out);
}

void clear() {
  Registry& r = registry();
  r.recording.store(false);
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& b : r.buffers) {
    std::lock_guard<std::mutex> l(b->mutex);
    b->events.clear();
  }
  r.count.store(0);
  r.dropped.store(0);
  r.origin_ns.store(0);
}

}  // namespace trace
}  // namespace yolo11::instrument
