// Operator profile aggregation and files (include/yolo11/instrument/ops_profile.h): self times from nesting, rows like
// PyTorch's key_averages(), stage attribution through our user scopes, ops.txt / ops.csv / Chrome trace. No torch.
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "yolo11/instrument/ops_profile.h"

#include "yolo11/io/file.h"

namespace yolo11::instrument {

const StageOps* OpsReport::stage(const std::string& name) const {
  for (const auto& s : stages)
    if (s.stage == name) return &s;
  return nullptr;
}

namespace {

constexpr const char* kStepPrefix = "ProfilerStep#";
bool is_step_scope(const std::string& n) { return n.rfind(kStepPrefix, 0) == 0; }

struct Interval {
  int64_t start, end;
  size_t stage;  // index into stage_names
};

}  // namespace

OpsReport aggregate_ops(const std::vector<OpEvent>& events, const std::vector<std::string>& stage_names, bool by_shape) {
  OpsReport r;
  r.by_shape = by_shape;
  // Stage intervals from the user scopes (any thread), steps from ProfilerStep#N.
  std::vector<Interval> iv;
  std::vector<StageOps> st(stage_names.size());
  std::vector<char> seen(stage_names.size(), 0);
  for (size_t i = 0; i < stage_names.size(); ++i) st[i].stage = stage_names[i];
  for (const auto& e : events) {
    if (!e.user_scope) continue;
    if (is_step_scope(e.name)) {
      const int64_t n = std::stoll(e.name.substr(std::char_traits<char>::length(kStepPrefix)));
      r.first_step = r.first_step < 0 ? n : std::min(r.first_step, n);
      r.last_step = std::max(r.last_step, n);
      ++r.steps;
      continue;
    }
    const auto it = std::find(stage_names.begin(), stage_names.end(), e.name);
    if (it == stage_names.end()) continue;
    const auto k = static_cast<size_t>(it - stage_names.begin());
    iv.push_back({e.start_ns, e.start_ns + e.dur_ns, k});
    st[k].scopes += 1;
    st[k].scope_us += static_cast<double>(e.dur_ns) / 1e3;
    seen[k] = 1;
  }
  std::sort(iv.begin(), iv.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  // Innermost stage holding time t: the latest-starting interval with start ≤ t < end (stages do not overlap on
  // the trainer thread; a stage opened inside another one starts later, so it wins).
  auto stage_at = [&](int64_t t) -> int {
    auto it = std::upper_bound(iv.begin(), iv.end(), t, [](int64_t v, const Interval& a) { return v < a.start; });
    for (int k = 0; it != iv.begin() && k < 8; ++k) {  // a few back: an enclosing stage started earlier
      --it;
      if (t < it->end) return static_cast<int>(it->stage);
    }
    return -1;
  };
  // Self times: per thread, events sorted by start (longer first on ties); a stack of open events.
  std::map<uint64_t, std::vector<size_t>> by_thread;
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    if (e.name == "[memory]") continue;
    by_thread[(e.device ? (1ull << 63) : 0) ^ e.thread].push_back(i);
  }
  std::vector<double> child(events.size(), 0.0);
  for (auto& [tid, idx] : by_thread) {
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      return std::tie(events[a].start_ns, events[b].dur_ns) < std::tie(events[b].start_ns, events[a].dur_ns);
    });
    if (events[idx.front()].device) continue;  // device activities do not nest
    std::vector<size_t> open;
    for (size_t i : idx) {
      const auto& e = events[i];
      while (!open.empty() && events[open.back()].start_ns + events[open.back()].dur_ns <= e.start_ns) open.pop_back();
      if (!open.empty() && !e.user_scope && !events[open.back()].user_scope)
        child[open.back()] += static_cast<double>(e.dur_ns);
      if (!e.user_scope) open.push_back(i);
      else open.clear();  // a scope opens a fresh nesting level: nothing above it is an operator
    }
  }
  struct Acc {
    OpRow row;
    std::vector<double> per_stage;
    double outside = 0;
  };
  std::map<std::tuple<bool, std::string, std::string>, Acc> rows;
  std::map<std::tuple<size_t, bool, std::string>, StageOpRow> stage_rows;  // (stage, device, name)
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    const int s = stage_at(e.start_ns);
    if (e.name == "[memory]") {
      if (s >= 0 && e.bytes > 0) st[static_cast<size_t>(s)].alloc_mb += static_cast<double>(e.bytes) / (1024.0 * 1024.0);
      continue;
    }
    if (e.user_scope) continue;
    const double self = std::max(0.0, static_cast<double>(e.dur_ns) - child[i]) / 1e3;
    auto& a = rows[{e.device, e.name, by_shape ? e.shapes : std::string()}];
    if (a.per_stage.empty()) {
      a.per_stage.assign(stage_names.size(), 0.0);
      a.row.name = e.name;
      a.row.shapes = by_shape ? e.shapes : "";
      a.row.device = e.device;
    }
    a.row.calls += 1;
    a.row.self_us += self;
    a.row.total_us += static_cast<double>(e.dur_ns) / 1e3;
    if (s >= 0) {
      a.per_stage[static_cast<size_t>(s)] += self;
      auto& so_row = stage_rows[{static_cast<size_t>(s), e.device, e.name}];
      if (so_row.calls == 0)
        so_row.stage = stage_names[static_cast<size_t>(s)], so_row.name = e.name, so_row.device = e.device;
      so_row.calls += 1;
      so_row.self_us += self;
      auto& so = st[static_cast<size_t>(s)];
      if (e.device) {
        so.device_us += self;
      } else {
        so.ops_self_us += self;
        so.op_calls += 1;
      }
    } else {
      a.outside += self;
    }
    (e.device ? r.device_self_total_us : r.cpu_self_total_us) += self;
  }
  for (auto& [key, a] : rows) {
    const auto best = std::max_element(a.per_stage.begin(), a.per_stage.end());
    a.row.stage = (best != a.per_stage.end() && *best > a.outside) ? stage_names[static_cast<size_t>(best - a.per_stage.begin())] : "-";
    r.ops.push_back(std::move(a.row));
  }
  std::stable_sort(r.ops.begin(), r.ops.end(), [](const OpRow& a, const OpRow& b) {
    return std::make_tuple(a.device, -a.self_us) < std::make_tuple(b.device, -b.self_us);
  });
  for (size_t i = 0; i < st.size(); ++i)
    if (seen[i]) r.stages.push_back(std::move(st[i]));
  std::vector<std::pair<size_t, StageOpRow>> by_stage;  // (stage index, row): stages in order, each by self time
  for (auto& [key, row] : stage_rows) by_stage.emplace_back(std::get<0>(key), std::move(row));
  std::stable_sort(by_stage.begin(), by_stage.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(a.first, -a.second.self_us) < std::make_tuple(b.first, -b.second.self_us);
  });
  for (auto& [stage, row] : by_stage) r.stage_ops.push_back(std::move(row));
  return r;
}

namespace {

std::string us(double v) {  // key_averages' unit choice: µs under 1 ms, ms under 1 s, else s
  if (v < 1e3) return fmt::format("{:.3f}us", v);
  if (v < 1e6) return fmt::format("{:.3f}ms", v / 1e3);
  return fmt::format("{:.3f}s", v / 1e6);
}
std::string pct(double part, double whole) { return whole > 0 ? fmt::format("{:.2f}%", 100.0 * part / whole) : "-"; }
std::string cut(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

}  // namespace

std::string format_ops_stages(const OpsReport& r) {
  const double steps = static_cast<double>(std::max<int64_t>(r.steps, 1));
  std::string t = fmt::format("{:<12}{:>14}{:>14}{:>16}{:>11}{:>10}{}\n", "stage", "timer s/step", "scope s/step",
                              "ops self s/step", "ops/timer", "calls", r.stages.size() && r.stages[0].alloc_mb > 0 ? "  alloc MiB/step" : "");
  for (const auto& s : r.stages) {
    const double ref = s.timer_us >= 0 ? s.timer_us : s.scope_us;
    t += fmt::format("{:<12}{:>14}{:>14.4f}{:>16.4f}{:>11}{:>10}{}\n", s.stage,
                     s.timer_us >= 0 ? fmt::format("{:.4f}", s.timer_us / 1e6 / steps) : "n/a", s.scope_us / 1e6 / steps,
                     s.ops_self_us / 1e6 / steps, ref > 0 ? fmt::format("{:.0f}%", 100.0 * s.ops_self_us / ref) : "-",
                     s.op_calls, s.alloc_mb > 0 ? fmt::format("  {:.1f}", s.alloc_mb / steps) : "");
  }
  return t;
}

std::string format_ops_by_stage(const OpsReport& r, int top) {
  std::string t;
  size_t shown = 0;
  for (size_t i = 0; i < r.stage_ops.size(); ++i) {
    const auto& o = r.stage_ops[i];
    if (i == 0 || o.stage != r.stage_ops[i - 1].stage) {
      const StageOps* s = r.stage(o.stage);
      t += fmt::format("{}: {} operator calls, {} self{}\n", o.stage, s ? s->op_calls : 0, us(s ? s->ops_self_us : 0),
                       s && s->device_us > 0 ? ", " + us(s->device_us) + " device" : "");
      shown = 0;
    }
    if (top > 0 && shown >= static_cast<size_t>(top)) continue;
    ++shown;
    t += fmt::format("  {:>8} {:>12}  {}{}\n", o.calls, us(o.self_us), o.name, o.device ? " (device)" : "");
  }
  return t;
}

std::string format_ops_table(const OpsReport& r, int top) {
  const size_t name_w = 44;
  std::string t;
  t += fmt::format("{:<{}}{:>12}{:>12}{:>13}{:>12}{:>14}{:>12}{:>12}  {:<11}{}\n", "Name", name_w, "Self CPU %", "Self CPU",
                   "CPU total %", "CPU total", "CPU time avg", "Self dev", "# of Calls", "Stage", r.by_shape ? "Input Shapes" : "");
  int n = 0;
  for (const auto& o : r.ops) {
    if (top > 0 && n >= top) break;
    ++n;
    if (o.device) {
      t += fmt::format("{:<{}}{:>12}{:>12}{:>13}{:>12}{:>14}{:>12}{:>12}  {:<11}{}\n", cut(o.name, name_w - 1), name_w,
                       "-", "-", "-", "-", "-", us(o.self_us), o.calls, o.stage, r.by_shape ? o.shapes : "");
      continue;
    }
    t += fmt::format("{:<{}}{:>12}{:>12}{:>13}{:>12}{:>14}{:>12}{:>12}  {:<11}{}\n", cut(o.name, name_w - 1), name_w,
                     pct(o.self_us, r.cpu_self_total_us), us(o.self_us), pct(o.total_us, r.cpu_self_total_us),
                     us(o.total_us), us(o.total_us / static_cast<double>(std::max<int64_t>(o.calls, 1))), "-", o.calls,
                     o.stage, r.by_shape ? o.shapes : "");
  }
  t += fmt::format("Self CPU time total: {}", us(r.cpu_self_total_us));
  if (r.device_self_total_us > 0) t += fmt::format("; self device time total: {}", us(r.device_self_total_us));
  t += fmt::format(
      " (steps {}-{}, {} steps, {} rows{}; # of Calls counts every stage, Stage is where most of the "
      "row's self time ran)\n",
      r.first_step, r.last_step, r.steps, r.ops.size(), r.by_shape ? ", grouped by input shape" : "");
  return t;
}

std::string ops_csv(const OpsReport& r) {
  std::string t = fmt::format("# steps {}-{} ({} steps), collector: {}\n", r.first_step, r.last_step, r.steps, r.collector);
  t += "kind,name,input_shapes,stage,device,calls,self_us,self_pct,total_us,avg_us,scope_us,timer_us,alloc_mb\n";
  auto q = [](const std::string& s) {  // CSV quoting
    std::string o = "\"";
    for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
    return o + "\"";
  };
  for (const auto& o : r.ops) {
    const double whole = o.device ? r.device_self_total_us : r.cpu_self_total_us;
    t += fmt::format("op,{},{},{},{},{},{:.3f},{:.4f},{:.3f},{:.3f},,,\n", q(o.name), q(o.shapes), o.stage, o.device ? 1 : 0,
                     o.calls, o.self_us, whole > 0 ? o.self_us / whole : 0.0, o.total_us,
                     o.total_us / static_cast<double>(std::max<int64_t>(o.calls, 1)));
  }
  for (const auto& o : r.stage_ops)
    t += fmt::format("stage_op,{},,{},{},{},{:.3f},,,,,,\n", q(o.name), o.stage, o.device ? 1 : 0, o.calls, o.self_us);
  for (const auto& s : r.stages) {
    t += fmt::format("stage,{},,{},0,{},{:.3f},,,,{:.3f},{:.3f},{:.3f}\n", s.stage, s.stage, s.op_calls, s.ops_self_us,
                     s.scope_us, s.timer_us, s.alloc_mb);
  }
  return t;
}

OpsReport read_ops_csv(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error(path + ": cannot open");
  OpsReport r;
  std::string line;
  int lineno = 0;
  while (std::getline(f, line)) {
    ++lineno;
    if (line.empty()) continue;
    if (line[0] == '#') {
      long long a = -1, b = -1, n = 0;
      if (std::sscanf(line.c_str(), "# steps %lld-%lld (%lld steps)", &a, &b, &n) == 3) {
        r.first_step = a, r.last_step = b, r.steps = n;
      }
      const auto c = line.find("collector: ");
      if (c != std::string::npos) r.collector = line.substr(c + 11);
      continue;
    }
    if (line.rfind("kind,", 0) == 0) continue;
    const auto v = io::split_csv_line(line);
    if (v.size() != 13) throw std::runtime_error(fmt::format("{}:{}: expected 13 columns, got {}", path, lineno, v.size()));
    try {
      if (v[0] == "op") {
        OpRow o;
        o.name = v[1], o.shapes = v[2], o.stage = v[3], o.device = v[4] == "1";
        o.calls = std::stoll(v[5]), o.self_us = std::stod(v[6]), o.total_us = std::stod(v[8]);
        if (!o.shapes.empty()) r.by_shape = true;
        (o.device ? r.device_self_total_us : r.cpu_self_total_us) += o.self_us;
        r.ops.push_back(std::move(o));
      } else if (v[0] == "stage_op") {
        StageOpRow o;
        o.name = v[1], o.stage = v[3], o.device = v[4] == "1", o.calls = std::stoll(v[5]), o.self_us = std::stod(v[6]);
        r.stage_ops.push_back(std::move(o));
      } else if (v[0] == "stage") {
        StageOps s;
        s.stage = v[1], s.op_calls = std::stoll(v[5]), s.ops_self_us = std::stod(v[6]);
        s.scope_us = std::stod(v[10]), s.timer_us = std::stod(v[11]), s.alloc_mb = std::stod(v[12]);
        r.stages.push_back(std::move(s));
      } else {
        throw std::runtime_error("kind '" + v[0] + "' is none of op, stage_op, stage");
      }
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("{}:{}: {}", path, lineno, e.what()));
    }
  }
  return r;
}

std::string ops_chrome_trace(const std::vector<OpEvent>& events, int rank) {
  int64_t t0 = 0;
  bool first = true;
  for (const auto& e : events)
    if (first || e.start_ns < t0) t0 = e.start_ns, first = false;
  nlohmann::json ev = nlohmann::json::array();
  const int pid = rank;
  std::set<uint64_t> threads, streams;
  for (const auto& e : events) {
    if (e.name == "[memory]") {
      ev.push_back({{"ph", "i"}, {"s", "t"}, {"name", "[memory]"}, {"cat", "cpu_instant_event"}, {"pid", pid},
                    {"tid", e.thread}, {"ts", static_cast<double>(e.start_ns - t0) / 1e3}, {"args", {{"Bytes", e.bytes}}}});
      continue;
    }
    nlohmann::json j = {{"ph", "X"},
                        {"cat", e.device ? "kernel" : e.user_scope ? "user_annotation" : "cpu_op"},
                        {"name", e.name},
                        {"pid", e.device ? pid + 1000 : pid},
                        {"tid", e.thread},
                        {"ts", static_cast<double>(e.start_ns - t0) / 1e3},
                        {"dur", static_cast<double>(e.dur_ns) / 1e3}};
    if (!e.shapes.empty()) j["args"] = {{"Input Dims", e.shapes}};
    (e.device ? streams : threads).insert(e.thread);
    ev.push_back(std::move(j));
  }
  ev.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", fmt::format("rank {} host", rank)}}}});
  ev.push_back({{"ph", "M"}, {"name", "process_labels"}, {"pid", pid}, {"args", {{"labels", "CPU"}}}});
  for (auto t : threads)
    ev.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", t}, {"args", {{"name", fmt::format("thread {}", t)}}}});
  if (!streams.empty())
    ev.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid + 1000}, {"args", {{"name", "device"}}}});
  nlohmann::json out = {{"schemaVersion", 1}, {"traceEvents", std::move(ev)}, {"displayTimeUnit", "ms"},
                        {"distributedInfo", {{"rank", rank}}}};
  return out.dump() + "\n";
}

}  // namespace yolo11::instrument
