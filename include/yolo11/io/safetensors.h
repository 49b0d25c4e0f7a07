#pragma once
// safetensors read/write (https://github.com/huggingface/safetensors format): u64 little-endian header length N,
// N bytes of JSON header {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}
// padded with spaces to a multiple of 8, then the raw little-endian row-major tensor bytes.
#include <ATen/Tensor.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace yolo11::io {

/// Named tensors in file order plus the string metadata. Tensors are CPU, contiguous, in the stored dtype
/// (F32→kFloat, F16→kHalf, BF16→kBFloat16, F64→kDouble, I64→kLong, I32→kInt, I16→kShort, I8→kChar,
/// U8→kByte, BOOL→kBool). Shape [] gives a 0-d tensor; empty shapes (e.g. [0, 4]) are kept.
struct TensorFile {
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  std::map<std::string, std::string> metadata;

  bool contains(const std::string& name) const;
  /// Throws std::out_of_range naming the missing tensor and the file.
  const at::Tensor& at(const std::string& name) const;
  std::string path;  ///< the file it was read from (for messages)
};

/// Reads a safetensors file. Throws std::runtime_error naming the file and the defect for a missing,
/// truncated or corrupt file (bad header length, invalid JSON, unknown dtype, offsets out of range or
/// overlapping, byte count not matching shape × dtype size).
TensorFile load_safetensors(const std::string& path);

/// Writes tensors (any device; copied to CPU contiguous) in the given order, with optional metadata,
/// atomically (temp file + fsync + rename). Names must be unique and not "__metadata__".
/// Throws std::runtime_error on unsupported dtype or I/O failure.
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// The bytes save_safetensors writes (for writers that place the same content in several files).
std::string encode_safetensors(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                               const std::map<std::string, std::string>& metadata = {});

/// Reads only the header of a safetensors file and returns its metadata, after checking that the file is
/// structurally complete: header length, valid JSON, and every tensor's data_offsets inside the file (a file cut
/// short by a crash fails here). Cheap (no tensor data is read). Throws std::runtime_error naming the file.
std::map<std::string, std::string> read_safetensors_metadata(const std::string& path);

}  // namespace yolo11::io
