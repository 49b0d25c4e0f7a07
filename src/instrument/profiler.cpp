// Profiler: stage timers, windows, epoch tables, Nsight capture range; the files it writes (breakdown.csv,
// summary.json, trace.json) are in profiler_report.cpp.
#include "yolo11/core/cpus.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/instrument/whatif.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>
#include <vector>

#include "nvtx.h"
#include "nvtx_ops.h"
#include "profiler_impl.h"
#include "yolo11/core/compat.h"
#include "yolo11/instrument/mfu.h"
#include "yolo11/instrument/range.h"
#include "yolo11/instrument/sampler.h"
#include "yolo11/instrument/trace.h"
#include "yolo11/io/run_dir.h"

namespace yolo11::instrument {

namespace {
// The dtype the CPU peak is measured in: what the step computes in (bfloat16 autocast under amp).
const char* cpu_peak_dtype(const ProfilerOptions& o) { return o.setting.amp ? "bfloat16" : "float32"; }

constexpr std::pair<int64_t, int64_t> kDefaultTraceSteps{5, 25};

}  // namespace

// ---- Impl: windows and epochs ------------------------------------------------------------------------------------
int Profiler::Impl::index_of(const char* name) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name || std::strcmp(names[i], name) == 0) return static_cast<int>(i);
  }
  names.push_back(name);
  per_epoch.push_back(0);
  gpu_timed.push_back(cuda_timing ? 1 : 0);
  cur.seconds.resize(names.size(), 0.0);
  cur.ran.resize(names.size(), 0);
  epoch_acc.stage.resize(names.size());
  run_acc.stage.resize(names.size());
  epoch_level.resize(names.size());
  return static_cast<int>(names.size() - 1);
}

void Profiler::Impl::new_step_record() {
  cur.seconds.assign(names.size(), 0.0);
  cur.ran.assign(names.size(), 0);
  cur.pending.clear();
  cur.loader_cpu = -1;
  cur.loader_cpu_wait = 0;
}

double Profiler::Impl::read_loader_clock() const {
  if (!loader_cpu_clock) return -1;
  try {
    return loader_cpu_clock();
  } catch (const std::exception&) {
    return -1;
  }
}

// GPU durations of the steps in the window: non-blocking queries first, then a wait on what is left
// (one event wait per window, never a device-wide sync per stage).
void Profiler::Impl::resolve(std::vector<StepRecord>& steps) {
  for (auto& r : steps) {
    for (auto& [idx, slot] : r.pending) {
      std::optional<double> ms = events->query(slot);
      const double s = (ms ? *ms : events->wait(slot)) / 1000.0;
      r.seconds[idx] += s;
      events->release(slot);
    }
    r.pending.clear();
  }
}

// val / checkpoint / log, and any stage opened outside a step, each as its share of the epoch's wall time.
std::vector<StageSummary> Profiler::Impl::epoch_level_summaries(double epoch_wall) const {
  std::vector<StageSummary> out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (epoch_level[i].empty()) continue;
    StageSummary st;
    st.name = names[i];
    st.per_epoch = true;
    summarize_samples(epoch_level[i], st);
    st.share = epoch_wall > 0 ? st.total / epoch_wall : 0.0;
    out.push_back(std::move(st));
  }
  return out;
}

WindowSummary Profiler::Impl::summarize(const std::string& kind, const Accum& a, bool with_epoch_level, double epoch_wall) const {
  WindowSummary w;
  w.kind = kind;
  w.epoch = a.epoch;
  w.first_step = a.first_step;
  w.last_step = a.last_step;
  w.steps = a.steps();
  w.images = a.images;
  summarize_samples(a.step, w.step);
  w.step.name = "step";
  w.step.share = 1.0;
  w.images_per_s = w.step.total > 0 ? static_cast<double>(a.images) / w.step.total : 0.0;
  for (size_t i = 0; i < names.size(); ++i) {
    if (per_epoch[i]) continue;
    StageSummary s;
    s.name = names[i];
    summarize_samples(a.stage[i], s);
    s.share = w.step.total > 0 ? s.total / w.step.total : 0.0;
    if (s.count > 0 || i < kStepStages.size()) w.stages.push_back(s);
  }
  if (with_epoch_level) {
    for (auto& st : epoch_level_summaries(epoch_wall)) w.stages.push_back(std::move(st));
  }
  if (a.loader_cpu_steps > 0 && a.steps() > 0) {  // steps without a reading (none in practice) at the others' rate
    const double k = static_cast<double>(a.steps()) / static_cast<double>(a.loader_cpu_steps);
    w.loader_cpu_s = a.loader_cpu * k;
    w.loader_cpu_wait_s = a.loader_cpu_wait * k;
  }
  if (sampler && a.t1_ns > a.t0_ns) {
    const SampleAggregate g = sampler->aggregate(a.t0_ns, a.t1_ns);
    w.gpu_util = g.gpu_util;
    w.gpu_mem_mb = g.gpu_mem_mb;
    w.peak_alloc_mb = g.peak_alloc_mb;
    w.cpu_percent = g.cpu_percent;
    w.rss_mb = g.rss_mb;
    w.sm_active = g.sm_active;
    w.sm_occupancy = g.sm_occupancy;
    w.tensor_active = g.tensor_active;
    w.dram_bw = g.dram_bw;
    w.contention = g.contention;
  }
  w.set_compute_expected(o.compute_expected_s);
  if (const auto u = instrument::mfu(o.train_flops_per_image, w.images_per_s, o.peak_flops); u && !peak_rejected) {
    if (*u > 1.0 && !cuda_timing) {
      // A measured CPU peak below what training achieves was measured on a busy machine: say so once, drop it from
      // the cache so the next run measures again, and report MFU as n/a rather than above 100 %.
      peak_rejected = true;
      const bool forgot = forget_cpu_peak(cpu_peak_dtype(o));
      spdlog::warn("MFU n/a: training achieves {:.3g} TFLOP/s, above the CPU peak {:.3g} TFLOP/s ({}), which must have "
                   "been measured on a busy machine; {}",
                   o.train_flops_per_image * w.images_per_s / 1e12, o.peak_flops / 1e12, o.peak_source,
                   forgot ? "removed from the cache, the next run measures it again" : "it was not cached");
    } else {
      w.mfu = *u;
      w.tflops = o.train_flops_per_image * w.images_per_s / 1e12;
    }
  }
  return w;
}

void Profiler::Impl::add_to(Accum& a, const StepRecord& r) {
  if (a.first_step < 0) a.first_step = r.step;
  a.last_step = r.step;
  a.images += r.images;
  a.step.push_back(r.wall);
  for (size_t i = 0; i < names.size(); ++i) {
    if (r.ran[i]) a.stage[i].push_back(r.seconds[i]);
  }
  if (r.loader_cpu >= 0) {
    a.loader_cpu += r.loader_cpu;
    a.loader_cpu_wait += std::min(r.loader_cpu_wait, r.loader_cpu);
    ++a.loader_cpu_steps;
  }
}

void Profiler::Impl::close_window(int64_t t_end) {
  if (window_steps.empty()) return;
  if (cuda_timing) resolve(window_steps);
  Accum a;
  a.reset(names.size());
  a.epoch = epoch;
  a.t0_ns = window_t0;
  a.t1_ns = t_end;
  for (const auto& r : window_steps) {
    add_to(a, r);
    add_to(epoch_acc, r);
    add_to(run_acc, r);
  }
  window_steps.clear();
  window_t0 = t_end;
  last_window = summarize("window", a, false, 0);
  have_window = true;
  const Diagnosis d = instrument::diagnose(last_window, ctx, o.thresholds);
  const std::string line = format_window_line(last_window);
  pending_line = line;
  if (o.log_lines) spdlog::info("{}", line);
  if (!have_diag || d.bottleneck != last_diag.bottleneck) {  // train.log: the console has the run's at the end
    io::file_log()->info("diagnosis (steps {}-{}): {}", a.first_step, a.last_step, d.to_string());
  }
  last_diag = d;
  have_diag = true;
  ++windows;
  write_csv(last_window, d);
}

void Profiler::Impl::close_warmup(int64_t t_end) {
  if (warmup_rec.empty()) return;
  if (cuda_timing) resolve(warmup_rec);
  Accum a;
  a.reset(names.size());
  a.epoch = epoch;
  a.t0_ns = window_t0;
  a.t1_ns = t_end;
  for (const auto& r : warmup_rec) add_to(a, r);
  warmup_rec.clear();
  window_t0 = t_end;
  warmup = summarize("warmup", a, false, 0);
  io::file_log()->info("warm-up (steps {}-{}, kept out of the windows, tables and diagnosis): {}", a.first_step,
                       a.last_step, format_window_line(*warmup));
  write_csv(*warmup, Diagnosis{});
}

void Profiler::Impl::close_epoch_range(int64_t end) {
  if (!epoch_range_open) return;
  epoch_range_open = false;
  nvtx::end(epoch_nvtx);
  trace::complete(fmt::format("epoch {}", closed_epoch.epoch), epoch_t0, end, closed_epoch.epoch, epoch_traced);
  WindowSummary late = closed_epoch;
  late.stages = epoch_level_summaries(closed_epoch_wall);
  for (auto& samples : epoch_level) samples.clear();
  if (late.stages.empty()) return;
  write_csv(late, Diagnosis{}, /*with_step_row=*/false);
  if (!epochs_json.empty()) {
    for (const auto& st : late.stages) {
      epochs_json.back()["stages"].push_back({{"name", st.name}, {"count", st.count}, {"total_s", st.total},
                                              {"mean_s", st.mean}, {"p50_s", st.p50}, {"p95_s", st.p95},
                                              {"max_s", st.max}, {"share", st.share}, {"per_epoch", true},
                                              {"after_table", true}});
    }
  }
}

void Profiler::Impl::find_peak() {
  if (o.cuda) {
    const std::string gpu = sampler->gpu_name();
    const char* dtype = o.setting.amp ? "bf16" : "tf32";
    if (const auto p = gpu_peak_flops(gpu, dtype)) {
      o.peak_flops = *p;
      o.peak_source = fmt::format("table: {} dense {}", gpu, dtype);
    } else {
      o.peak_source = gpu.empty() ? "GPU name unknown (no NVML): MFU n/a" : fmt::format("{} not in the peak table: MFU n/a", gpu);
    }
  } else {
    const CpuPeak p = cpu_peak_flops(cpu_peak_dtype(o));
    o.peak_flops = p.flops_per_s;
    o.peak_source = fmt::format("CPU measured{}: {} {}, {} threads, {}", p.cached ? " (cached)" : "", p.kernel, p.dtype,
                                p.threads, p.cpu);
  }
  spdlog::info("MFU: {:.3g} GFLOPs per training image (3 x forward), peak {}", o.train_flops_per_image / 1e9,
               o.peak_flops > 0 ? fmt::format("{:.3g} TFLOP/s ({})", o.peak_flops / 1e12, o.peak_source) : o.peak_source);
}

// ---- Stage --------------------------------------------------------------------------------------------------------
Stage::Stage(Stage&& o) noexcept
    : prof_(o.prof_), index_(o.index_), start_ns_(o.start_ns_), event_slot_(o.event_slot_) {
  o.prof_ = nullptr;
}

void Stage::end() {
  Profiler* p = prof_;
  prof_ = nullptr;
  p->end_stage(*this);
}

// ---- Profiler -------------------------------------------------------------------------------------------------------
Profiler::Profiler(ProfilerOptions opts) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.o = std::move(opts);
  ProfilerOptions& o = m.o;
  enabled_ = o.level != Level::off;
  set_ranges_enabled(enabled_);
  if (!enabled_) {
    if (o.profile_ops) spdlog::warn("profile_ops ignored: it needs instrument=basic or full (now off)");
    return;
  }
  if (o.warmup_steps < 0)
    throw std::runtime_error(fmt::format("instrument: warmup_steps={} must be ≥ 0", o.warmup_steps));
  if (o.log_every < 1) throw std::runtime_error(fmt::format("instrument: log_every={} must be ≥ 1", o.log_every));
  for (const auto* r : {&o.trace_steps, &o.profile_steps, &o.profile_ops}) {
    if (*r && ((*r)->first < 0 || (*r)->second <= (*r)->first)) {
      throw std::runtime_error(fmt::format("instrument: step range {}:{} is empty or negative; use START:STOP with "
                                           "0 ≤ START < STOP (global step indices)",
                                           (*r)->first, (*r)->second));
    }
  }
  if (o.level == Level::full && !o.trace_steps) o.trace_steps = kDefaultTraceSteps;
  AdviceContext& s = o.setting;
  if (s.cores <= 0) {
    const core::CpuBudget b = core::usable_cores();
    s.cores = b.usable;
    if (s.affinity_cores <= 0) s.affinity_cores = b.affinity;
    if (s.quota_cores < 0 && b.quota) s.quota_cores = b.quota->cores, s.quota_file = b.quota->file;
  }
  s.sync = o.sync;
  m.ctx = s;
  m.ctx.cuda_built = compat::built_with_cuda();
  m.ctx.cuda_devices = m.ctx.cuda_built ? compat::cuda_device_count() : 0;
  m.cuda_timing = o.cuda && !o.sync && compat::cuda_available();
  if (o.cuda && !compat::cuda_available()) {
    spdlog::warn("instrument: cuda=true but this build/device has no CUDA; timing with wall clock");
  }
  if (m.cuda_timing) m.events = std::make_unique<compat::EventTimer>(o.cuda_device);
  for (const char* n : kStepStages) m.index_of(n);
  for (const char* n : kEpochStages) m.per_epoch[static_cast<size_t>(m.index_of(n))] = 1;
  for (size_t i = 0; i < m.names.size(); ++i) {
    m.gpu_timed[i] =
        m.cuda_timing && !m.per_epoch[i] && std::strcmp(m.names[i], stage_name(StepStage::dataloader)) != 0;
  }
  m.epoch_acc.reset(m.names.size());
  m.run_acc.reset(m.names.size());
  m.new_step_record();
  if (!o.run_dir.empty()) std::filesystem::create_directories(o.run_dir);
  if (o.profile_steps && !compat::built_with_cuda()) {
    spdlog::info("instrument: profile_steps={}:{} needs a CUDA build (cudaProfilerStart/Stop); ignored on this "
                 "CPU-only build",
                 o.profile_steps->first, o.profile_steps->second);
  }
  if (o.nvtx_ops) {
    if (nvtx::ops_start()) spdlog::info("instrument: nvtx_ops: an NVTX range per operator, nested in the stage ranges");
    else spdlog::warn("instrument: nvtx_ops=true needs NVTX3 headers at build time (see docs/nsight.md); ignored");
  }
  if (o.profile_ops) {
    OpsProfileOptions oo;
    oo.start = o.profile_ops->first;
    oo.stop = o.profile_ops->second;
    oo.top = o.profile_ops_top;
    oo.shapes = o.profile_ops_shapes;
    oo.memory = o.profile_ops_memory;
    oo.cuda = o.cuda && compat::cuda_available();
    oo.run_dir = o.run_dir;
    m.ops = std::make_unique<OpsProfiler>(oo);
  }
  m.t_start = now_ns();
  m.csv_last_flush = m.t_start;
  m.window_t0 = m.t_start;
  m.last_step_end = m.t_start;
  trace::clear();
  trace::set_origin(m.t_start);
  trace::set_thread_name("trainer");
  nvtx::name_thread("trainer");
  m.sampler = std::make_unique<Sampler>(o.sample_hz, o.cuda, o.cuda_device);
  if (o.train_flops_per_image > 0 && o.peak_flops <= 0) m.find_peak();
  if (o.cuda) compat::reset_peak_memory(o.cuda_device);
  m.sampler->start();
  spdlog::debug("instrument: level={} log_every={} trace_steps={} cuda_events={} nvml={}", to_string(o.level),
                o.log_every, o.trace_steps ? fmt::format("{}:{}", o.trace_steps->first, o.trace_steps->second) : "-",
                m.cuda_timing, m.sampler->has_nvml());
}

Profiler::~Profiler() {
  try {
    finish();
  } catch (const std::exception& e) {
    spdlog::error("instrument: finish failed: {}", e.what());
  }
}

void Profiler::begin_epoch(int64_t epoch) {
  if (!enabled_) return;
  Impl& m = *impl_;
  if (m.epoch_open) end_epoch();
  m.close_epoch_range(now_ns());
  m.epoch = epoch;
  m.epoch_open = true;
  m.epoch_traced = trace::recording();
  m.epoch_t0 = now_ns();
  m.epoch_acc.reset(m.names.size());
  m.epoch_acc.epoch = epoch;
  m.epoch_acc.t0_ns = m.epoch_t0;
  m.window_t0 = m.epoch_t0;
  m.loader_cpu_last = m.read_loader_clock();  // the loader's work between epochs (prefetch during val) is not a step's
  const std::string msg = fmt::format("epoch {}", epoch);
  m.epoch_nvtx = nvtx::start(msg.c_str());
}

void Profiler::begin_step(int64_t step) {
  if (!enabled_) return;
  Impl& m = *impl_;
  const ProfilerOptions& o = m.o;
  if (m.step_open) end_step(0);
  // Trace and Nsight ranges switch at step boundaries: [first, last).
  if (o.trace_steps) {
    const bool in = step >= o.trace_steps->first && step < o.trace_steps->second;
    if (in != trace::recording()) trace::set_recording(in);
    if (in) m.epoch_traced = true;
  }
  if (o.profile_steps && compat::built_with_cuda()) {
    if (!m.profiling && !m.profile_done && step >= o.profile_steps->first && step < o.profile_steps->second) {
      m.profiling = compat::profiler_start();
      if (m.profiling) {
        spdlog::info("instrument: cudaProfilerStart at step {}", step);
      } else {
        spdlog::warn("instrument: cuProfilerStart failed (no libcuda?); profile_steps ignored");
        m.profile_done = true;
      }
    } else if (m.profiling && step >= o.profile_steps->second) {
      compat::synchronize(o.cuda_device);
      compat::profiler_stop();
      m.profiling = false;
      m.profile_done = true;
      spdlog::info("instrument: cudaProfilerStop at step {}", step);
    }
  }
  if (m.ops) m.ops->begin_step(step, m.have_window ? m.last_window.step.mean : -1.0);
  m.step = step;
  m.step_open = true;
  m.cur.step = step;
  const std::string msg = fmt::format("step {}", step);
  nvtx::push(msg.c_str());
  m.step_t0 = now_ns();
}

Stage Profiler::stage(const char* name) {
  Stage s;
  if (!enabled_) return s;
  Impl& m = *impl_;
  s.prof_ = this;
  s.index_ = m.index_of(name);
  if (m.ops) m.ops->push(name);
  nvtx::push(name);
  s.start_ns_ = now_ns();
  if (m.gpu_timed[static_cast<size_t>(s.index_)] && m.step_open) s.event_slot_ = m.events->start();
  if (s.index_ == 0 && m.loader_cpu_clock) m.loader_cpu_wait_t0 = m.read_loader_clock();  // "dataloader": the wait
  return s;
}

void Profiler::end_stage(Stage& s) {
  Impl& m = *impl_;
  const auto idx = static_cast<size_t>(s.index_);
  if (s.event_slot_ >= 0) m.events->stop(s.event_slot_);
  if (m.o.sync && m.o.cuda) compat::synchronize(m.o.cuda_device);
  const int64_t end = now_ns();
  nvtx::pop();
  if (m.ops) m.ops->pop();
  trace::complete(m.names[idx], s.start_ns_, end);
  const double wall = static_cast<double>(end - s.start_ns_) * 1e-9;
  if (idx == 0 && m.loader_cpu_wait_t0 >= 0) {  // the loader's CPU time while the trainer waited for this batch
    const double v = m.read_loader_clock();
    if (v >= m.loader_cpu_wait_t0) m.cur.loader_cpu_wait += v - m.loader_cpu_wait_t0;
    m.loader_cpu_wait_t0 = -1;
  }
  if (m.step_open && !m.per_epoch[idx]) {
    m.cur.ran[idx] = 1;
    if (s.event_slot_ >= 0) {
      m.cur.pending.emplace_back(s.index_, s.event_slot_);
    } else {
      m.cur.seconds[idx] += wall;
    }
  } else {
    if (s.event_slot_ >= 0) m.events->release(s.event_slot_);
    m.epoch_level[idx].push_back(wall);
  }
}

void Profiler::end_step(int64_t images) {
  if (!enabled_) return;
  Impl& m = *impl_;
  if (!m.step_open) {  // end_step without begin_step: the step spans from the previous end_step
    m.step_t0 = m.last_step_end;
    m.cur.step = ++m.step;
  }
  const int64_t end = now_ns();
  nvtx::pop();
  trace::complete(fmt::format("step {}", m.cur.step), m.step_t0, end, m.cur.step);
  if (trace::recording())  // HTA / Kineto consumers find iterations by this name
    trace::complete(fmt::format("ProfilerStep#{}", m.cur.step), m.step_t0, end, m.cur.step);
  m.cur.wall = static_cast<double>(end - m.step_t0) * 1e-9;
  m.cur.images = images;
  if (m.loader_cpu_clock) {  // the loader's CPU time since the previous step's end: this step's share of it
    const double v = m.read_loader_clock();
    if (v >= 0 && m.loader_cpu_last >= 0 && v >= m.loader_cpu_last) m.cur.loader_cpu = v - m.loader_cpu_last;
    m.loader_cpu_last = v;
  }
  if (m.ops && m.ops->active()) {  // our timers over the profiled steps (CUDA-event stages resolve later: n/a)
    for (size_t i = 0; i < m.names.size(); ++i)
      if (m.cur.ran[i] && !m.gpu_timed[i]) m.ops->add_timer(m.names[i], m.cur.seconds[i]);
    m.ops->end_step(m.cur.wall);
  }
  const bool warming = m.steps_seen++ < m.o.warmup_steps;
  (warming ? m.warmup_rec : m.window_steps).push_back(std::move(m.cur));
  m.new_step_record();
  m.step_open = false;
  m.last_step_end = end;
  if (warming) {
    if (m.steps_seen == m.o.warmup_steps) m.close_warmup(end);
  } else if (static_cast<int64_t>(m.window_steps.size()) >= m.o.log_every) {
    m.close_window(end);
  }
}

std::optional<std::string> Profiler::take_window_line() {
  if (!enabled_) return std::nullopt;
  std::optional<std::string> l;
  std::swap(l, impl_->pending_line);
  return l;
}

void Profiler::set_loader_cpu_clock(std::function<double()> cumulative_cpu_s) {
  if (!enabled_) return;
  impl_->loader_cpu_clock = std::move(cumulative_cpu_s);
  impl_->loader_cpu_last = impl_->read_loader_clock();
}

void Profiler::set_compute_expected(double step_s) { impl_->o.compute_expected_s = step_s; }

void Profiler::set_queue_depth(size_t depth) {
  if (!enabled_) return;
  impl_->sampler->set_queue_depth(static_cast<double>(depth));
  trace::counter("queue depth", static_cast<double>(depth), now_ns());
}

std::string Profiler::end_epoch() {
  if (!enabled_) return {};
  Impl& m = *impl_;
  if (m.step_open) end_step(0);
  const int64_t end = now_ns();
  m.close_warmup(end);  // an epoch shorter than the warm-up
  m.close_window(end);
  if (!m.epoch_open) return {};
  m.epoch_open = false;
  m.epoch_range_open = true;  // closed by the next begin_epoch() or finish()
  m.epoch_acc.epoch = m.epoch;
  m.epoch_acc.t1_ns = end;
  const double epoch_wall = static_cast<double>(end - m.epoch_t0) * 1e-9;
  WindowSummary w = m.summarize("epoch", m.epoch_acc, true, epoch_wall);
  const Diagnosis d = instrument::diagnose(w, m.ctx, m.o.thresholds);
  m.write_csv(w, d);
  nlohmann::json j = m.to_json(w, &d);
  j["wall_s"] = epoch_wall;
  // Memory at each epoch end: the per-epoch series that tells a leak from allocator retention (memory_trend).
  const ProcessMemory mem = process_memory();
  auto na = [](double v) { return v >= 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
  j["memory"] = {{"rss_mb", na(mem.rss_mb)},   {"rss_anon_mb", na(mem.rss_anon_mb)},
                 {"rss_file_mb", na(mem.rss_file_mb)}, {"heap_in_use_mb", na(mem.heap_in_use_mb)},
                 {"heap_free_mb", na(mem.heap_free_mb)}, {"heap_mmap_mb", na(mem.heap_mmap_mb)},
                 {"arenas", mem.arenas},       {"fds", mem.fds},
                 {"threads", mem.threads}};
  if (m.epoch_memory.empty()) m.memory_first_epoch = m.epoch + 1;
  m.epoch_memory.push_back(mem);
  if (!m.memory_warned) {
    const std::string trend = memory_trend(m.epoch_memory, m.memory_first_epoch);
    if (!trend.empty()) spdlog::warn("{}", trend), m.memory_warned = true;
  }
  m.epochs_json.push_back(std::move(j));
  m.closed_epoch = w;
  m.closed_epoch_wall = epoch_wall;
  for (auto& v : m.epoch_level) v.clear();  // stages ending from here on are this epoch's "late" stages
  std::string table = format_table(w, m.o.epochs) + "diagnosis: " + d.to_string();
  const std::string wi = format_what_if(what_if(w, m.ctx.workers, cpu_share(m.ctx)), w.step.mean);
  if (!wi.empty()) table += "\n" + wi;
  return table;
}

void Profiler::finish() {
  if (!enabled_ || impl_->finished) return;
  Impl& m = *impl_;
  if (m.epoch_open) end_epoch();
  m.close_warmup(now_ns());
  m.close_window(now_ns());
  m.close_epoch_range(now_ns());
  m.finished = true;
  if (m.ops) {
    m.ops->finish();
    if (!m.ops->report() && m.o.profile_ops)  // the window never opened: say so rather than leave no ops.* silently
      spdlog::warn("profile_ops={}:{}: no step of this run fell in the window, so no ops.txt / ops.csv were written "
                   "(global steps count from 0 over all epochs; see the step numbers in the window lines)",
                   m.o.profile_ops->first, m.o.profile_ops->second);
  }
  if (m.o.nvtx_ops) nvtx::ops_stop();
  const bool traced = trace::recording() || trace::event_count() > 0;
  trace::set_recording(false);
  if (m.profiling) {
    compat::synchronize(m.o.cuda_device);
    compat::profiler_stop();
    m.profiling = false;
  }
  m.sampler->sample_now();
  m.sampler->stop();
  m.write_summary(traced);
  m.flush_csv();
  if (m.csv.is_open()) m.csv.close();
}

Diagnosis Profiler::diagnose() const {
  if (!enabled_) return {};
  const Impl& m = *impl_;
  if (m.have_diag) return m.last_diag;
  const WindowSummary run = m.summarize("run", m.run_acc, false, 0);
  return instrument::diagnose(run, m.ctx, m.o.thresholds);
}

const WindowSummary& Profiler::last_window() const { return impl_->last_window; }

WindowSummary Profiler::run_summary() const {
  const Impl& m = *impl_;
  return m.summarize("run", m.run_acc, false, 0);
}

const ProfilerOptions& Profiler::options() const { return impl_->o; }

}  // namespace yolo11::instrument
