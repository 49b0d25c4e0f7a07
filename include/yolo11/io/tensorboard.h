#pragma once
// TensorBoard event files (what torch.utils.tensorboard.SummaryWriter writes): a sequence of TFRecord records
//   uint64 length (little endian) | uint32 masked_crc32c(length bytes) | data[length] | uint32 masked_crc32c(data)
// whose data are serialized `Event` messages (src/io/tensorboard.proto, TensorBoard's field numbers): the first
// holds file_version "brain.Event:2", every other one a Summary with one scalar (tag, simple_value).
// Protobuf comes from Debian's libprotobuf (optional at build time: tensorboard_available()).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace yolo11::io {

/// True when this build has TensorBoard support (libprotobuf and protoc were found at configure time).
bool tensorboard_available();

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of `n` bytes, as TFRecord uses it.
uint32_t crc32c(const void* data, size_t n);
/// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t masked_crc32c(const void* data, size_t n);

/// One event file. Not thread-safe: call from one thread (the trainer's).
class EventWriter {
 public:
  /// Creates `dir` if needed and `dir`/events.out.tfevents.<unix seconds>.<hostname>, then writes the file_version
  /// record. Throws std::runtime_error when the build has no protobuf (saying how to get it) or the file cannot be
  /// created (naming it).
  explicit EventWriter(const std::string& dir);
  ~EventWriter();  ///< flushes and closes
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  /// Appends one scalar event (stored as float32, TensorBoard's simple_value). `wall_time`: seconds since the Unix
  /// epoch; < 0 means now. Buffered until flush().
  void add_scalar(const std::string& tag, double value, int64_t step, double wall_time = -1);
  /// Writes buffered records to disk (TensorBoard reads the file while it grows). Throws on a write error.
  void flush();
  /// The event file's path.
  const std::string& path() const;
  /// Events written so far (the file_version record included).
  int64_t events() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace yolo11::io
