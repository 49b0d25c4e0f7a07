// yolo11-analyze's logic: read breakdown.csv or train.log windows, combine, diagnose, report.
#include "yolo11/core/cpus.h"
#include "yolo11/instrument/analyze.h"
#include "yolo11/instrument/advice_check.h"
#include "yolo11/instrument/ops_profile.h"
#include "yolo11/instrument/whatif.h"

#include <spdlog/fmt/fmt.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "yolo11/instrument/profiler.h"
#include "yolo11/io/file.h"

namespace yolo11::instrument {

namespace fs = std::filesystem;

namespace {


double num(const std::string& s, const std::string& where) {
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used != s.size()) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    throw std::runtime_error(where + ": '" + s + "' is not a number; is this a yolo11 breakdown.csv?");
  }
}

}  // namespace

std::vector<WindowSummary> read_breakdown_csv(const std::string& path, std::vector<StageSummary>* epoch_stages,
                                              std::vector<WindowSummary>* warmup) {
  std::vector<WindowSummary> warm;
  std::istringstream in(io::read_file(path));
  std::string line;
  if (!std::getline(in, line)) throw std::runtime_error(path + " is empty; expected a yolo11 breakdown.csv");
  const auto header = io::split_csv_line(line);
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* need : {"kind", "epoch", "first_step", "last_step", "steps", "images", "stage", "count", "mean_s",
                           "p50_s", "p95_s", "max_s", "share", "images_per_s", "gpu_util", "cpu_percent"}) {
    if (!col.count(need)) {
      throw std::runtime_error(fmt::format("{}:1: column '{}' missing; expected a yolo11 breakdown.csv", path, need));
    }
  }
  std::vector<WindowSummary> windows;
  std::map<std::string, std::vector<StageSummary>> per_epoch;
  int line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    const auto f = io::split_csv_line(line);
    const std::string where = fmt::format("{}:{}", path, line_no);
    if (f.size() < header.size()) throw std::runtime_error(where + ": too few fields");
    const std::string kind = f[col["kind"]];
    StageSummary s;
    s.name = f[col["stage"]];
    s.count = static_cast<int64_t>(num(f[col["count"]], where));
    s.mean = num(f[col["mean_s"]], where);
    s.p50 = num(f[col["p50_s"]], where);
    s.p95 = num(f[col["p95_s"]], where);
    s.max = num(f[col["max_s"]], where);
    s.share = num(f[col["share"]], where);
    s.total = s.mean * static_cast<double>(s.count);
    if (kind == "epoch") {
      const bool epoch_level = col.count("diagnosis") && f[col["diagnosis"]] == "per_epoch";
      if (epoch_level) {
        s.per_epoch = true;
        per_epoch[s.name].push_back(s);
      }
      continue;
    }
    if (kind != "window" && kind != "warmup") continue;
    auto& into = kind == "window" ? windows : warm;  // warm-up rows: kept apart (Profiler, instrument_warmup)
    const int64_t first = static_cast<int64_t>(num(f[col["first_step"]], where));
    if (into.empty() || into.back().first_step != first || into.back().step.count > 0) {
      WindowSummary w;
      w.kind = kind;
      w.epoch = static_cast<int64_t>(num(f[col["epoch"]], where));
      w.first_step = first;
      w.last_step = static_cast<int64_t>(num(f[col["last_step"]], where));
      w.steps = static_cast<int64_t>(num(f[col["steps"]], where));
      w.images = static_cast<int64_t>(num(f[col["images"]], where));
      w.images_per_s = num(f[col["images_per_s"]], where);
      w.gpu_util = num(f[col["gpu_util"]], where);
      w.cpu_percent = num(f[col["cpu_percent"]], where);
      if (col.count("rss_mb")) w.rss_mb = num(f[col["rss_mb"]], where);
      if (col.count("gpu_mem_mb")) w.gpu_mem_mb = num(f[col["gpu_mem_mb"]], where);
      if (col.count("mfu") && col["mfu"] < f.size()) w.mfu = num(f[col["mfu"]], where);  // written since issue 14
      if (col.count("tflops") && col["tflops"] < f.size()) w.tflops = num(f[col["tflops"]], where);
      // loader_cpu_s / loader_cpu_wait_s: written since the what-if's CPU contention (issue 13)
      if (col.count("loader_cpu_s") && col.count("loader_cpu_wait_s") && col["loader_cpu_wait_s"] < f.size()) {
        w.loader_cpu_s = num(f[col["loader_cpu_s"]], where);
        w.loader_cpu_wait_s = num(f[col["loader_cpu_wait_s"]], where);
      }
      // contention columns (instrument/contention.h): absent in older files, n/a (−1) then
      auto opt = [&](const char* name, double& out) {
        if (col.count(name) && col[name] < f.size()) out = num(f[col[name]], where);
      };
      opt("runq_wait", w.contention.runq_wait);
      opt("others_cpu", w.contention.others_cpu);
      opt("steal", w.contention.steal);
      opt("cpu_pressure", w.contention.cpu_pressure);
      opt("memory_pressure", w.contention.memory_pressure);
      opt("io_pressure", w.contention.io_pressure);
      opt("major_faults_per_s", w.contention.major_faults_per_s);
      opt("load1", w.contention.load1);
      opt("quota_throttled", w.contention.quota_throttled);
      opt("voluntary_switches_per_s", w.contention.voluntary_switches_per_s);
      opt("compute_expected_s", w.compute_expected_s);
      opt("compute_speed", w.compute_speed);
      into.push_back(w);
    }
    WindowSummary& w = into.back();
    if (s.name == "step") {
      w.step = s;  // closes the window (it is the last row of each window)
    } else {
      w.stages.push_back(s);
    }
  }
  if (epoch_stages != nullptr) {
    epoch_stages->clear();
    for (auto& [name, rows] : per_epoch) {
      StageSummary c;
      c.name = name;
      c.per_epoch = true;
      double share_sum = 0;
      std::vector<double> per_epoch_means;  // val / checkpoint / log run once per epoch: these are the samples
      for (const auto& r : rows) {
        c.count += r.count;
        c.total += r.total;
        c.max = std::max(c.max, r.max);
        share_sum += r.share;
        per_epoch_means.push_back(r.mean);
      }
      c.mean = c.count > 0 ? c.total / static_cast<double>(c.count) : 0;
      c.p50 = percentile(per_epoch_means, 0.5);
      c.p95 = percentile(per_epoch_means, 0.95);
      c.share = share_sum / static_cast<double>(rows.size());  // mean share of the epoch wall time
      epoch_stages->push_back(c);
    }
  }
  if (warmup != nullptr) *warmup = std::move(warm);
  return windows;
}

std::vector<WindowSummary> read_log_windows(const std::string& path, std::vector<WindowSummary>* warmup) {
  std::istringstream in(io::read_file(path));
  std::vector<WindowSummary> out;
  for (std::string line; std::getline(in, line);) {
    WindowSummary w;
    const bool warm = line.find("warm-up (steps ") != std::string::npos;  // the Profiler's warm-up window
    if (!parse_window_line(line, w)) continue;
    if (!warm) {
      out.push_back(std::move(w));
    } else if (warmup != nullptr) {
      w.kind = "warmup";
      warmup->push_back(std::move(w));
    }
  }
  return out;
}

WindowSummary combine_windows(const std::vector<WindowSummary>& windows) {
  WindowSummary r;
  r.kind = "run";
  r.step.name = "step";
  std::vector<std::string> order;
  std::map<std::string, std::vector<const StageSummary*>> by_name;
  std::vector<double> step_p50, step_p95;
  double gpu_sum = 0, gpu_w = 0, cpu_sum = 0, cpu_w = 0;
  double loader_cpu = 0, loader_cpu_wait = 0;
  bool loader_cpu_known = !windows.empty();  // only when every window has it
  for (const auto& w : windows) {
    const int64_t steps = std::max<int64_t>(1, w.steps);
    r.steps += steps;
    r.images += w.images;
    r.step.count += steps;
    r.step.total += w.step.mean * static_cast<double>(steps);
    r.step.max = std::max(r.step.max, w.step.max);
    step_p50.push_back(w.step.p50);
    step_p95.push_back(w.step.p95);
    if (w.first_step >= 0 && (r.first_step < 0 || w.first_step < r.first_step)) r.first_step = w.first_step;
    r.last_step = std::max(r.last_step, w.last_step);
    if (w.gpu_util >= 0) gpu_sum += w.gpu_util * steps, gpu_w += steps;
    if (w.cpu_percent >= 0) cpu_sum += w.cpu_percent * steps, cpu_w += steps;
    if (w.loader_cpu_s >= 0 && w.loader_cpu_wait_s >= 0) {
      loader_cpu += w.loader_cpu_s;
      loader_cpu_wait += w.loader_cpu_wait_s;
    } else {
      loader_cpu_known = false;
    }
    r.rss_mb = std::max(r.rss_mb, w.rss_mb);
    r.gpu_mem_mb = std::max(r.gpu_mem_mb, w.gpu_mem_mb);
    for (const auto& s : w.stages) {
      if (!by_name.count(s.name)) order.push_back(s.name);
      by_name[s.name].push_back(&s);
    }
  }
  r.step.mean = r.step.count > 0 ? r.step.total / static_cast<double>(r.step.count) : 0;
  r.step.p50 = percentile(step_p50, 0.5);
  r.step.p95 = percentile(step_p95, 0.95);
  r.step.share = 1.0;
  r.gpu_util = gpu_w > 0 ? gpu_sum / gpu_w : -1;
  r.cpu_percent = cpu_w > 0 ? cpu_sum / cpu_w : -1;
  if (loader_cpu_known) r.loader_cpu_s = loader_cpu, r.loader_cpu_wait_s = loader_cpu_wait;
  // Contention rates: step-time-weighted means over the windows that have them.
  auto weighted = [&](double ContentionRates::*f) {
    double sum = 0, wsum = 0;
    for (const auto& w : windows) {
      const double x = w.contention.*f, wt = w.step.mean * static_cast<double>(std::max<int64_t>(1, w.steps));
      if (x >= 0 && wt > 0) sum += x * wt, wsum += wt;
    }
    return wsum > 0 ? sum / wsum : -1.0;
  };
  for (const auto& w : windows)  // one calibration per run: the windows carry the same expected time
    if (w.compute_expected_s > 0) r.compute_expected_s = w.compute_expected_s;
  for (auto f : {&ContentionRates::runq_wait, &ContentionRates::others_cpu, &ContentionRates::steal,
                 &ContentionRates::cpu_pressure, &ContentionRates::memory_pressure, &ContentionRates::io_pressure,
                 &ContentionRates::major_faults_per_s, &ContentionRates::load1, &ContentionRates::quota_throttled,
                 &ContentionRates::voluntary_switches_per_s})
    r.contention.*f = weighted(f);
  // Known stages in log order first, then the others in order of appearance.
  std::stable_sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) {
    auto rank = [](const std::string& n) {
      auto it = std::find(kStepStages.begin(), kStepStages.end(), n);
      return it == kStepStages.end() ? kStepStages.size() : static_cast<size_t>(it - kStepStages.begin());
    };
    return rank(a) < rank(b);
  });
  for (const auto& name : order) {
    StageSummary c;
    c.name = name;
    std::vector<double> p50, p95;
    for (const StageSummary* s : by_name[name]) {
      c.count += s->count;
      c.total += s->total;
      c.max = std::max(c.max, s->max);
      p50.push_back(s->p50);
      p95.push_back(s->p95);
    }
    c.mean = c.count > 0 ? c.total / static_cast<double>(c.count) : 0;
    c.p50 = percentile(p50, 0.5);
    c.p95 = percentile(p95, 0.95);
    c.share = r.step.total > 0 ? c.total / r.step.total : 0;
    r.stages.push_back(c);
  }
  r.images_per_s = r.step.total > 0 ? static_cast<double>(r.images) / r.step.total : 0;
  if (r.compute_expected_s > 0) r.set_compute_expected(r.compute_expected_s);
  if (r.images == 0 && !windows.empty()) {  // log lines carry throughput, not image counts
    double ips = 0;
    for (const auto& w : windows) ips += w.images_per_s;
    r.images_per_s = ips / static_cast<double>(windows.size());
  }
  for (const auto& w : windows) {  // MFU and TFLOP/s are proportional to img/s (same FLOPs per image and peak)
    if (w.mfu < 0 || w.images_per_s <= 0) continue;
    r.mfu = w.mfu * r.images_per_s / w.images_per_s;
    r.tflops = w.tflops * r.images_per_s / w.images_per_s;
    break;
  }
  return r;
}

AdviceContext load_context(const std::string& run_dir, std::string& source) {
  const fs::path dir(run_dir);
  AdviceContext c;
  source.clear();
  c.cores = core::usable_cores().usable;
  const fs::path summary = dir / "summary.json";
  if (fs::exists(summary)) {
    const auto j = nlohmann::json::parse(io::read_file(summary.string()), nullptr, false);
    if (!j.is_discarded() && j.contains("options")) {
      const auto& o = j["options"];
      c.workers = o.value("workers", c.workers);
      c.batch = o.value("batch", c.batch);
      c.imgsz = o.value("imgsz", c.imgsz);
      if (o.contains("cache") && o["cache"].is_string())
        c.cache = core::parse_cache_mode(o["cache"].get<std::string>()).value_or(c.cache);
      c.amp = o.value("amp", c.amp);
      c.cores = o.value("cores", c.cores);
      c.threads = o.value("threads", c.threads);
      c.device = o.value("device", c.device);
      c.sync = o.value("sync", c.sync);
      c.affinity_cores = o.value("cpu_affinity", c.affinity_cores);
      if (o.contains("cpu_quota") && o["cpu_quota"].is_number()) c.quota_cores = o["cpu_quota"].get<double>();
      c.quota_file = o.value("cpu_quota_file", c.quota_file);
      source = "summary.json";
      return c;
    }
  }
  const fs::path args = dir / "args.yaml";
  if (fs::exists(args)) {
    try {
      const YAML::Node y = YAML::LoadFile(args.string());
      if (y["workers"]) c.workers = y["workers"].as<int>();
      if (y["batch"]) c.batch = y["batch"].as<int64_t>();
      if (y["imgsz"]) c.imgsz = y["imgsz"].as<int64_t>();
      if (y["cache"]) c.cache = core::parse_cache_mode(y["cache"].as<std::string>()).value_or(c.cache);
      if (y["amp"]) c.amp = y["amp"].as<bool>();
      if (y["device"] && !y["device"].IsNull()) c.device = y["device"].as<std::string>();
      source = "args.yaml";
    } catch (const std::exception& e) {
      throw std::runtime_error(args.string() + ": cannot read advice context (" + e.what() + ")");
    }
  }
  return c;
}

std::optional<WindowSummary> read_summary_run(const std::string& path) {
  if (!fs::exists(path)) return std::nullopt;
  const auto j = nlohmann::json::parse(io::read_file(path), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.contains("run") || !j["run"].is_object()) return std::nullopt;
  const auto& jr = j["run"];
  auto number = [](const nlohmann::json& o, const char* key, double fallback) {
    return o.contains(key) && o[key].is_number() ? o[key].get<double>() : fallback;  // null = n/a
  };
  auto integer = [](const nlohmann::json& o, const char* key) {
    return o.contains(key) && o[key].is_number_integer() ? o[key].get<int64_t>() : int64_t{-1};
  };
  WindowSummary w;
  w.kind = "run";
  w.epoch = integer(jr, "epoch");
  w.first_step = integer(jr, "first_step");
  w.last_step = integer(jr, "last_step");
  w.steps = integer(jr, "steps");
  w.images = integer(jr, "images");
  if (w.steps <= 0 || !jr.contains("step") || !jr["step"].is_object() || !jr.contains("stages") ||
      !jr["stages"].is_array())
    return std::nullopt;
  const auto& st = jr["step"];
  w.step.name = "step";
  w.step.count = w.steps;
  w.step.mean = number(st, "mean_s", 0), w.step.p50 = number(st, "p50_s", 0), w.step.p95 = number(st, "p95_s", 0);
  w.step.max = number(st, "max_s", 0), w.step.total = number(st, "total_s", 0), w.step.share = 1.0;
  w.images_per_s = number(jr, "images_per_s", 0);
  for (const auto& js : jr["stages"]) {
    if (!js.is_object() || !js.contains("name") || !js["name"].is_string()) return std::nullopt;
    StageSummary s;
    s.name = js["name"].get<std::string>();
    s.count = integer(js, "count");
    s.total = number(js, "total_s", 0), s.mean = number(js, "mean_s", 0), s.p50 = number(js, "p50_s", 0);
    s.p95 = number(js, "p95_s", 0), s.max = number(js, "max_s", 0), s.share = number(js, "share", 0);
    s.per_epoch = js.value("per_epoch", false);
    if (!s.per_epoch) w.stages.push_back(std::move(s));
  }
  w.gpu_util = number(jr, "gpu_util", -1), w.gpu_mem_mb = number(jr, "gpu_mem_mb", -1);
  w.peak_alloc_mb = number(jr, "peak_alloc_mb", -1), w.cpu_percent = number(jr, "cpu_percent", -1);
  w.rss_mb = number(jr, "rss_mb", -1), w.sm_active = number(jr, "sm_active", -1);
  w.sm_occupancy = number(jr, "sm_occupancy", -1), w.tensor_active = number(jr, "tensor_active", -1);
  w.dram_bw = number(jr, "dram_bw", -1), w.tflops = number(jr, "tflops", -1), w.mfu = number(jr, "mfu", -1);
  w.loader_cpu_s = number(jr, "loader_cpu_s", -1), w.loader_cpu_wait_s = number(jr, "loader_cpu_wait_s", -1);
  w.compute_expected_s = number(jr, "compute_expected_s", -1), w.compute_speed = number(jr, "compute_speed", -1);
  if (jr.contains("contention") && jr["contention"].is_object()) {
    const auto& jc = jr["contention"];
    ContentionRates& c = w.contention;
    c.runq_wait = number(jc, "runq_wait", -1), c.others_cpu = number(jc, "others_cpu", -1);
    c.steal = number(jc, "steal", -1), c.cpu_pressure = number(jc, "cpu_pressure", -1);
    c.memory_pressure = number(jc, "memory_pressure", -1), c.io_pressure = number(jc, "io_pressure", -1);
    c.major_faults_per_s = number(jc, "major_faults_per_s", -1), c.load1 = number(jc, "load1", -1);
    c.quota_throttled = number(jc, "quota_throttled", -1);
    c.voluntary_switches_per_s = number(jc, "voluntary_switches_per_s", -1);
  }
  return w;
}

AnalyzeResult analyze_run(const std::string& path) {
  AnalyzeResult r;
  fs::path p(path);
  if (!fs::exists(p)) throw std::runtime_error(path + " does not exist; pass a run directory or its train.log");
  fs::path dir = fs::is_directory(p) ? p : p.parent_path();
  if (dir.empty()) dir = ".";
  if (fs::is_directory(p)) {
    if (fs::exists(p / "breakdown.csv")) {
      r.source = (p / "breakdown.csv").string();
    } else if (fs::exists(p / "train.log")) {
      r.source = (p / "train.log").string();
    } else {
      throw std::runtime_error(path + " has neither breakdown.csv nor train.log; was the run made with "
                                      "instrument=basic or full?");
    }
  } else {
    r.source = p.string();
  }
  const bool csv = r.source.size() >= 4 && r.source.compare(r.source.size() - 4, 4, ".csv") == 0;
  std::vector<WindowSummary> warmup;
  r.windows = csv ? read_breakdown_csv(r.source, &r.epoch_stages, &warmup) : read_log_windows(r.source, &warmup);
  if (r.windows.empty() && !warmup.empty()) {  // a run that ended within its warm-up steps: better than nothing
    r.windows = warmup;
    r.warmup_only = true;
  }
  if (r.windows.empty()) {
    throw std::runtime_error(r.source + " contains no instrumentation windows (lines like 'dataloader: 0.2s (38%), "
                                        "... step: 0.5s, 28.6 img/s, data-wait 38%, GPU 54%')");
  }
  r.context = load_context(dir.string(), r.context_source);
  r.overall = combine_windows(r.windows);
  // The trainer's own run summary has the exact per-step percentiles that combining windows can only approximate
  // (the data-wait tail p95/p50 decides some verdicts): when it covers exactly these windows' steps, it is the
  // overall window, so the analysis repeats the run's own diagnosis line.
  if (!r.warmup_only) {
    const auto run = read_summary_run((dir / "summary.json").string());
    if (run && run->first_step == r.overall.first_step && run->last_step == r.overall.last_step &&
        run->steps == r.overall.steps) {
      const double ips = r.overall.images_per_s;
      r.overall = *run;
      if (r.overall.images_per_s <= 0) r.overall.images_per_s = ips;
      r.overall_source = "summary.json";
    }
  }
  r.diagnosis = diagnose(r.overall, r.context);
  std::map<std::string, int> counts;
  for (const auto& w : r.windows) {
    r.window_diagnoses.push_back(diagnose(w, r.context));
    ++counts[to_string(r.window_diagnoses.back().bottleneck)];
  }

  WindowSummary shown = r.overall;
  for (const auto& s : r.epoch_stages) shown.stages.push_back(s);
  std::string rep = fmt::format("source: {} ({} windows{})\n", r.source, r.windows.size(),
                                r.overall_source == "summary.json" ? "; run percentiles from summary.json" : "");
  if (r.warmup_only)
    rep += "note: the run ended within its warm-up steps (instrument_warmup): these figures include start-up costs "
           "(primitive creation, allocator growth); run more steps for steady-state advice\n";
  rep += format_table(shown);
  rep += "windows by diagnosis:";
  for (const auto& [k, n] : counts) rep += fmt::format(" {} {}", k, n);
  rep += "\n";
  const size_t n = r.windows.size();
  rep += fmt::format("throughput: first window {:.1f} img/s, last window {:.1f} img/s\n", r.windows.front().images_per_s,
                     r.windows.back().images_per_s);
  if (n > 1) {
    // The worst data-wait window is often the story (cache warm-up, close_mosaic, disk hiccups).
    size_t worst = 0;
    for (size_t i = 1; i < n; ++i) {
      if (r.windows[i].share(StepStage::dataloader) > r.windows[worst].share(StepStage::dataloader)) worst = i;
    }
    const auto& w = r.windows[worst];
    rep += fmt::format("worst data wait: {:.0f}% of step in window {}{}\n", 100.0 * w.share(StepStage::dataloader),
                       worst, w.first_step >= 0 ? fmt::format(" (steps {}-{})", w.first_step, w.last_step) : "");
  }
  rep += fmt::format("context: workers={} batch={} imgsz={} cache={} amp={} cores={}{} device={} ({})\n",
                     r.context.workers, r.context.batch, r.context.imgsz, core::to_string(r.context.cache),
                     r.context.amp ? "True" : "False", r.context.cores,
                     r.context.threads > 0 ? fmt::format(" threads={}", r.context.threads) : "", r.context.device,
                     r.context_source.empty()
                         ? "UNKNOWN: no summary.json or args.yaml beside the log, so the advice assumes Ultralytics' "
                           "defaults; analyze the run directory for advice that names its real settings"
                         : "from " + r.context_source);
  if (r.warmup_only)  // as the trainer's run diagnosis: no verdict from start-up costs, only what they would suggest
    rep += "diagnosis: no diagnosis: no step was measured outside the instrument warm-up (as the run's own line "
           "says); the warm-up steps alone read as " + r.diagnosis.to_string() + "\n";
  else
    rep += "diagnosis: " + r.diagnosis.to_string() + "\n";
  const auto wi = format_what_if(what_if(r.overall, r.context.workers, cpu_share(r.context)), r.overall.step.mean);
  if (!wi.empty()) rep += wi + "\n";
  if (const auto c = read_advice_check(dir.string()))  // yolo11-sweep --verify RUN_DIR, verify_advice=true
    rep += "advice check: " + format_advice_check(*c) + "\n";
  if (fs::exists(dir / "ops.csv")) {  // profile_ops: the operator table of its window (ops_profile.h)
    r.ops = read_ops_csv((dir / "ops.csv").string());
    rep += fmt::format("operators (profile_ops, {}):\n{}{}top operators of each stage:\n{}", (dir / "ops.txt").string(),
                       format_ops_table(*r.ops, 10), format_ops_stages(*r.ops), format_ops_by_stage(*r.ops, 5));
  }
  r.report = std::move(rep);
  return r;
}

}  // namespace yolo11::instrument
