#include "yolo11/io/safetensors.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <stdexcept>

#include "yolo11/io/file.h"

namespace yolo11::io {
namespace {

using json = nlohmann::json;

struct DtypeInfo {
  const char* name;
  c10::ScalarType type;
};
constexpr DtypeInfo kDtypes[] = {
    {"F32", c10::kFloat}, {"F16", c10::kHalf}, {"BF16", c10::kBFloat16}, {"F64", c10::kDouble},
    {"I64", c10::kLong},  {"I32", c10::kInt},  {"I16", c10::kShort},     {"I8", c10::kChar},
    {"U8", c10::kByte},   {"BOOL", c10::kBool},
};

c10::ScalarType dtype_from_name(const std::string& name, const std::string& where) {
  for (const auto& d : kDtypes)
    if (name == d.name) return d.type;
  throw std::runtime_error(where + ": unsupported dtype '" + name + "' (supported: F32 F16 BF16 F64 I64 I32 I16 I8 U8 BOOL)");
}

const char* dtype_name(c10::ScalarType t) {
  for (const auto& d : kDtypes)
    if (t == d.type) return d.name;
  throw std::runtime_error(std::string("safetensors: unsupported tensor dtype ") + c10::toString(t));
}

[[noreturn]] void corrupt(const std::string& path, const std::string& why) {
  throw std::runtime_error(path + ": not a valid safetensors file (" + why +
                           "); re-create or re-download it");
}

}  // namespace

bool TensorFile::contains(const std::string& name) const {
  for (const auto& [k, v] : tensors)
    if (k == name) return true;
  return false;
}

const at::Tensor& TensorFile::at(const std::string& name) const {
  for (const auto& [k, v] : tensors)
    if (k == name) return v;
  throw std::out_of_range(path + ": no tensor named '" + name + "'");
}

TensorFile load_safetensors(const std::string& path) {
  const std::string bytes = read_file(path);
  if (bytes.size() < 8) corrupt(path, "file has " + std::to_string(bytes.size()) + " bytes, less than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  if (n > bytes.size() - 8) corrupt(path, "header length " + std::to_string(n) + " exceeds file size " + std::to_string(bytes.size()));
  json header;
  try {
    header = json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const std::exception& e) {
    corrupt(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) corrupt(path, "header is not a JSON object");
  const size_t data_begin = 8 + n;
  const size_t data_size = bytes.size() - data_begin;

  TensorFile out;
  out.path = path;
  struct Entry {
    std::string name;
    size_t begin, end;
    c10::ScalarType type;
    std::vector<int64_t> shape;
  };
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) corrupt(path, "__metadata__ is not an object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m)
        out.metadata[m.key()] = m.value().is_string() ? m.value().get<std::string>() : m.value().dump();
      continue;
    }
    const auto& v = it.value();
    const std::string where = path + ": tensor '" + it.key() + "'";
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      corrupt(path, "entry '" + it.key() + "' lacks dtype/shape/data_offsets");
    Entry e;
    e.name = it.key();
    if (!v["dtype"].is_string() || !v["shape"].is_array())
      corrupt(path, "entry '" + e.name + "': dtype is not a string or shape not a list");
    e.type = dtype_from_name(v["dtype"].get<std::string>(), where);
    int64_t numel = 1;
    for (const auto& d : v["shape"]) {
      if (!d.is_number_integer()) corrupt(path, "dimension " + d.dump() + " of '" + e.name + "' is not an integer");
      const int64_t s = d.get<int64_t>();
      if (s < 0) corrupt(path, "negative dimension in '" + e.name + "'");
      if (s > 0 && numel > static_cast<int64_t>(data_size) / s)  // more elements than data bytes: no overflow below
        corrupt(path, "shape of '" + e.name + "' needs more bytes than the file's " + std::to_string(data_size));
      e.shape.push_back(s);
      numel *= s;
    }
    const auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      corrupt(path, "data_offsets of '" + e.name + "' is not [begin, end]");
    e.begin = off[0].get<size_t>();
    e.end = off[1].get<size_t>();
    if (e.end < e.begin || e.end > data_size)
      corrupt(path, "data_offsets of '" + e.name + "' [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                        "] outside the " + std::to_string(data_size) + " data bytes (truncated file?)");
    const size_t expect = static_cast<size_t>(numel) * c10::elementSize(e.type);
    if (e.end - e.begin != expect)
      corrupt(path, "'" + e.name + "' holds " + std::to_string(e.end - e.begin) + " bytes, its shape needs " + std::to_string(expect));
    entries.push_back(std::move(e));
  }
  // File order = order of data offsets (JSON object key order is not significant).
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  size_t cursor = 0;
  for (const auto& e : entries) {
    if (e.begin < cursor) corrupt(path, "tensor '" + e.name + "' overlaps the previous one");
    cursor = e.end;
    at::Tensor t = at::empty(e.shape, at::TensorOptions().dtype(e.type));
    if (e.end > e.begin) std::memcpy(t.data_ptr(), bytes.data() + data_begin + e.begin, e.end - e.begin);
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

std::string encode_safetensors(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<at::Tensor> cpu;
  cpu.reserve(tensors.size());
  std::set<std::string> seen;
  size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__" || !seen.insert(name).second)
      throw std::runtime_error("safetensors: duplicate or reserved tensor name '" + name + "'");
    at::Tensor c = t.detach().to(at::kCPU).contiguous();
    const size_t nbytes = static_cast<size_t>(c.numel()) * c.element_size();
    header[name] = {{"dtype", dtype_name(c.scalar_type())},
                    {"shape", c.sizes().vec()},
                    {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
    cpu.push_back(std::move(c));
  }
  std::string h = header.dump();
  while (h.size() % 8 != 0) h.push_back(' ');
  std::string buf;
  buf.reserve(8 + h.size() + offset);
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) buf.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  buf += h;
  for (const auto& c : cpu)
    buf.append(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.numel()) * c.element_size());
  return buf;
}

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::string buf;
  try {
    buf = encode_safetensors(tensors, metadata);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  write_file_atomic(path, buf);
}

std::map<std::string, std::string> read_safetensors_metadata(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  if (size < 8) corrupt(path, "file has " + std::to_string(size) + " bytes, less than the 8-byte header length");
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n > size - 8) corrupt(path, "header length " + std::to_string(n) + " exceeds file size " + std::to_string(size));
  std::string h(static_cast<size_t>(n), '\0');
  if (!in.read(h.data(), static_cast<std::streamsize>(n))) corrupt(path, "cannot read the header");
  json header;
  try {
    header = json::parse(h);
  } catch (const std::exception& e) {
    corrupt(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) corrupt(path, "header is not a JSON object");
  std::map<std::string, std::string> meta;
  const uint64_t data_size = size - 8 - n;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) corrupt(path, "__metadata__ is not an object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m)
        meta[m.key()] = m.value().is_string() ? m.value().get<std::string>() : m.value().dump();
      continue;
    }
    const auto& v = it.value();
    if (!v.is_object() || !v.contains("data_offsets") || !v["data_offsets"].is_array() ||
        v["data_offsets"].size() != 2 || !v["data_offsets"][1].is_number_unsigned())
      corrupt(path, "entry '" + it.key() + "' lacks data_offsets [begin, end]");
    const auto end = v["data_offsets"][1].get<uint64_t>();
    if (end > data_size)
      corrupt(path, "data_offsets of '" + it.key() + "' end at " + std::to_string(end) + ", beyond the " +
                        std::to_string(data_size) + " data bytes (truncated file?)");
  }
  return meta;
}

}  // namespace yolo11::io
