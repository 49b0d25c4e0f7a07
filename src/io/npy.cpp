#include "yolo11/io/npy.h"

#include <cctype>
#include <limits>
#include <stdexcept>

#include "yolo11/core/strings.h"
#include "yolo11/io/file.h"

namespace yolo11::io {
namespace {
constexpr char kMagic[] = "\x93NUMPY";

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what + " (a .npy of a uint8 array, C order, is expected)");
}

// The value text of `key` in the header dict ("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }").
std::string dict_value(const std::string& path, const std::string& header, const std::string& key) {
  size_t p = header.find("'" + key + "'");
  if (p == std::string::npos) bad(path, "the .npy header has no '" + key + "'");
  p = header.find(':', p);
  if (p == std::string::npos) bad(path, "the .npy header does not parse");
  ++p;
  while (p < header.size() && std::isspace(static_cast<unsigned char>(header[p]))) ++p;
  size_t e = p;
  if (e < header.size() && header[e] == '(') {
    e = header.find(')', e);
    if (e == std::string::npos) bad(path, "the .npy header's shape does not close");
    return header.substr(p, e + 1 - p);
  }
  while (e < header.size() && header[e] != ',' && header[e] != '}') ++e;
  std::string v = header.substr(p, e - p);
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
  return v;
}

std::vector<int64_t> parse_shape(const std::string& path, const std::string& t) {  // "(2, 3)", "(5,)", "()"
  std::vector<int64_t> shape;
  size_t i = 1;
  while (i + 1 < t.size()) {
    while (i < t.size() && (std::isspace(static_cast<unsigned char>(t[i])) || t[i] == ',')) ++i;
    if (i + 1 >= t.size()) break;
    if (!std::isdigit(static_cast<unsigned char>(t[i]))) bad(path, "the .npy shape " + t + " does not parse");
    int64_t v = 0;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) {
      if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) bad(path, "the .npy shape " + t + " is too large");
      v = v * 10 + (t[i++] - '0');
    }
    shape.push_back(v);
  }
  return shape;
}
}  // namespace

void write_npy_u8(const std::string& path, const uint8_t* data, const std::vector<int64_t>& shape) {
  std::vector<std::string> dims;
  size_t n = 1;
  for (const int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("write_npy_u8: negative dimension for " + path);
    dims.push_back(std::to_string(d));
    n *= static_cast<size_t>(d);
  }
  // Python's tuple: (h, w, 3); one dimension keeps its comma, (5,); none is ()
  const std::string tuple = "(" + core::join(dims, ", ") + (shape.size() == 1 ? ",)" : ")");
  std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': " + tuple + ", }";
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::string bytes(kMagic, 6);
  bytes += '\x01';
  bytes += '\x00';
  bytes.push_back(static_cast<char>(header.size() & 0xFF));
  bytes.push_back(static_cast<char>(header.size() >> 8));
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(data), n);
  write_file_atomic(path, bytes);
}

NpyU8 read_npy_u8(const std::string& path) {
  NpyU8 r;
  r.bytes = read_file(path);
  const std::string& b = r.bytes;
  if (b.size() < 10 || b.compare(0, 6, kMagic, 6) != 0) bad(path, "not a .npy file");
  const auto major = static_cast<unsigned char>(b[6]);
  size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(b[8]) | static_cast<size_t>(static_cast<unsigned char>(b[9])) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) bad(path, "truncated .npy header");
    for (int k = 3; k >= 0; --k) header_len = header_len << 8 | static_cast<unsigned char>(b[8 + k]);
    start = 12;
  } else {
    bad(path, ".npy format version " + std::to_string(major) + " is not one of 1, 2, 3");
  }
  if (header_len > b.size() - start) bad(path, "truncated .npy header");
  const std::string header = b.substr(start, header_len);
  const std::string descr = dict_value(path, header, "descr");
  if (descr != "'|u1'" && descr != "'<u1'" && descr != "'>u1'") bad(path, "dtype " + descr + " is not uint8");
  if (dict_value(path, header, "fortran_order") != "False") bad(path, "Fortran order is not read");
  r.shape = parse_shape(path, dict_value(path, header, "shape"));
  r.offset = start + header_len;
  size_t n = 1;
  for (const int64_t d : r.shape) {
    if (d != 0 && n > std::numeric_limits<size_t>::max() / static_cast<size_t>(d))
      bad(path, "the .npy shape is too large");
    n *= static_cast<size_t>(d);
  }
  if (r.size() != n)
    bad(path,
        "truncated or padded .npy: " + std::to_string(r.size()) + " data bytes for a shape of " + std::to_string(n));
  return r;
}

}  // namespace yolo11::io
