// TensorBoard event files (include/yolo11/io/tensorboard.h): TFRecord framing with masked CRC32C around Event
// messages serialized by libprotobuf (generated from src/io/tensorboard.proto at build time).
#include "yolo11/io/tensorboard.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "yolo11_features.h"

#if YOLO11_HAS_TENSORBOARD
#include "tensorboard.pb.h"
#endif

namespace yolo11::io {

namespace {

std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1U) ? (c >> 1) ^ 0x82F63B78U : c >> 1;
    t[i] = c;
  }
  return t;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

bool tensorboard_available() { return YOLO11_HAS_TENSORBOARD != 0; }

uint32_t crc32c(const void* data, size_t n) {
  static const std::array<uint32_t, 256> table = make_crc_table();
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = 0xFFFFFFFFU;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFFU] ^ (c >> 8);
  return c ^ 0xFFFFFFFFU;
}

uint32_t masked_crc32c(const void* data, size_t n) {
  const uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8U;
}

struct EventWriter::Impl {
  std::string path;
  std::ofstream out;
  std::string buf;  // framed records not yet written
  int64_t events = 0;

  void append_record(const std::string& data) {
    char head[12];
    const uint64_t len = data.size();
    for (int i = 0; i < 8; ++i) head[i] = static_cast<char>((len >> (8 * i)) & 0xFFU);  // little endian
    const uint32_t lcrc = masked_crc32c(head, 8);
    for (int i = 0; i < 4; ++i) head[8 + i] = static_cast<char>((lcrc >> (8 * i)) & 0xFFU);
    const uint32_t dcrc = masked_crc32c(data.data(), data.size());
    char tail[4];
    for (int i = 0; i < 4; ++i) tail[i] = static_cast<char>((dcrc >> (8 * i)) & 0xFFU);
    buf.append(head, sizeof head).append(data).append(tail, sizeof tail);
    ++events;
  }
};

#if YOLO11_HAS_TENSORBOARD

EventWriter::EventWriter(const std::string& dir) : impl_(std::make_unique<Impl>()) {
  GOOGLE_PROTOBUF_VERIFY_VERSION;
  std::filesystem::create_directories(dir);
  char host[256] = "localhost";
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "localhost");
  host[sizeof host - 1] = '\0';
  const double now = unix_now();
  impl_->path = (std::filesystem::path(dir) / ("events.out.tfevents." + std::to_string(static_cast<int64_t>(now)) +
                                               "." + host)).string();
  impl_->out.open(impl_->path, std::ios::binary | std::ios::trunc);
  if (!impl_->out) throw std::runtime_error("tensorboard: cannot create " + impl_->path + ": " + std::strerror(errno));
  tensorboard::Event ev;
  ev.set_wall_time(now);
  ev.set_step(0);
  ev.set_file_version("brain.Event:2");
  impl_->append_record(ev.SerializeAsString());
  flush();
}

void EventWriter::add_scalar(const std::string& tag, double value, int64_t step, double wall_time) {
  tensorboard::Event ev;
  ev.set_wall_time(wall_time < 0 ? unix_now() : wall_time);
  ev.set_step(step);
  auto* v = ev.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  impl_->append_record(ev.SerializeAsString());
}

#else

EventWriter::EventWriter(const std::string& dir) {
  throw std::runtime_error("tensorboard=true, but this build has no TensorBoard support (libprotobuf and protoc were "
                           "not found when it was configured, so " + dir + " gets no event file): install them "
                           "(apt-get install libprotobuf-dev protobuf-compiler), re-run cmake and rebuild, or set "
                           "tensorboard=false");
}

void EventWriter::add_scalar(const std::string&, double, int64_t, double) {}

#endif

EventWriter::~EventWriter() {
  try {
    if (impl_) flush();
  } catch (...) {  // a destructor must not throw; the error was already visible to flush() callers
  }
}

void EventWriter::flush() {
  if (impl_->buf.empty()) return;
  impl_->out.write(impl_->buf.data(), static_cast<std::streamsize>(impl_->buf.size()));
  impl_->out.flush();
  if (!impl_->out) throw std::runtime_error("tensorboard: cannot write " + impl_->path + ": " + std::strerror(errno));
  impl_->buf.clear();
}

const std::string& EventWriter::path() const { return impl_->path; }
int64_t EventWriter::events() const { return impl_->events; }

}  // namespace yolo11::io
