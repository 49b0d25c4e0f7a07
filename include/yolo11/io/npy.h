#pragma once
// NumPy .npy files of uint8 arrays: the image files of cache=disk (data/dataset.cpp), readable by numpy.load.
#include <cstdint>
#include <string>
#include <vector>

namespace yolo11::io {

/// A C-order uint8 array read from a .npy file. The file's bytes are kept whole: `data()` points into them after
/// the header, `size()` bytes (the product of `shape`), so reading costs one copy of the file and no more.
struct NpyU8 {
  std::vector<int64_t> shape;  ///< e.g. {h, w, 3} for an HWC image; {} for a 0-d array (one byte)
  std::string bytes;           ///< the whole file
  size_t offset = 0;           ///< where the array starts in `bytes`
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(bytes.data()) + offset; }
  size_t size() const { return bytes.size() - offset; }
};

/// Writes `data` (C order, the product of `shape` bytes) as a format 1.0 .npy with dtype '|u1', the header padded
/// to 64 bytes as numpy.save does, atomically (io::write_file_atomic). Throws std::invalid_argument for a negative
/// dimension, std::runtime_error (naming the path) when the file cannot be written.
void write_npy_u8(const std::string& path, const uint8_t* data, const std::vector<int64_t>& shape);

/// Reads a .npy of a uint8 array: formats 1.0, 2.0 and 3.0, dtype '|u1' (or '<u1' / '>u1'), C order, as numpy.save
/// writes them. Throws std::runtime_error naming the file for anything else: not a .npy, a header that does not
/// parse, another dtype, Fortran order, or a data size that is not the shape's product.
NpyU8 read_npy_u8(const std::string& path);

}  // namespace yolo11::io
