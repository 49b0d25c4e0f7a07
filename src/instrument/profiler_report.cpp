// Profiler reports (src/instrument/profiler_impl.h): breakdown.csv rows, the JSON of a window / epoch / run,
// summary.json (merged across a resume) and trace.json.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "profiler_impl.h"
#include "yolo11/instrument/advice_check.h"
#include "yolo11/instrument/trace.h"
#include "yolo11/io/file.h"

namespace yolo11::instrument {

namespace {
nlohmann::json na_json(double v) { return v >= 0 ? nlohmann::json(v) : nlohmann::json(nullptr); }
}  // namespace

void Profiler::Impl::flush_csv() {
  if (o.run_dir.empty() || csv_buffer.empty()) return;
  const std::string path = o.run_dir + "/breakdown.csv";
  if (!csv.is_open()) {
    const bool fresh = !std::filesystem::exists(path) || std::filesystem::file_size(path) == 0;
    csv.open(path, std::ios::app);
    if (!csv) throw std::runtime_error("instrument: cannot open " + path + " for writing; check run_dir permissions");
    if (fresh) {
      csv << "kind,epoch,first_step,last_step,steps,images,stage,count,mean_s,p50_s,p95_s,max_s,share,"
             "images_per_s,gpu_util,cpu_percent,rss_mb,gpu_mem_mb,diagnosis,rank,tflops,mfu,loader_cpu_s,loader_cpu_"
             "wait_s,"
             "runq_wait,others_cpu,steal,cpu_pressure,memory_pressure,io_pressure,major_faults_per_s,load1,quota_"
             "throttled,"
             "compute_expected_s,compute_speed,voluntary_switches_per_s\n";
    }
  }
  csv << csv_buffer;
  csv.flush();
  csv_buffer.clear();
  csv_last_flush = now_ns();
}

void Profiler::Impl::write_csv(const WindowSummary& w, const Diagnosis& d, bool with_step_row) {
  if (o.run_dir.empty()) return;
  const ContentionRates& c = w.contention;
  auto row = [&](const StageSummary& s, const std::string& diag) {
    csv_buffer += fmt::format(
        "{},{},{},{},{},{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.4f},{:.3f},{:.1f},{:.1f},{:.1f},{:.1f},\"{}\",{},{:.4g}"
        ","
        "{:.4g},{:.4f},{:.4f},{:.4f},{:.3f},{:.3f},{:.4f},{:.4f},{:.4f},{:.1f},{:.2f},{:.3f},{:.4f},{:.3f},{:.1f}\n",
        w.kind, w.epoch, w.first_step, w.last_step, w.steps, w.images, s.name, s.count, s.mean, s.p50, s.p95, s.max,
        s.share, w.images_per_s, w.gpu_util, w.cpu_percent, w.rss_mb, w.gpu_mem_mb, diag, o.rank, w.tflops, w.mfu,
        w.loader_cpu_s, w.loader_cpu_wait_s, c.runq_wait, c.others_cpu, c.steal, c.cpu_pressure, c.memory_pressure,
        c.io_pressure, c.major_faults_per_s, c.load1, c.quota_throttled, w.compute_expected_s, w.compute_speed,
        c.voluntary_switches_per_s);
  };
  for (const auto& s : w.stages) {
    if (s.count > 0) row(s, s.per_epoch ? "per_epoch" : "");
  }
  std::string diag = w.kind == "warmup" ? "warm-up: not diagnosed" : d.to_string();
  std::replace(diag.begin(), diag.end(), '"', '\'');
  if (with_step_row) row(w.step, diag);
  if (w.kind != "window" || now_ns() - csv_last_flush >= kCsvFlushNs) flush_csv();
}

nlohmann::json Profiler::Impl::to_json(const WindowSummary& w, const Diagnosis* d) const {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : w.stages) {
    if (s.count == 0) continue;
    stages.push_back({{"name", s.name}, {"count", s.count}, {"total_s", s.total}, {"mean_s", s.mean},
                      {"p50_s", s.p50}, {"p95_s", s.p95}, {"max_s", s.max}, {"share", s.share},
                      {"per_epoch", s.per_epoch}});
  }
  auto na = [](double v) { return v >= 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j = {{"kind", w.kind},
                      {"epoch", w.epoch},
                      {"first_step", w.first_step},
                      {"last_step", w.last_step},
                      {"steps", w.steps},
                      {"images", w.images},
                      {"images_per_s", w.images_per_s},
                      {"step",
                       {{"mean_s", w.step.mean},
                        {"p50_s", w.step.p50},
                        {"p95_s", w.step.p95},
                        {"max_s", w.step.max},
                        {"total_s", w.step.total}}},
                      {"stages", stages},
                      {"gpu_util", na(w.gpu_util)},
                      {"gpu_mem_mb", na(w.gpu_mem_mb)},
                      {"peak_alloc_mb", na(w.peak_alloc_mb)},
                      {"cpu_percent", na(w.cpu_percent)},
                      {"rss_mb", na(w.rss_mb)},
                      {"sm_active", na(w.sm_active)},
                      {"sm_occupancy", na(w.sm_occupancy)},
                      {"tensor_active", na(w.tensor_active)},
                      {"dram_bw", na(w.dram_bw)},
                      {"tflops", na(w.tflops)},
                      {"mfu", na(w.mfu)},
                      {"loader_cpu_s", na(w.loader_cpu_s)},
                      {"loader_cpu_wait_s", na(w.loader_cpu_wait_s)},
                      {"compute_expected_s", na(w.compute_expected_s)},
                      {"compute_speed", na(w.compute_speed)},
                      {"contention",
                       {{"runq_wait", na(w.contention.runq_wait)},
                        {"others_cpu", na(w.contention.others_cpu)},
                        {"steal", na(w.contention.steal)},
                        {"cpu_pressure", na(w.contention.cpu_pressure)},
                        {"memory_pressure", na(w.contention.memory_pressure)},
                        {"io_pressure", na(w.contention.io_pressure)},
                        {"major_faults_per_s", na(w.contention.major_faults_per_s)},
                        {"load1", na(w.contention.load1)},
                        {"quota_throttled", na(w.contention.quota_throttled)},
                        {"voluntary_switches_per_s", na(w.contention.voluntary_switches_per_s)}}}};
  if (d != nullptr) {
    j["diagnosis"] = {{"bottleneck", to_string(d->bottleneck)}, {"reason", d->reason}, {"advice", d->advice},
                      {"data_share", d->data_share},           {"data_tail", d->data_tail},
                      {"compute_share", d->compute_share},     {"optimizer_share", d->optimizer_share},
                      {"text", d->to_string()}};
  }
  return j;
}

void Profiler::Impl::write_summary(bool traced) {
  if (o.run_dir.empty()) return;
  run_acc.t0_ns = t_start;
  run_acc.t1_ns = now_ns();
  const WindowSummary run = summarize("run", run_acc, false, 0);
  const Diagnosis d = instrument::diagnose(run, ctx, o.thresholds);
  auto range = [](const std::optional<std::pair<int64_t, int64_t>>& r) {
    return r ? nlohmann::json({r->first, r->second}) : nlohmann::json(nullptr);
  };
  const AdviceContext& s = o.setting;
  nlohmann::json j = {{"level", to_string(o.level)},
                      {"options",
                       {{"log_every", o.log_every},
                        {"warmup_steps", o.warmup_steps},
                        {"trace_steps", range(o.trace_steps)},
                        {"profile_steps", range(o.profile_steps)},
                        {"sync", o.sync},
                        {"cuda", o.cuda},
                        {"cuda_events", cuda_timing},
                        {"sample_hz", o.sample_hz},
                        {"workers", s.workers},
                        {"batch", s.batch},
                        {"imgsz", s.imgsz},
                        {"cache", core::to_string(s.cache)},
                        {"amp", s.amp},
                        {"cores", s.cores},
                        {"threads", s.threads},
                        {"device", s.device},
                        {"cpu_affinity", s.affinity_cores},
                        {"cpu_quota", s.quota_cores >= 0 ? nlohmann::json(s.quota_cores) : nlohmann::json(nullptr)},
                        {"cpu_quota_file", s.quota_file}}},
                      {"nvml", sampler->has_nvml()},
                      {"gpu_name", sampler->gpu_name()},
                      {"wall_s", static_cast<double>(run_acc.t1_ns - t_start) * 1e-9},
                      {"run", to_json(run, &d)},
                      {"epochs", epochs_json},
                      {"diagnosis", d.to_string()}};
  if (o.train_flops_per_image > 0) {
    j["mfu"] = {{"train_flops_per_image", o.train_flops_per_image},
                {"peak_flops", o.peak_flops > 0 ? nlohmann::json(o.peak_flops) : nlohmann::json(nullptr)},
                {"peak_source", o.peak_source},
                {"run_mfu", na_json(run.mfu)},
                {"run_tflops", na_json(run.tflops)}};
  }
  if (ops && ops->report()) {
    const auto& r = *ops->report();
    j["profile_ops"] = {{"first_step", r.first_step}, {"last_step", r.last_step}, {"steps", r.steps},
                        {"collector", r.collector}, {"window_step_s", r.window_step_s},
                        {"baseline_step_s", r.baseline_step_s}, {"postprocess_s", r.postprocess_s},
                        {"files", {"ops.txt", "ops.csv", "ops_trace.json"}}};
  }
  if (warmup) {  // measured: how much slower the first steps were than the steady ones
    const double steady = run.step.mean;
    j["warmup"] = {{"steps", warmup->steps},
                   {"first_step", warmup->first_step},
                   {"last_step", warmup->last_step},
                   {"step_mean_s", warmup->step.mean},
                   {"steady_step_mean_s", steady > 0 ? nlohmann::json(steady) : nlohmann::json(nullptr)},
                   {"ratio", steady > 0 ? nlohmann::json(warmup->step.mean / steady) : nlohmann::json(nullptr)}};
  }
  if (rank_windows > 0) {  // DDP: every rank's stage times (rank 0 gathered them each window)
    nlohmann::json fields = nlohmann::json::array(), means = nlohmann::json::array();
    for (const char* f : kRankFields) fields.push_back(f);
    for (const auto& row : rank_sums) {
      nlohmann::json m = nlohmann::json::array();
      for (double v : row) m.push_back(v / static_cast<double>(rank_windows));
      means.push_back(m);
    }
    j["ranks"] = {{"world", rank_sums.size()},     {"windows", rank_windows},
                  {"fields", fields},              {"mean_s_per_step", means},
                  {"straggler_windows", straggler_counts}, {"last_verdict", last_rank_verdict}};
  }
  // A resumed run: keep the epochs an earlier process of this run recorded (before this process's first epoch),
  // so summary.json covers the whole run like breakdown.csv and train.log. "run" stays this process's summary.
  const std::string old_path = o.run_dir + "/summary.json";
  if (!epochs_json.empty() && std::filesystem::exists(old_path)) {
    const auto old = nlohmann::json::parse(io::read_file(old_path), nullptr, /*allow_exceptions=*/false);
    const int64_t first = epochs_json.front().value("epoch", int64_t{0});
    if (!old.is_discarded() && old.contains("epochs") && old["epochs"].is_array()) {
      nlohmann::json merged = nlohmann::json::array();
      for (const auto& e : old["epochs"])
        if (e.is_object() && e.value("epoch", first) < first) merged.push_back(e);
      if (!merged.empty()) {
        for (const auto& e : epochs_json) merged.push_back(e);
        j["epochs"] = std::move(merged);
        j["resumed_at_epoch"] = first;
      }
    }
  }
  if (o.cuda) {
    const int64_t peak = compat::peak_memory_allocated(o.cuda_device);
    j["peak_alloc_mb"] = peak >= 0 ? nlohmann::json(static_cast<double>(peak) / (1024.0 * 1024.0)) : nullptr;
  }
  if (o.level == Level::full && traced) {
    const std::string trace_path =
        o.run_dir + (o.world_size > 1 ? fmt::format("/trace_rank{}.json", o.rank) : std::string("/trace.json"));
    trace::TraceMeta meta;
    meta.process_name = o.world_size > 1 ? fmt::format("yolo11 rank {}", o.rank) : "yolo11";
    meta.rank = o.rank;
    meta.world_size = o.world_size;
    meta.backend = o.dist_backend;
    meta.device = o.setting.device + (sampler->gpu_name().empty() ? "" : " " + sampler->gpu_name());
    trace::write(trace_path, nlohmann::json({{"yolo11", {{"trace_steps", range(o.trace_steps)}}}}).dump(), meta);
    j["trace"] = trace_path;
    spdlog::info("instrument: wrote {} ({}; open it in ui.perfetto.dev or chrome://tracing)", trace_path,
                 o.trace_steps ? fmt::format("steps {}-{}", o.trace_steps->first, o.trace_steps->second - 1)
                               : std::string("every step"));
  } else if (o.level == Level::full && o.trace_steps) {
    spdlog::warn("trace_steps={}:{}: no step of this run fell in the window, so no trace.json was written (global "
                 "steps count from 0 over all epochs)", o.trace_steps->first, o.trace_steps->second);
  }
  io::write_file_atomic(o.run_dir + "/summary.json", j.dump(2));
  // A resumed run (or one verified earlier): the verdict on its advice (advice_verified.json) follows the diagnosis.
  spdlog::info("instrument: run diagnosis: {}", with_advice_check(d.to_string(), o.run_dir));
}

void Profiler::record_ranks(const RankReport& r) {
  if (!enabled_) return;
  Impl& m = *impl_;
  const size_t world = r.rows.size();
  if (m.rank_sums.size() != world) {
    m.rank_sums.assign(world, RankRow{});
    m.straggler_counts.assign(world, 0);
  }
  for (size_t i = 0; i < world; ++i)
    for (size_t k = 0; k < kRankFields.size(); ++k) m.rank_sums[i][k] += r.rows[i][k];
  ++m.rank_windows;
  if (r.straggler >= 0) ++m.straggler_counts[static_cast<size_t>(r.straggler)];
  m.last_rank_verdict = r.verdict;
  if (m.o.run_dir.empty()) return;
  const int64_t steps = r.last_step - r.first_step + 1;
  std::string verdict = r.verdict;
  std::replace(verdict.begin(), verdict.end(), '"', '\'');
  for (size_t i = 0; i < world; ++i) {
    const double step = r.rows[i][kRankFields.size() - 1];
    for (size_t k = 0; k < kRankFields.size(); ++k) {
      const double v = r.rows[i][k];
      const bool last = k + 1 == kRankFields.size();
      m.csv_buffer +=
          fmt::format("rank,{},{},{},{},,{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.4f},,,,,,\"{}\",{},,,,,,,,,,,,,,,,\n",
                      r.epoch, r.first_step, r.last_step, steps, kRankFields[k], steps, v, v, v, v,
                      step > 0 ? v / step : 0.0, last ? verdict : "", i);
    }
  }
}

void Profiler::record_loader(int64_t epoch, const std::vector<LoaderPartStats>& parts, const std::string& note) {
  if (!enabled_ || impl_->o.run_dir.empty()) return;
  std::string n = note;
  std::replace(n.begin(), n.end(), '"', '\'');
  for (const auto& p : parts) {
    if (p.count == 0) continue;
    const double mean = p.total_s / static_cast<double>(p.count);
    impl_->csv_buffer += fmt::format(
        "loader,{},-1,-1,-1,,{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.4f},,,,,,\"{}\",{},,,,,,,,,,,,,,,,\n", epoch, p.name,
        p.count, mean, p.p50_s, p.p95_s, p.p95_s, p.share, p.name == "other" ? n : "", impl_->o.rank);
  }
  impl_->flush_csv();
}

}  // namespace yolo11::instrument
