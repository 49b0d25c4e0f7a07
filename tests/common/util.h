#pragma once
// Small helpers shared by the test suites.
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace yolo11::test {

/// Writes `bytes` to `path` (binary, truncating), creating its parent directories. Throws std::runtime_error when the
/// file cannot be written.
inline void write_file(const std::filesystem::path& path, const std::string& bytes) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

/// True when some element of `lines` contains `needle` as a substring.
inline bool any_contains(const std::vector<std::string>& lines, const std::string& needle) {
  for (const auto& line : lines)
    if (line.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace yolo11::test
