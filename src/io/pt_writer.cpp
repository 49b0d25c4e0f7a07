// The torch.save zip container (see pt_checkpoint.h): stored entries, data aligned to 64 bytes through a padding
// extra field in the local header, a central directory and its end record. No zip64: .pt files here are models
// (yolo11x in float16 is ~110 MB).
#include <array>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "yolo11/io/file.h"
#include "yolo11/io/pt_checkpoint.h"

namespace yolo11::io {

namespace {

uint32_t crc32(std::string_view bytes) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (const char ch : bytes) c = table[(c ^ static_cast<unsigned char>(ch)) & 0xffu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

void le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

constexpr uint64_t kAlign = 64;
constexpr uint16_t kPaddingField = 0x4246;  // the "FB" extra field torch.save pads with

}  // namespace

void write_pt_archive(const std::string& path, const std::string& archive, const std::string& data_pkl,
                      const std::vector<PtStorage>& storages) {
  if (archive.empty() || archive.find('/') != std::string::npos)
    throw std::invalid_argument("write_pt_archive: archive name '" + archive + "' must be non-empty and hold no '/'");
  struct Record {
    std::string name;
    std::string_view bytes;
  };
  std::vector<Record> records;
  records.push_back({archive + "/data.pkl", data_pkl});
  static const std::string kByteorder = "little", kVersion = "3\n";
  records.push_back({archive + "/byteorder", kByteorder});
  for (const auto& s : storages) records.push_back({archive + "/data/" + s.key, s.bytes});
  records.push_back({archive + "/version", kVersion});

  std::string out, central;
  const uint64_t limit = std::numeric_limits<uint32_t>::max();
  for (const auto& r : records) {
    const uint64_t offset = out.size();
    const uint32_t crc = crc32(r.bytes);
    // Local header (30 bytes) + name + extra; the extra field pads the data start to a multiple of kAlign.
    const uint64_t unpadded = offset + 30 + r.name.size() + 4;
    const uint64_t pad = (kAlign - unpadded % kAlign) % kAlign;
    le(out, 0x04034b50, 4);
    le(out, 20, 2);  // version needed: 2.0
    le(out, 0, 2);   // flags
    le(out, 0, 2);   // stored
    le(out, 0, 2);   // time
    le(out, 0x21, 2);  // date: 1980-01-01
    le(out, crc, 4);
    le(out, r.bytes.size(), 4);
    le(out, r.bytes.size(), 4);
    le(out, r.name.size(), 2);
    le(out, 4 + pad, 2);
    out += r.name;
    le(out, kPaddingField, 2);
    le(out, pad, 2);
    out.append(pad, 'Z');
    out.append(r.bytes);
    if (out.size() > limit) throw std::invalid_argument("write_pt_archive: " + path + " would exceed 4 GiB (no zip64)");

    le(central, 0x02014b50, 4);
    le(central, 0x031e, 2);  // made by: Unix, 3.0
    le(central, 20, 2);
    le(central, 0, 2);
    le(central, 0, 2);
    le(central, 0, 2);
    le(central, 0x21, 2);
    le(central, crc, 4);
    le(central, r.bytes.size(), 4);
    le(central, r.bytes.size(), 4);
    le(central, r.name.size(), 2);
    le(central, 0, 2);  // extra
    le(central, 0, 2);  // comment
    le(central, 0, 2);  // disk
    le(central, 0, 2);  // internal attributes
    le(central, 0644u << 16, 4);  // external attributes: -rw-r--r--
    le(central, offset, 4);
    central += r.name;
  }
  const uint64_t cd_offset = out.size();
  out += central;
  if (out.size() + 22 > limit || records.size() > 0xffff)
    throw std::invalid_argument("write_pt_archive: " + path + " would exceed the zip limits (no zip64)");
  le(out, 0x06054b50, 4);
  le(out, 0, 2);
  le(out, 0, 2);
  le(out, records.size(), 2);
  le(out, records.size(), 2);
  le(out, central.size(), 4);
  le(out, cd_offset, 4);
  le(out, 0, 2);
  write_file_atomic(path, out);
}

}  // namespace yolo11::io
