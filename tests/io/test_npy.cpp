// io/npy.h: the .npy codec of cache=disk. Round trips, the files numpy writes (format 1.0 and 2.0, 1-D, 0-d), the
// files it reads back from us, and a clear error for everything else.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "golden.h"
#include "process.h"
#include "yolo11/io/file.h"
#include "yolo11/io/npy.h"
#include "yolo11_test_config.h"

namespace fs = std::filesystem;
using yolo11::io::read_npy_u8;
using yolo11::io::write_npy_u8;

namespace {
std::vector<uint8_t> ramp(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + 3);
  return v;
}
size_t product(const std::vector<int64_t>& s) {
  return std::accumulate(s.begin(), s.end(), size_t{1}, [](size_t a, int64_t d) { return a * static_cast<size_t>(d); });
}
// A version 1.0 file with the given header dict (padded like numpy's) and `data` bytes.
void write_raw(const std::string& path, const std::string& dict, const std::string& data, char major = 1) {
  std::string header = dict;
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string b = std::string("\x93NUMPY", 6) + major + '\0';
  b.push_back(static_cast<char>(header.size() & 0xFF));
  b.push_back(static_cast<char>(header.size() >> 8));
  yolo11::io::write_file_atomic(path, b + header + data);
}
}  // namespace

TEST(Npy, RoundTripsImagesVectorsAndScalarsWithA64ByteAlignedHeader) {
  const fs::path dir = yolo11::test::scratch_dir("npy");
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{480, 640, 3}, {5}, {}, {0, 4, 3}}) {
    const auto data = ramp(product(shape));
    const std::string path = (dir / "a.npy").string();
    write_npy_u8(path, data.data(), shape);
    const auto a = read_npy_u8(path);
    EXPECT_EQ(a.shape, shape);
    ASSERT_EQ(a.size(), data.size());
    EXPECT_TRUE(std::equal(data.begin(), data.end(), a.data()));
    EXPECT_EQ(a.offset % 64, 0u) << "numpy pads the header so that the data starts at a multiple of 64";
  }
}

TEST(Npy, AnythingButAUint8COrderArrayIsAClearErrorNamingTheFile) {
  const fs::path dir = yolo11::test::scratch_dir("npy_bad");
  const std::string ok = "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }";
  struct Case {
    std::string name, content, expect;
  };
  std::vector<Case> cases = {
      {"not_npy", "", "not a .npy file"},
      {"float", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", "is not uint8"},
      {"fortran", "{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3), }", "Fortran order"},
      {"no_shape", "{'descr': '|u1', 'fortran_order': False, }", "no 'shape'"},
      {"bad_shape", "{'descr': '|u1', 'fortran_order': False, 'shape': (2, x), }", "does not parse"},
      {"huge_shape", "{'descr': '|u1', 'fortran_order': False, 'shape': (4294967296, 4294967296, 3), }", "too large"},
      {"short", ok, "truncated or padded"},
  };
  for (const auto& c : cases) {
    const std::string path = (dir / (c.name + ".npy")).string();
    if (c.name == "not_npy")
      yolo11::io::write_file_atomic(path, "P6 2 3 255\n");
    else
      write_raw(path, c.content, c.name == "short" ? std::string(5, 'x') : std::string(6, 'x'));
    try {
      read_npy_u8(path);
      ADD_FAILURE() << c.name << ": read without an error";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find(c.expect), std::string::npos) << c.name << ": " << what;
    }
  }
  const std::string v4 = (dir / "v4.npy").string();
  write_raw(v4, ok, std::string(6, 'x'), 4);
  EXPECT_THROW(read_npy_u8(v4), std::runtime_error);
  const std::string ok_path = (dir / "ok.npy").string();  // the same writer with the right size reads
  write_raw(ok_path, ok, std::string(6, 'x'));
  EXPECT_EQ(read_npy_u8(ok_path).shape, (std::vector<int64_t>{2, 3}));
}

TEST(Npy, NumpyReadsOurFilesAndWeReadNumpys) {
  std::string why;
  const std::string py = yolo11::test::readers_python("numpy", why);
  if (py.empty()) GTEST_SKIP() << why;
  const fs::path dir = yolo11::test::scratch_dir("npy_numpy");
  const auto img = ramp(4 * 5 * 3);
  write_npy_u8((dir / "ours.npy").string(), img.data(), {4, 5, 3});
  const std::string script = R"(
import sys, numpy as np
from numpy.lib import format as npf
d = sys.argv[1]
a = np.load(d + '/ours.npy')
want = ((np.arange(60) * 7 + 3) % 256).astype(np.uint8).reshape(4, 5, 3)
assert a.dtype == np.uint8 and a.shape == (4, 5, 3) and (a == want).all(), (a.dtype, a.shape)
np.save(d + '/image.npy', want)
np.save(d + '/vector.npy', np.arange(7, dtype=np.uint8))
np.save(d + '/scalar.npy', np.uint8(9))
with open(d + '/v2.npy', 'wb') as f:
    npf.write_array(f, want, version=(2, 0))
np.save(d + '/fortran.npy', np.asfortranarray(want))
np.save(d + '/int16.npy', want.astype(np.int16))
print('ok')
)";
  const std::string script_path = (dir / "npy.py").string();
  std::ofstream(script_path) << script;
  const std::string log = (dir / "npy.log").string();
  ASSERT_EQ(yolo11::test::run(py, {script_path, dir.string()}, log), 0) << yolo11::test::read_text(log);
  for (const std::string name : {"image", "v2"}) {
    const auto a = read_npy_u8((dir / (name + ".npy")).string());
    EXPECT_EQ(a.shape, (std::vector<int64_t>{4, 5, 3})) << name;
    ASSERT_EQ(a.size(), img.size()) << name;
    EXPECT_TRUE(std::equal(img.begin(), img.end(), a.data())) << name;
  }
  const auto v = read_npy_u8((dir / "vector.npy").string());
  EXPECT_EQ(v.shape, (std::vector<int64_t>{7}));
  ASSERT_EQ(v.size(), 7u);
  EXPECT_EQ(v.data()[6], 6);
  const auto s = read_npy_u8((dir / "scalar.npy").string());
  EXPECT_TRUE(s.shape.empty());
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s.data()[0], 9);
  EXPECT_THROW(read_npy_u8((dir / "fortran.npy").string()), std::runtime_error);
  EXPECT_THROW(read_npy_u8((dir / "int16.npy").string()), std::runtime_error);
}
