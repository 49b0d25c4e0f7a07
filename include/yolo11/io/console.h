#pragma once
// The console of every yolo11 command (Ultralytics' LOGGER and tqdm): plain lines, "WARNING " before warnings,
// errors on stderr, a \r progress line that other lines never glue onto, and no LibTorch-internal notices.
#include <spdlog/sinks/sink.h>

#include <cstdio>
#include <memory>
#include <string>

namespace yolo11::io {

/// Makes spdlog's default logger the console of a yolo11 command (console_sink(), level info) and keeps LibTorch's
/// known internal notices ("scatter_reduce() is in beta ...") off it; every other LibTorch warning is logged as a
/// spdlog warning. Call first in each entry point (src/cli/*.cpp); later calls change nothing.
void setup_console();

/// A sink writing each message as one plain line, `prefix` first (DDP ranks: "[rank N] "): info and below on `out`,
/// warnings on `out` as "WARNING message", errors on `err`. With `console`, a live progress line
/// (progress_update) is ended first, so every line starts on its own line. The logger's pattern is not used.
std::shared_ptr<spdlog::sinks::sink> plain_sink(std::FILE* out, std::FILE* err, std::string prefix = "",
                                                bool console = true);

/// plain_sink for a file: `path` replaced, or appended to with `append`; owns the file. Throws std::runtime_error
/// when it cannot be opened.
std::shared_ptr<spdlog::sinks::sink> plain_file_sink(const std::string& path, bool append);

/// The terminal progress line: prints "\r" + line on stdout, flushed; it stays live (not ended) until
/// progress_end() or the next console line.
void progress_update(const std::string& line);

/// Ends a live progress line with "\n"; nothing when none is live.
void progress_end();

/// True when LibTorch's warning `message` is one of the internal notices setup_console keeps off the console.
bool is_libtorch_notice(const std::string& message);

}  // namespace yolo11::io
