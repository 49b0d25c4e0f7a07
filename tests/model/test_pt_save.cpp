// model::save_pt and the pickle writer under it: what we write is read back by our reader with the same values, and
// its whole module tree equals the one the reference trainer wrote into <shared>/fixtures/ultralytics (README there)
// for the same weights. The reference itself loading and validating our file: tests/val/pt_reference.py (label
// reference).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "golden.h"
#include "yolo11/engine/inference.h"
#include "yolo11/io/pickle.h"
#include "yolo11/io/pickler.h"
#include "yolo11/io/pt_checkpoint.h"
#include "yolo11/model/pt_save.h"
#include "yolo11/model/weights.h"
#include "yolo11_test_config.h"

namespace {
namespace fs = std::filesystem;
using yolo11::io::pickle::Pickler;
using PValue = yolo11::io::pickle::Value;
using PKind = yolo11::io::pickle::Value::Kind;

std::string fixture(const std::string& name) {
  return std::string(YOLO11_TEST_SHARED_DIR) + "/fixtures/ultralytics/" + name;
}

yolo11::io::pickle::Ref read_back(const std::string& pickle) {
  return yolo11::io::pickle::unpickle(pickle, "test", [](const PValue&) -> yolo11::io::pickle::Ref {
    throw std::runtime_error("no storages here");
  });
}

std::string kind_name(const PValue& v) {
  static const char* names[] = {"None", "Bool", "Int", "Float", "Str", "Bytes", "Tuple", "List", "Dict", "Set",
                                "Global", "Object", "Storage", "Tensor"};
  return names[static_cast<int>(v.kind)];
}

/// The first difference between two unpickled trees ("" when equal), as a path. Attributes named in `skip` (by
/// their full path) are not compared; dict and attribute order is.
std::string first_difference(const PValue& a, const PValue& b, const std::string& path,
                             const std::vector<std::string>& skip) {
  if (a.kind != b.kind) return path + ": " + kind_name(a) + " vs " + kind_name(b);
  std::ostringstream why;
  switch (a.kind) {
    case PKind::None: return "";
    case PKind::Bool: return a.b == b.b ? "" : path + ": bool differs";
    case PKind::Int: return a.i == b.i ? "" : path + ": " + std::to_string(a.i) + " vs " + std::to_string(b.i);
    case PKind::Float: return a.f == b.f ? "" : path + ": " + std::to_string(a.f) + " vs " + std::to_string(b.f);
    case PKind::Str:
    case PKind::Bytes:
    case PKind::Global: return a.s == b.s ? "" : path + ": '" + a.s + "' vs '" + b.s + "'";
    case PKind::Tensor:
      if (a.tensor.scalar_type() != b.tensor.scalar_type() || a.tensor.sizes() != b.tensor.sizes()) {
        why << path << ": tensor " << a.tensor.scalar_type() << a.tensor.sizes() << " vs " << b.tensor.scalar_type()
            << b.tensor.sizes();
        return why.str();
      }
      return torch::equal(a.tensor, b.tensor) ? "" : path + ": tensor values differ";
    case PKind::Storage: return "";
    case PKind::Tuple:
    case PKind::List:
    case PKind::Set:
      if (a.items.size() != b.items.size())
        return path + ": " + std::to_string(a.items.size()) + " vs " + std::to_string(b.items.size()) + " items";
      for (size_t i = 0; i < a.items.size(); ++i)
        if (auto d = first_difference(*a.items[i], *b.items[i], path + "[" + std::to_string(i) + "]", skip); !d.empty())
          return d;
      return "";
    case PKind::Dict:
    case PKind::Object: {
      if (a.kind == PKind::Object && a.s != b.s) return path + ": class " + a.s + " vs " + b.s;
      auto keep = [&](const std::vector<std::pair<yolo11::io::pickle::Ref, yolo11::io::pickle::Ref>>& d) {
        std::vector<std::pair<std::string, const PValue*>> out;
        for (const auto& [k, v] : d) {
          const std::string key = k->is(PKind::Str) ? k->s : k->is(PKind::Int) ? std::to_string(k->i) : "?";
          if (std::find(skip.begin(), skip.end(), path + "." + key) == skip.end()) out.emplace_back(key, v.get());
        }
        return out;
      };
      const auto da = keep(a.dict), db = keep(b.dict);
      for (size_t i = 0; i < std::max(da.size(), db.size()); ++i) {
        if (i >= da.size()) return path + ": no '" + db[i].first + "' (the reference has it)";
        if (i >= db.size()) return path + ": '" + da[i].first + "' the reference does not have";
        if (da[i].first != db[i].first) return path + ": key '" + da[i].first + "' vs '" + db[i].first + "'";
        if (auto d = first_difference(*da[i].second, *db[i].second, path + "." + da[i].first, skip); !d.empty()) return d;
      }
      return "";
    }
  }
  return "";
}

}  // namespace

TEST(Pickler, WritesWhatTheReaderReadsBack) {
  Pickler p;
  p.begin_dict();
  p.str("ints");
  p.begin_list();
  for (const int64_t v : {int64_t{0}, int64_t{255}, int64_t{256}, int64_t{65535}, int64_t{65536}, int64_t{-1},
                          int64_t{-2147483648LL}, int64_t{2147483648LL}, int64_t{-9223372036854775807LL - 1}})
    p.integer(v);
  p.end_list();
  p.str("real"), p.real(0.1767766952966369);
  p.str("flags");
  p.begin_tuple();
  p.boolean(true), p.boolean(false), p.none();
  p.end_tuple();
  p.str("ordered");
  p.begin_ordered_dict();
  p.str("é ü"), p.str("");
  p.end_ordered_dict();
  p.str("set"), p.empty_set();
  p.str("obj");
  p.begin_object("ultralytics.nn.modules.conv.Concat");
  p.str("d"), p.integer(1);
  p.end_object();
  p.end_dict();
  const auto v = read_back(p.finish());
  ASSERT_TRUE(v->is(PKind::Dict));
  const PValue* ints = v->get("ints");
  ASSERT_TRUE(ints && ints->is(PKind::List));
  const std::vector<int64_t> want = {0, 255, 256, 65535, 65536, -1, -2147483648LL, 2147483648LL,
                                     -9223372036854775807LL - 1};
  ASSERT_EQ(ints->items.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(ints->items[i]->i, want[i]) << i;
  EXPECT_EQ(v->get("real")->f, 0.1767766952966369);
  const PValue* flags = v->get("flags");
  ASSERT_EQ(flags->items.size(), 3u);
  EXPECT_TRUE(flags->items[0]->b);
  EXPECT_FALSE(flags->items[1]->b);
  EXPECT_TRUE(flags->items[2]->is(PKind::None));
  ASSERT_TRUE(v->get("ordered")->is(PKind::Dict));
  EXPECT_EQ(v->get("ordered")->get("é ü")->s, "");
  EXPECT_TRUE(v->get("set")->is(PKind::Set));
  const PValue* obj = v->get("obj");
  ASSERT_TRUE(obj->is(PKind::Object));
  EXPECT_EQ(obj->s, "ultralytics.nn.modules.conv.Concat");
  EXPECT_EQ(obj->get("d")->i, 1);
}

TEST(Pickler, MisuseIsALogicError) {
  Pickler a;
  a.begin_dict();
  a.str("key without value");
  EXPECT_THROW(a.end_dict(), std::logic_error);
  Pickler b;
  b.begin_list();
  EXPECT_THROW(b.end_tuple(), std::logic_error);
  Pickler c;
  c.begin_tuple();
  EXPECT_THROW(c.finish(), std::logic_error);
  Pickler d;
  EXPECT_THROW(d.tensor("0", torch::kComplexFloat, 1, {1}, {1}, 0, false, false), std::invalid_argument);
}

// The reference's shapes3 checkpoint loaded into our model and written back: every tensor of the state_dict is
// bit-equal on reading (float16 → float32 → float16 is exact), and the whole pickled tree (module classes, their
// attributes and order, yaml, names, stride, the storages' dtypes) equals the reference's, except what is run-specific
// (date, settings, metrics) or a forward's cache (Detect's anchors/strides/shape, left to the class defaults).
TEST(SavePt, ShapesThreeRoundTripEqualsTheReferencesCheckpoint) {
  const std::string ref = fixture("yolo11n_shapes3.pt");
  const auto det = yolo11::engine::load_detector(ref);
  const auto ck = yolo11::io::read_pt_checkpoint(ref);
  const std::string out = yolo11::test::scratch_dir("pt_save") + "/shapes3_ours.pt";
  yolo11::model::PtSaveInfo info;
  info.names = det.names;
  info.args_yaml = "task: detect\nimgsz: 256\n";
  yolo11::model::save_pt(*det.model, yolo11::model::state_dict(*det.model), out, info);

  const auto back = yolo11::io::read_pt_checkpoint(out);
  EXPECT_EQ(back.names, ck.names);
  EXPECT_EQ(back.nc, 3);
  EXPECT_EQ(back.stride, ck.stride);
  EXPECT_EQ(back.scale, "n");
  EXPECT_EQ(back.yaml, ck.yaml);
  EXPECT_EQ(back.source, "model");
  EXPECT_EQ(back.train_args["imgsz"], 256);
  ASSERT_EQ(back.state_dict.size(), ck.state_dict.size());
  for (size_t i = 0; i < ck.state_dict.size(); ++i) {
    EXPECT_EQ(back.state_dict[i].first, ck.state_dict[i].first);
    EXPECT_TRUE(torch::equal(back.state_dict[i].second, ck.state_dict[i].second)) << ck.state_dict[i].first;
  }

  const auto ours = yolo11::io::read_pt_pickle(out), theirs = yolo11::io::read_pt_pickle(ref);
  const PValue* om = ours->get("model");
  const PValue* tm = theirs->get("model");
  ASSERT_TRUE(om && tm);
  const std::string d = "ckpt.model._modules.model._modules.23";
  // The fixture's SPPF.cv1 activation was put in after the model's eval() (a new SiLU, still training=True; the
  // reference's own is the shared, evaluated Conv.default_act, inplace like every other one here): its training and
  // inplace flags are the fixture's, not the format's.
  const std::string sppf_act = "ckpt.model._modules.model._modules.9._modules.cv1._modules.act";
  EXPECT_EQ(first_difference(*om, *tm, "ckpt.model",
                             {"ckpt.model.args", d + ".anchors", d + ".strides", d + ".shape", sppf_act + ".training",
                              sppf_act + ".inplace"}),
            "");
  for (const char* k : {"ema", "optimizer", "updates", "scaler"}) {
    ASSERT_TRUE(ours->get(k)) << k;
    EXPECT_TRUE(ours->get(k)->is(PKind::None)) << k;
  }
}

TEST(SavePt, RefusesWeightsThatDoNotFitTheModel) {
  yolo11::model::YOLO net(yolo11::model::ModelOptions{"configs/models/yolo11.yaml", "n", 3});
  auto state = yolo11::model::state_dict(*net);
  const std::string out = yolo11::test::scratch_dir("pt_save") + "/bad.pt";
  auto missing = state;
  missing.erase(missing.begin() + 5);
  try {
    yolo11::model::save_pt(*net, missing, out, {});
    FAIL() << "a missing tensor was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(state[5].first), std::string::npos) << e.what();
  }
  auto reshaped = state;
  reshaped[0].second = torch::zeros({1});
  EXPECT_THROW(yolo11::model::save_pt(*net, reshaped, out, {}), std::invalid_argument);
  auto extra = state;
  extra.emplace_back("model.99.weight", torch::zeros({1}));
  EXPECT_THROW(yolo11::model::save_pt(*net, extra, out, {}), std::invalid_argument);
  EXPECT_FALSE(fs::exists(out));
  net->fuse();
  EXPECT_THROW(yolo11::model::save_pt(*net, state, out, {}), std::invalid_argument);
}
