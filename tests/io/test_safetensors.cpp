#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "golden.h"
#include "process.h"
#include "yolo11/config/train_config.h"
#include "yolo11/engine/trainer.h"
#include "yolo11/io/file.h"
#include "yolo11/io/safetensors.h"
#include "yolo11_test_config.h"

using yolo11::io::load_safetensors;
using yolo11::io::save_safetensors;

TEST(SafeTensors, RoundTripKeepsOrderDtypesShapesAndMetadata) {
  const auto dir = yolo11::test::scratch_dir("safetensors_roundtrip");
  std::vector<std::pair<std::string, torch::Tensor>> ts = {
      {"z.f32", torch::randn({3, 4})},
      {"a.f16", torch::randn({5}).to(torch::kHalf)},
      {"m.bf16", torch::randn({2, 2}).to(torch::kBFloat16)},
      {"scalar.i64", torch::tensor(int64_t{7})},
      {"empty.f32", torch::empty({0, 4})},
      {"u8", torch::randint(0, 255, {2, 3, 4}, torch::kByte)},
      {"mask", torch::rand({6}) > 0.5},
  };
  const std::string path = dir + "/t.safetensors";
  save_safetensors(path, ts, {{"format", "pt"}});
  const auto back = load_safetensors(path);
  ASSERT_EQ(back.tensors.size(), ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    EXPECT_EQ(back.tensors[i].first, ts[i].first);
    EXPECT_EQ(back.tensors[i].second.scalar_type(), ts[i].second.scalar_type());
    EXPECT_EQ(back.tensors[i].second.sizes(), ts[i].second.sizes());
    EXPECT_TRUE(torch::equal(back.tensors[i].second, ts[i].second)) << ts[i].first;
  }
  EXPECT_EQ(back.tensors[3].second.dim(), 0);
  EXPECT_EQ(back.metadata.at("format"), "pt");
}

TEST(SafeTensors, TruncatedAndCorruptFilesGiveClearErrors) {
  const auto dir = yolo11::test::scratch_dir("safetensors_corrupt");
  const std::string path = dir + "/t.safetensors";
  save_safetensors(path, {{"w", torch::randn({64, 64})}});
  const std::string bytes = yolo11::io::read_file(path);
  auto expect_error = [&](const std::string& content, const std::string& fragment) {
    yolo11::io::write_file_atomic(path, content);
    try {
      load_safetensors(path);
      ADD_FAILURE() << "no error for " << fragment;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error(bytes.substr(0, bytes.size() - 100), "truncated");
  expect_error("", "less than the 8-byte");
  std::string bad_json = bytes;
  bad_json[8] = '#';
  expect_error(bad_json, "not valid JSON");
  std::string huge = bytes;
  huge[7] = '\x7f';
  expect_error(huge, "exceeds file size");
  EXPECT_THROW(load_safetensors(dir + "/missing.safetensors"), std::runtime_error);
}

TEST(SafeTensors, ReadsGoldenForwardFile) {
  const auto f = yolo11::test::load_golden("yolo11n_forward.safetensors");
  EXPECT_EQ(f.at("images").sizes(), (torch::IntArrayRef{2, 3, 128, 160}));
  EXPECT_EQ(f.at("model.0.conv.weight").scalar_type(), torch::kFloat);
  EXPECT_EQ(f.at("model.0.bn.num_batches_tracked").dim(), 0);
  const auto s = yolo11::test::load_golden("yolo11s_nc3_forward.safetensors");
  EXPECT_EQ(s.at("model.0.conv.weight").scalar_type(), torch::kHalf);
}

// The safetensors package itself (tools/readers.sh, test-only) reads what a real run wrote: the inference weights
// (EMA under the Ultralytics keys) and the resume state, each tensor with our reader's name, dtype, shape and values.
TEST(SafeTensors, TheSafetensorsPackageReadsARunsWeightFiles) {
  std::string why;
  const std::string py = yolo11::test::readers_python("safetensors.numpy", why);
  if (py.empty()) GTEST_SKIP() << why;
  const std::string project = yolo11::test::scratch_dir("safetensors_package");
  auto args = yolo11::test::coco8_train_args(project, "run", 1, 4);
  const auto summary = yolo11::engine::Trainer(yolo11::config::TrainConfig::load("", args)).train();
  ASSERT_EQ(summary.epochs_done, 1);
  for (const std::string stem : {"last", "last.state"}) {
    const std::string file = summary.run_dir + "/weights/" + stem + ".safetensors";
    const std::string json = project + "/" + stem + ".json", log = project + "/" + stem + ".log";
    const std::string script = std::string(YOLO11_TEST_SOURCE_DIR) + "/tests/io/read_with_safetensors.py";
    ASSERT_EQ(yolo11::test::run(py, {script, file, json}, log), 0) << yolo11::test::read_text(log);
    const auto j = nlohmann::json::parse(yolo11::test::read_text(json));
    const auto ours = load_safetensors(file);
    ASSERT_GT(ours.tensors.size(), 10u) << file;
    ASSERT_EQ(j["tensors"].size(), ours.tensors.size()) << file;
    for (const auto& [k, v] : ours.metadata) EXPECT_EQ(j["metadata"].value(k, "<missing>"), v) << stem << " " << k;
    size_t checked = 0;
    for (const auto& [name, t] : ours.tensors) {
      ASSERT_TRUE(j["tensors"].contains(name)) << stem << ": the package does not see " << name;
      const auto& e = j["tensors"][name];
      EXPECT_EQ(e["shape"].get<std::vector<int64_t>>(), t.sizes().vec()) << name;
      const std::string dtype = t.scalar_type() == torch::kFloat ? "F32" : t.scalar_type() == torch::kHalf ? "F16"
                              : t.scalar_type() == torch::kLong  ? "I64" : t.scalar_type() == torch::kByte ? "U8"
                              : t.scalar_type() == torch::kBool  ? "BOOL" : "other";
      EXPECT_EQ(e["dtype"].get<std::string>(), dtype) << name;
      if (t.numel() == 0 || dtype == "other") continue;
      const double sum = t.to(torch::kDouble).sum().item<double>();
      EXPECT_NEAR(e["sum"].get<double>(), sum, 1e-6 * (1 + std::abs(sum))) << name;
      EXPECT_EQ(e["first"].get<double>(), t.reshape({-1})[0].to(torch::kDouble).item<double>()) << name;
      ++checked;
    }
    EXPECT_GT(checked, 10u) << stem;
  }
}
