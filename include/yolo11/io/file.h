#pragma once
// Small file helpers shared by every writer: atomic replacement and whole-file reads.
#include <cstdint>
#include <string>
#include <vector>
#include <string_view>

namespace yolo11::io {

/// Writes `bytes` to `path` atomically: a temp file beside it (`path.tmp.<pid>`), fsync, rename over `path`,
/// fsync of the directory. A crash leaves either the old file or the new one, never a torn one.
/// Throws std::runtime_error naming the path and the errno text on failure (the temp file is removed).
void write_file_atomic(const std::string& path, std::string_view bytes);

/// Reads a whole file. Throws std::runtime_error naming the path when it cannot be opened or read.
std::string read_file(const std::string& path);

/// FNV-1a 64-bit hash of `bytes` (cache keys and identity stamps; not cryptographic).
uint64_t fnv1a64(std::string_view bytes);
/// fnv1a64 as 16 lowercase hex digits.
std::string fnv1a64_hex(std::string_view bytes);

/// The per-user cache root for files that cannot live beside the data: $YOLO11_CACHE_DIR, else
/// $XDG_CACHE_HOME/yolo11, else ~/.cache/yolo11, else <temp dir>/yolo11. Not created.
std::string user_cache_dir();

/// Fields of one CSV line (RFC 4180 quoting: a quoted field may hold commas, and "" inside it is one quote).
std::vector<std::string> split_csv_line(const std::string& line);

}  // namespace yolo11::io
