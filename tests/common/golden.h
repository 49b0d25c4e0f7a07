#pragma once
// Test helpers: locating reference material and comparing tensors at the golden README's tolerances.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "yolo11/io/safetensors.h"

namespace yolo11::test {

/// ../shared (override with env YOLO11_SHARED_DIR). The golden files live in <shared>/golden.
std::string shared_dir();
/// <shared>/golden/<name>; fails the test (FAIL-style exception) when missing, naming the path.
std::string golden_path(const std::string& name);
/// Loads a golden safetensors file (throws with a clear message when missing).
io::TensorFile load_golden(const std::string& name);
/// Dataset root for tests: <repo>/datasets/<name> if present (tools/get_dataset.sh), else <shared>/datasets/<name>.
/// Throws naming both paths and the fetch command when neither exists.
std::string dataset_dir(const std::string& name);
/// A fresh empty directory <build>/test_scratch/<Suite.Test>/<name> (removed and re-created): unique per test, so
/// tests running in parallel never share one. Removed again when the test passes or skips; a failed test's stays
/// (env YOLO11_KEEP_SCRATCH=1 keeps every test's).
std::string scratch_dir(const std::string& name);
/// True when env YOLO11_KEEP_SCRATCH is set to anything but "" or "0": every test keeps its scratch folders.
bool keep_scratch();

/// |got − ref| ≤ atol + rtol·|ref| elementwise (after casting both to double). Returns a gtest assertion
/// result that names the worst element, its index, both values and how many elements failed.
::testing::AssertionResult all_close(const torch::Tensor& got, const torch::Tensor& ref, double atol, double rtol);

}  // namespace yolo11::test

#define EXPECT_ALL_CLOSE(got, ref, atol, rtol) EXPECT_TRUE(::yolo11::test::all_close((got), (ref), (atol), (rtol)))
#define ASSERT_ALL_CLOSE(got, ref, atol, rtol) ASSERT_TRUE(::yolo11::test::all_close((got), (ref), (atol), (rtol)))
