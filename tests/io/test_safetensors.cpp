#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "golden.h"
#include "yolo11/io/file.h"
#include "yolo11/io/safetensors.h"

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
