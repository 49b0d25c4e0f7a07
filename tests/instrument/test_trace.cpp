// trace.json: valid Chrome trace JSON, well-formed and properly nested complete events, the specified stage
// names, a track per thread (loader workers included), counters, and only the configured step range.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "golden.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/instrument/range.h"
#include "yolo11/instrument/trace.h"
#include "yolo11/io/file.h"

namespace yolo11::instrument {
namespace {

using namespace std::chrono_literals;

struct Ev {
  std::string name;
  double ts, dur;
};

nlohmann::json run_and_read_trace(const std::string& dir) {
  ProfilerOptions o;
  o.level = Level::full;
  o.log_every = 2;
  o.log_lines = false;
  o.trace_steps = std::make_pair<int64_t, int64_t>(1, 100);  // from step 1 on, through the epoch end
  o.sample_hz = 200;
  o.run_dir = dir;
  Profiler prof(o);

  std::atomic<bool> stop{false};
  std::thread loader([&] {
    name_this_thread("loader 0");
    size_t depth = 0;
    while (!stop.load()) {
      {
        ScopedRange load("load");
        { ScopedRange mosaic("mosaic"); std::this_thread::sleep_for(300us); }
        { ScopedRange augment("augment"); std::this_thread::sleep_for(300us); }
      }
      { ScopedRange collate("collate"); std::this_thread::sleep_for(200us); }
      prof.set_queue_depth(++depth % 4);
    }
  });
  prof.begin_epoch(0);
  for (int64_t step = 0; step < 4; ++step) {
    prof.begin_step(step);
    for (const char* name : kStepStages) {
      auto s = prof.stage(name);
      std::this_thread::sleep_for(2ms);
    }
    prof.end_step(8);
  }
  stop = true;
  loader.join();
  { auto s = prof.stage("val"); }
  {
    auto s = prof.stage("log");  // the trainer takes the epoch table inside "log", then checkpoints
    prof.end_epoch();
  }
  { auto s = prof.stage("checkpoint"); }
  prof.finish();
  return nlohmann::json::parse(io::read_file(dir + "/trace.json"));
}

TEST(Trace, TraceJsonIsValidNestedAndNamedAsSpecified) {
  const std::string dir = test::scratch_dir("instrument_trace");
  const nlohmann::json doc = run_and_read_trace(dir);
  ASSERT_TRUE(doc.contains("traceEvents") && doc["traceEvents"].is_array());

  std::map<int64_t, std::vector<Ev>> by_tid;
  std::map<int64_t, std::string> thread_names;
  std::set<std::string> counters;
  for (const auto& e : doc["traceEvents"]) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e.at("name") == "thread_name") thread_names[e.at("tid")] = e.at("args").at("name");
    if (ph == "C") {
      counters.insert(e.at("name").get<std::string>());
      EXPECT_GE(e.at("ts").get<double>(), 0.0);
    }
    if (ph != "X") continue;
    const double ts = e.at("ts"), dur = e.at("dur");
    EXPECT_GE(ts, 0.0) << e.dump();
    EXPECT_GE(dur, 0.0) << e.dump();
    by_tid[e.at("tid")].push_back({e.at("name"), ts, dur});
  }

  // Properly nested per thread: sorted by start (longer first on ties), each event lies inside the innermost
  // open event or starts after it ended.
  constexpr double eps = 1e-3;  // µs: rounding of ns → µs doubles
  for (auto& [tid, evs] : by_tid) {
    std::sort(evs.begin(), evs.end(),
              [](const Ev& a, const Ev& b) { return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur; });
    std::vector<Ev> stack;
    for (const Ev& e : evs) {
      while (!stack.empty() && e.ts >= stack.back().ts + stack.back().dur - eps) stack.pop_back();
      if (!stack.empty()) {
        EXPECT_LE(e.ts + e.dur, stack.back().ts + stack.back().dur + eps)
            << "thread " << tid << ": '" << e.name << "' overlaps its parent '" << stack.back().name << "'";
      }
      stack.push_back(e);
    }
  }

  // Names: the specified stages, "step N" for the traced steps only, "epoch N".
  std::set<std::string> allowed;
  for (const char* n : kStepStages) allowed.insert(n);
  for (const char* n : kEpochStages) allowed.insert(n);
  for (const char* n : kLoaderStages) allowed.insert(n);
  std::set<std::string> steps, trainer_stages, loader_stages, profiler_steps;
  int64_t trainer_tid = -1, loader_tid = -1;
  for (const auto& [tid, name] : thread_names) {
    if (name == "trainer") trainer_tid = tid;
    if (name == "loader 0") loader_tid = tid;
  }
  ASSERT_NE(trainer_tid, -1) << "no thread track named 'trainer'";
  ASSERT_NE(loader_tid, -1) << "no thread track named 'loader 0' (worker threads missing)";
  for (const auto& [tid, evs] : by_tid) {
    for (const Ev& e : evs) {
      if (e.name.rfind("step ", 0) == 0) {
        steps.insert(e.name);
      } else if (e.name.rfind("ProfilerStep#", 0) == 0) {
        profiler_steps.insert(e.name);
      } else if (e.name.rfind("epoch ", 0) != 0) {
        EXPECT_TRUE(allowed.count(e.name)) << "unexpected event name '" << e.name << "'";
      }
      if (tid == trainer_tid) trainer_stages.insert(e.name);
      if (tid == loader_tid) loader_stages.insert(e.name);
    }
  }
  EXPECT_EQ(steps, (std::set<std::string>{"step 1", "step 2", "step 3"}));  // trace_steps 1:100, 4 steps run
  // HTA / Kineto consumers: iterations as ProfilerStep#N, distributedInfo, process labels.
  EXPECT_EQ(profiler_steps, (std::set<std::string>{"ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"}));
  EXPECT_EQ(doc.at("distributedInfo").at("rank"), 0);
  EXPECT_EQ(doc.at("distributedInfo").at("world_size"), 1);
  for (const char* n : kStepStages) EXPECT_TRUE(trainer_stages.count(n)) << n;
  for (const char* n : kEpochStages) EXPECT_TRUE(trainer_stages.count(n)) << n;
  EXPECT_TRUE(trainer_stages.count("epoch 0"));
  for (const char* n : {"load", "mosaic", "augment", "collate"}) EXPECT_TRUE(loader_stages.count(n)) << n;
  EXPECT_TRUE(counters.count("queue depth"));
  EXPECT_TRUE(counters.count("RSS MiB"));
  EXPECT_TRUE(counters.count("CPU %"));
}

TEST(Trace, BasicLevelWritesNoTrace) {
  const std::string dir = test::scratch_dir("instrument_trace_basic");
  ProfilerOptions o;
  o.level = Level::basic;
  o.log_lines = false;
  o.run_dir = dir;
  {
    Profiler prof(o);
    prof.begin_epoch(0);
    prof.begin_step(0);
    { auto s = prof.stage("forward"); }
    prof.end_step(1);
    prof.end_epoch();
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/trace.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/summary.json"));
}

TEST(Trace, EventsOutsideRecordingAreDropped) {
  trace::clear();
  trace::set_origin(now_ns());
  trace::complete("load", now_ns(), now_ns() + 10);
  EXPECT_EQ(trace::event_count(), 0);
  trace::set_recording(true);
  const int64_t t = now_ns();
  trace::complete("load", t, t + 1000);
  trace::counter("queue depth", 3, t);
  trace::set_recording(false);
  EXPECT_EQ(trace::event_count(), 2);
  const std::string dir = test::scratch_dir("instrument_trace_raw");
  trace::write(dir + "/t.json", R"({"note": "x"})");
  const auto doc = nlohmann::json::parse(io::read_file(dir + "/t.json"));
  EXPECT_EQ(doc["otherData"]["note"], "x");
  int x = 0, c = 0;
  for (const auto& e : doc["traceEvents"]) x += e["ph"] == "X", c += e["ph"] == "C";
  EXPECT_EQ(x, 1);
  EXPECT_EQ(c, 1);
  trace::clear();
}

}  // namespace
}  // namespace yolo11::instrument
