// Test-only hooks of the training step; see test_hooks.h.
#include "test_hooks.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace yolo11::engine {

namespace {
struct Delay {
  instrument::StepStage stage;
  int rank = 0;
  int ms = 0;
};

std::vector<Delay> parse_delays() {
  std::vector<Delay> out;
  const char* env = std::getenv("YOLO11_TEST_DELAY");
  if (!env || !*env) return out;
  std::stringstream all(env);
  std::string item;
  while (std::getline(all, item, ',')) {
    const auto a = item.find(':'), b = item.rfind(':');
    if (a == std::string::npos || a == b) {
      spdlog::warn("YOLO11_TEST_DELAY: '{}' ignored; expected stage:rank:ms", item);
      continue;
    }
    const auto stage = instrument::parse_step_stage(item.substr(0, a));
    if (!stage) {
      spdlog::warn("YOLO11_TEST_DELAY: '{}' ignored; '{}' is not a stage", item, item.substr(0, a));
      continue;
    }
    out.push_back({*stage, std::atoi(item.substr(a + 1, b - a - 1).c_str()), std::atoi(item.c_str() + b + 1)});
  }
  return out;
}
}  // namespace

void test_delay(int rank, instrument::StepStage stage) {
  static const std::vector<Delay> delays = parse_delays();
  for (const auto& d : delays)
    if (d.rank == rank && d.stage == stage && d.ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(d.ms));
}

}  // namespace yolo11::engine
