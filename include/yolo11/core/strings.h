#pragma once
// Small text, time and environment helpers every area may use (ASCII text; the steady clock; on/off switches).
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace yolo11::core {

/// ASCII lower case ("CUDA:0" → "cuda:0"); other bytes unchanged.
std::string lower(std::string s);
/// `s` without leading and trailing spaces, tabs, CR and LF.
std::string trim(const std::string& s);
/// The parts with `sep` between them ("" for none).
std::string join(const std::vector<std::string>& parts, const std::string& sep);
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);
/// `s` as it may go into a message: control bytes (NUL, tab, newline, ESC, DEL, ...) written as \xNN, other bytes
/// unchanged. A NUL inside an exception's text cuts what() short there, and the file name after it is lost.
std::string printable(std::string_view s);
/// Seconds from `t0` to now on the steady clock.
double seconds_since(std::chrono::steady_clock::time_point t0);
/// Whether the environment variable `name` is set to anything but "" or "0": the YOLO11_* on/off switches
/// (YOLO11_MALLOC_DEFAULTS, YOLO11_KEEP_DENORMALS, YOLO11_FILL_UNINITIALIZED).
bool env_flag(const char* name);

}  // namespace yolo11::core
