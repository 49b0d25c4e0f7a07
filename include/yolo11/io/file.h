#pragma once
// Small file helpers shared by every writer: atomic replacement and whole-file reads.
#include <string>
#include <string_view>

namespace yolo11::io {

/// Writes `bytes` to `path` atomically: a temp file beside it (`path.tmp.<pid>`), fsync, rename over `path`,
/// fsync of the directory. A crash leaves either the old file or the new one, never a torn one.
/// Throws std::runtime_error naming the path and the errno text on failure (the temp file is removed).
void write_file_atomic(const std::string& path, std::string_view bytes);

/// Reads a whole file. Throws std::runtime_error naming the path when it cannot be opened or read.
std::string read_file(const std::string& path);

}  // namespace yolo11::io
