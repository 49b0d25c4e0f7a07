// ScopedRange: NVTX push/pop in domain "yolo11" plus, while a trace is recording, a complete event.
#include "yolo11/instrument/range.h"

#include <atomic>
#include <mutex>
#include <string>

#include "nvtx.h"
#include "yolo11/instrument/trace.h"

namespace yolo11::instrument {

namespace {
std::atomic<bool> g_ranges_enabled{true};
}

void set_ranges_enabled(bool enabled) { g_ranges_enabled.store(enabled, std::memory_order_relaxed); }
bool ranges_enabled() { return g_ranges_enabled.load(std::memory_order_relaxed); }

ScopedRange::ScopedRange(const char* name)
    : name_(name), active_(g_ranges_enabled.load(std::memory_order_relaxed)), start_ns_(0) {
  if (!active_) return;
  nvtx::push(name_);
  if (trace::recording()) start_ns_ = now_ns();
}

ScopedRange::~ScopedRange() {
  if (!active_) return;
  if (start_ns_ != 0) trace::complete(name_, start_ns_, now_ns());
  nvtx::pop();
}

void name_this_thread(const char* name) {
  nvtx::name_thread(name);
  trace::set_thread_name(name);
}

void prepare_threads() {
  static std::once_flag once;
  std::call_once(once, [] { nvtx::initialize(); });
}

}  // namespace yolo11::instrument
