// Loader internals: per-transform timing of the loader workers (see loader_stats.h).
#include "yolo11/data/loader_stats.h"

#include <fmt/format.h>

#include <pthread.h>

#include <algorithm>
#include <ctime>

namespace yolo11::data {

namespace {
using Clock = std::chrono::steady_clock;
int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(); }

constexpr size_t kParts = kLoaderParts.size();
constexpr size_t kOther = static_cast<size_t>(LoaderPart::other);

// What one thread records while it builds one batch.
struct BatchRecord {
  std::array<std::vector<float>, kParts> ms;  // per part, each call's duration
  std::array<int64_t, kParts> ns{};
  int64_t t0 = 0;
};
thread_local BatchRecord* tl_batch = nullptr;

double percentile(std::vector<float>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}
}  // namespace

ScopedPart::ScopedPart(LoaderPart p) : part_(p) {
  if (tl_batch != nullptr) {
    on_ = true;
    t0_ = now_ns();
  }
}

ScopedPart::~ScopedPart() {
  if (!on_ || tl_batch == nullptr) return;
  const int64_t d = now_ns() - t0_;
  const auto k = static_cast<size_t>(part_);
  tl_batch->ns[k] += d;
  tl_batch->ms[k].push_back(static_cast<float>(d * 1e-6));
}

struct LoaderRecorder::Impl {
  std::mutex m;
  std::vector<BatchRecord> current;             // per worker, the batch being built
  std::array<std::vector<float>, kParts> ms;    // since the last take
  std::array<int64_t, kParts> ns{};
  std::array<int64_t, kParts> calls{};
  std::vector<int64_t> busy_ns;
  int64_t t_take = 0, batches = 0, images = 0;
  std::vector<clockid_t> cpu_clocks;  // per registered worker thread (CLOCK_THREAD_CPUTIME_ID of that thread)
};

LoaderRecorder::LoaderRecorder(int workers) : impl_(std::make_unique<Impl>()) {
  const size_t n = static_cast<size_t>(std::max(1, workers));
  impl_->current.resize(n);
  impl_->busy_ns.assign(n, 0);
  impl_->t_take = now_ns();
}

LoaderRecorder::~LoaderRecorder() = default;

void LoaderRecorder::register_worker_thread(int /*worker*/) {
  clockid_t id;
  if (pthread_getcpuclockid(pthread_self(), &id) != 0) return;  // no per-thread CPU clock: cpu_seconds() leaves it out
  std::lock_guard<std::mutex> lk(impl_->m);
  impl_->cpu_clocks.push_back(id);
}

double LoaderRecorder::cpu_seconds() const {
  std::lock_guard<std::mutex> lk(impl_->m);
  double s = 0;
  for (const clockid_t id : impl_->cpu_clocks) {
    timespec ts{};
    if (clock_gettime(id, &ts) == 0) s += static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return s;
}

void LoaderRecorder::begin_batch(int worker) {
  BatchRecord& r = impl_->current.at(static_cast<size_t>(worker));
  for (auto& v : r.ms) v.clear();
  r.ns.fill(0);
  r.t0 = now_ns();
  tl_batch = &r;
}

void LoaderRecorder::end_batch(int worker, int64_t images) {
  BatchRecord& r = impl_->current.at(static_cast<size_t>(worker));
  tl_batch = nullptr;
  const int64_t busy = now_ns() - r.t0;
  int64_t covered = 0;
  for (size_t k = 0; k < kParts; ++k) covered += r.ns[k];
  const int64_t other = std::max<int64_t>(0, busy - covered);
  std::lock_guard<std::mutex> lk(impl_->m);
  constexpr size_t kMaxSamples = 200000;  // per part between take()s: percentiles from the first ones, bounded memory
  for (size_t k = 0; k < kParts; ++k) {
    impl_->ns[k] += r.ns[k];
    impl_->calls[k] += static_cast<int64_t>(r.ms[k].size());
    if (impl_->ms[k].size() < kMaxSamples) impl_->ms[k].insert(impl_->ms[k].end(), r.ms[k].begin(), r.ms[k].end());
  }
  impl_->ns[kOther] += other;
  ++impl_->calls[kOther];
  if (impl_->ms[kOther].size() < kMaxSamples) impl_->ms[kOther].push_back(static_cast<float>(other * 1e-6));
  impl_->busy_ns[static_cast<size_t>(worker)] += busy;
  ++impl_->batches;
  impl_->images += images;
}

LoaderReport LoaderRecorder::take() {
  LoaderReport rep;
  std::lock_guard<std::mutex> lk(impl_->m);
  const int64_t t = now_ns();
  rep.wall_s = static_cast<double>(t - impl_->t_take) * 1e-9;
  for (int64_t b : impl_->busy_ns) {
    rep.worker_busy_s.push_back(static_cast<double>(b) * 1e-9);
    rep.busy_s += static_cast<double>(b) * 1e-9;
  }
  for (size_t k = 0; k < kParts; ++k) {
    instrument::LoaderPartStats s;
    s.name = kLoaderParts[k];
    s.count = impl_->calls[k];
    s.total_s = static_cast<double>(impl_->ns[k]) * 1e-9;
    s.p50_s = percentile(impl_->ms[k], 0.5) / 1e3;
    s.p95_s = percentile(impl_->ms[k], 0.95) / 1e3;
    s.share = rep.busy_s > 0 ? s.total_s / rep.busy_s : 0;
    rep.parts.push_back(s);
    impl_->ms[k].clear();
    impl_->ns[k] = 0;
    impl_->calls[k] = 0;
  }
  rep.batches = impl_->batches;
  rep.images = impl_->images;
  std::fill(impl_->busy_ns.begin(), impl_->busy_ns.end(), 0);
  impl_->batches = impl_->images = 0;
  impl_->t_take = t;
  return rep;
}

double LoaderReport::utilisation() const {
  const double w = wall_s * static_cast<double>(std::max<size_t>(1, worker_busy_s.size()));
  return w > 0 ? busy_s / w : 0;
}

std::string LoaderReport::table() const {
  std::string s = fmt::format("{:<12} {:>8} {:>10} {:>9} {:>9} {:>8}\n", "loader part", "count", "total", "p50",
                              "p95", "% busy");
  for (const auto& p : parts)
    if (p.count > 0)
      s += fmt::format("{:<12} {:>8} {:>9.3f}s {:>7.2f}ms {:>7.2f}ms {:>7.1f}%\n", p.name, p.count, p.total_s,
                       p.p50_s * 1e3, p.p95_s * 1e3, p.share * 100);
  std::string per_worker;
  for (size_t i = 0; i < worker_busy_s.size(); ++i)
    per_worker += fmt::format("{}{:.0f}%", i ? " " : "", wall_s > 0 ? worker_busy_s[i] / wall_s * 100 : 0.0);
  s += fmt::format("loader: {} batches, {} images, busy {:.3f}s over {:.3f}s wall, utilisation {:.0f}% (per worker: {})",
                   batches, images, busy_s, wall_s, utilisation() * 100, per_worker);
  return s;
}

}  // namespace yolo11::data
