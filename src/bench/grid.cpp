// yolo11-sweep's grid: argument parsing, expansion, the child's command line (include/yolo11/bench/sweep.h).
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <stdexcept>

#include "yolo11/bench/sweep.h"
#include "yolo11/core/settings.h"
#include "yolo11/core/strings.h"

namespace yolo11::bench {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t b = 0;
  while (true) {
    const size_t e = s.find(sep, b);
    out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return out;
}

using core::lower;

int64_t to_int(const std::string& key, const std::string& v, int64_t lo) {
  size_t pos = 0;
  int64_t x = 0;
  try {
    x = std::stoll(v, &pos);
  } catch (...) {
    pos = 0;
  }
  if (pos == 0 || pos != v.size() || x < lo)
    throw std::runtime_error(fmt::format("yolo11-sweep: {}={}: expected integers >= {} separated by commas", key, v, lo));
  return x;
}

std::vector<int64_t> int_list(const std::string& key, const std::string& v, int64_t lo) {
  std::vector<int64_t> out;
  for (const auto& t : split(v, ',')) out.push_back(to_int(key, t, lo));
  return out;
}

}  // namespace

std::string Point::id() const {
  std::string s = fmt::format("b{}_w{}_s{}", batch, workers, imgsz);
  if (!amp.empty()) s += amp == "true" ? "_ampT" : "_ampF";
  if (!cache.empty()) s += "_c" + cache;
  return s;
}

std::string Point::label() const {
  std::string s = fmt::format("batch={} workers={} imgsz={}", batch, workers, imgsz);
  if (!amp.empty()) s += " amp=" + amp;
  if (!cache.empty()) s += " cache=" + cache;
  return s;
}

SweepOptions parse_sweep_args(const std::vector<std::string>& args) {
  SweepOptions o;
  for (const auto& a : args) {
    const size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::runtime_error("yolo11-sweep: argument '" + a + "' is not key=value (e.g. batch=8,16 workers=0,2)");
    const std::string k = a.substr(0, eq), v = a.substr(eq + 1);
    if (v.empty()) throw std::runtime_error("yolo11-sweep: " + k + "= has no value");
    if (k == "batch") o.grid.batch = int_list(k, v, 1);
    else if (k == "workers") o.grid.workers = int_list(k, v, 0);
    else if (k == "imgsz") o.grid.imgsz = int_list(k, v, 32);
    else if (k == "amp") {
      o.grid.amp.clear();
      for (const auto& t : split(lower(v), ',')) {
        if (t != "true" && t != "false") throw std::runtime_error("yolo11-sweep: amp=" + v + ": expected true,false");
        o.grid.amp.push_back(t);
      }
    } else if (k == "cache") {
      o.grid.cache.clear();
      for (const auto& t : split(v, ',')) {
        const auto m = t.empty() ? std::nullopt : core::parse_cache_mode(t);
        if (!m)
          throw std::runtime_error("yolo11-sweep: cache=" + v + ": expected false, ram or disk separated by commas");
        o.grid.cache.push_back(core::to_string(*m));
      }
    } else if (k == "steps") o.steps = to_int(k, v, 2);
    else if (k == "warmup") o.warmup = to_int(k, v, 0);
    else if (k == "point_timeout") {
      try {
        o.point_timeout = std::stod(v);
      } catch (...) {
        o.point_timeout = -1;
      }
      if (!(o.point_timeout >= 0)) throw std::runtime_error("yolo11-sweep: point_timeout=" + v + ": expected seconds >= 0");
    } else if (k == "data" && lower(v) == "synthetic") o.synthetic = true;
    else if (k == "check_whatif") o.check_whatif = lower(v) == "true";
    else if (k == "name") o.name = v;
    else if (k == "project") o.project = v;
    else if (k == "resume") o.resume = lower(v) == "true";
    else if (k == "exist_ok") o.exist_ok = lower(v) == "true";
    else if (k == "train_exe") o.train_exe = v;
    else if (k == "max_steps" || k == "instrument_warmup" || k == "log_every" || k == "val" || k == "save" ||
             k == "synthetic_data")
      throw std::runtime_error("yolo11-sweep: " + k + "= is set by the sweep for every point (use steps= and warmup=)");
    else o.passthrough.push_back(a);
  }
  if (o.grid.batch.empty()) o.grid.batch = {16};
  if (o.grid.workers.empty()) o.grid.workers = {8};
  if (o.grid.imgsz.empty()) o.grid.imgsz = {640};
  for (auto* v : {&o.grid.batch, &o.grid.workers, &o.grid.imgsz}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  return o;
}

std::vector<Point> expand_grid(const Grid& g) {
  const std::vector<std::string> amps = g.amp.empty() ? std::vector<std::string>{""} : g.amp;
  const std::vector<std::string> caches = g.cache.empty() ? std::vector<std::string>{""} : g.cache;
  std::vector<Point> out;
  for (int64_t s : g.imgsz)
    for (const auto& a : amps)
      for (const auto& c : caches)
        for (int64_t w : g.workers)
          for (int64_t b : g.batch) {
            Point p;
            p.batch = b, p.workers = w, p.imgsz = s, p.amp = a, p.cache = c;
            out.push_back(p);
          }
  return out;
}

std::vector<std::string> child_args(const SweepOptions& o, const Point& p, const std::string& points_dir,
                                    bool synthetic) {
  std::vector<std::string> a;
  if (!o.cfg_file.empty()) a.insert(a.end(), {"--cfg", o.cfg_file});
  a.insert(a.end(), o.passthrough.begin(), o.passthrough.end());
  // Enough epochs that max_steps, not the epoch count, ends the child (each epoch has at least one step).
  a.push_back(fmt::format("epochs={}", std::max<int64_t>(100, o.warmup + o.steps)));
  a.push_back(fmt::format("batch={}", p.batch));
  a.push_back(fmt::format("workers={}", p.workers));
  a.push_back(fmt::format("imgsz={}", p.imgsz));
  if (!p.amp.empty()) a.push_back("amp=" + p.amp);
  if (!p.cache.empty()) a.push_back("cache=" + p.cache);
  a.push_back(fmt::format("max_steps={}", o.warmup + o.steps));
  a.push_back(fmt::format("instrument_warmup={}", o.warmup));
  a.push_back("log_every=1");  // one breakdown.csv window per measured step: per-step samples for the interval
  a.push_back("instrument=basic");
  a.push_back("val=false");
  a.push_back("save=false");
  a.push_back("plots=false");
  a.push_back("tensorboard=false");
  a.push_back("metrics_port=0");
  a.push_back("resume=false");
  if (synthetic) a.push_back("synthetic_data=true");
  a.push_back("project=" + points_dir);
  a.push_back("name=" + p.id() + (synthetic ? "_synthetic" : ""));
  a.push_back("exist_ok=true");
  return a;
}

const char* to_string(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::oom: return "oom";
    case Status::timeout: return "timeout";
    case Status::crash: return "crash";
    case Status::error: return "error";
    case Status::skipped: return "skipped";
  }
  return "error";
}

Status parse_status(const std::string& s) {
  for (Status x : {Status::ok, Status::oom, Status::timeout, Status::crash, Status::error, Status::skipped})
    if (s == to_string(x)) return x;
  throw std::runtime_error("unknown point status '" + s + "' (expected ok, oom, timeout, crash, error, skipped)");
}

}  // namespace yolo11::bench
