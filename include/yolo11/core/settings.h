#pragma once
// The choices several areas act on, typed once: config parses them from `key=value` and YAML, and data, instrument,
// engine and bench take the enums (docs/architecture.md, "One setting, end to end"). Torch-free.
#include <optional>
#include <string>

namespace yolo11::core {

/// `cache=`: where the training images are kept decoded between epochs, as Ultralytics' `cache` (false | true = ram |
/// disk). ram: every image resized to imgsz in memory (data/dataset.cpp checks the memory first); disk: one .npy per
/// image beside it (or under the user cache dir when the image dir is read-only).
enum class CacheMode { off, ram, disk };
/// "false" | "ram" | "disk": the spelling args.yaml, summary.json, the logs and the advice use.
const char* to_string(CacheMode mode);
/// false | true | ram | disk in any case (true = ram), and "", none, null, ~ = off (an empty YAML value);
/// std::nullopt for anything else.
std::optional<CacheMode> parse_cache_mode(const std::string& text);

/// `instrument=`: off: nothing is timed (a branch per call); basic: stage timers, NVTX ranges, the sampler, the log
/// lines, breakdown.csv, summary.json; full: basic + trace.json for `trace_steps`.
enum class InstrumentLevel { off, basic, full };
/// "off" | "basic" | "full".
const char* to_string(InstrumentLevel level);
/// off | basic | full in any case; std::nullopt for anything else.
std::optional<InstrumentLevel> parse_instrument_level(const std::string& text);

}  // namespace yolo11::core
