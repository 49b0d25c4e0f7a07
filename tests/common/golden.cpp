#include "golden.h"

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "yolo11_test_config.h"

namespace yolo11::test {
namespace fs = std::filesystem;

std::string shared_dir() {
  if (const char* env = std::getenv("YOLO11_SHARED_DIR"); env && *env) return env;
  return YOLO11_TEST_SHARED_DIR;
}

std::string golden_path(const std::string& name) {
  const fs::path p = fs::path(shared_dir()) / "golden" / name;
  if (!fs::exists(p))
    throw std::runtime_error("golden file missing: " + p.string() +
                             " (set YOLO11_SHARED_DIR to the folder holding golden/)");
  return p.string();
}

io::TensorFile load_golden(const std::string& name) { return io::load_safetensors(golden_path(name)); }

std::string dataset_dir(const std::string& name) {
  const fs::path local = fs::path(YOLO11_TEST_SOURCE_DIR) / "datasets" / name;
  if (fs::exists(local)) return local.string();
  const fs::path mirror = fs::path(shared_dir()) / "datasets" / name;
  if (fs::exists(mirror)) return mirror.string();
  throw std::runtime_error("dataset '" + name + "' not found at " + local.string() + " nor " + mirror.string() +
                           "; run tools/get_dataset.sh " + name);
}

bool keep_scratch() {
  const char* keep = std::getenv("YOLO11_KEEP_SCRATCH");
  return keep && *keep && std::string(keep) != "0";
}

namespace {
fs::path test_scratch_root(const ::testing::TestInfo* info) {
  fs::path p = fs::path(YOLO11_TEST_BINARY_DIR) / "test_scratch";
  if (info) p /= std::string(info->test_suite_name()) + "." + info->name();
  return p;
}

// Removes a test's scratch folders when it passes or skips; a failed test's stay for reading. The suite's training
// runs leave checkpoints, plots and traces there (a whole suite's worth filled a CI disk), so only failures keep them.
class ScratchCleaner : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed() || keep_scratch()) return;
    std::error_code ec;
    fs::remove_all(test_scratch_root(&info), ec);
  }
};
// Registered before gtest_main runs the tests: this object is linked into every test binary that calls scratch_dir.
[[maybe_unused]] const bool scratch_cleaner_registered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new ScratchCleaner);
  return true;
}();
}  // namespace

std::string scratch_dir(const std::string& name) {
  // One folder per running test: ctest runs tests in parallel processes, and two tests that picked the same
  // name must not remove each other's files.
  fs::path p = test_scratch_root(::testing::UnitTest::GetInstance()->current_test_info());
  p /= name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

::testing::AssertionResult all_close(const torch::Tensor& got, const torch::Tensor& ref, double atol, double rtol) {
  if (got.sizes() != ref.sizes()) {
    std::ostringstream ss;
    ss << "shape mismatch: got " << got.sizes() << " ref " << ref.sizes();
    return ::testing::AssertionFailure() << ss.str();
  }
  if (ref.numel() == 0) return ::testing::AssertionSuccess();
  const auto g = got.detach().to(torch::kCPU).to(torch::kDouble).flatten();
  const auto r = ref.detach().to(torch::kCPU).to(torch::kDouble).flatten();
  const auto err = (g - r).abs();
  const auto allowed = atol + rtol * r.abs();
  const auto bad = (err > allowed) | g.isnan() != r.isnan();
  const int64_t nbad = bad.sum().item<int64_t>();
  if (nbad == 0) return ::testing::AssertionSuccess();
  const int64_t worst = (err - allowed).nan_to_num(1e300).argmax().item<int64_t>();
  std::ostringstream ss;
  ss << nbad << " of " << r.numel() << " elements differ beyond atol " << atol << " rtol " << rtol
     << "; worst at flat index " << worst << ": got " << g[worst].item<double>() << " ref "
     << r[worst].item<double>() << " (|diff| " << err[worst].item<double>() << ")";
  return ::testing::AssertionFailure() << ss.str();
}

}  // namespace yolo11::test
