// io::read_pt_checkpoint on the Ultralytics fixtures (<shared>/fixtures/ultralytics, README there) and on bad files
// written here byte by byte: a stored zip (crc left 0: the reader does not check it) around handcrafted pickles.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "golden.h"
#include "yolo11/io/pickle.h"
#include "yolo11/io/pt_checkpoint.h"
#include "yolo11/io/safetensors.h"
#include "yolo11_test_config.h"

namespace {
namespace fs = std::filesystem;
using namespace std::string_literals;
using yolo11::io::read_pt_checkpoint;

std::string fixture(const std::string& name) {
  return std::string(YOLO11_TEST_SHARED_DIR) + "/fixtures/ultralytics/" + name;
}

void put(std::string& s, uint64_t v, int n) {
  for (int k = 0; k < n; ++k) s.push_back(static_cast<char>((v >> (8 * k)) & 0xFF));
}

/// A zip of stored entries, as torch.save writes (without its alignment padding).
std::string make_zip(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out, cd;
  for (const auto& [name, data] : entries) {
    const uint64_t local = out.size();
    put(out, 0x04034b50, 4), put(out, 20, 2), put(out, 0, 2), put(out, 0, 2), put(out, 0, 4), put(out, 0, 4);
    put(out, data.size(), 4), put(out, data.size(), 4), put(out, name.size(), 2), put(out, 0, 2);
    out += name + data;
    put(cd, 0x02014b50, 4), put(cd, 20, 2), put(cd, 20, 2), put(cd, 0, 2), put(cd, 0, 2), put(cd, 0, 4), put(cd, 0, 4);
    put(cd, data.size(), 4), put(cd, data.size(), 4), put(cd, name.size(), 2), put(cd, 0, 2), put(cd, 0, 2);
    put(cd, 0, 2), put(cd, 0, 2), put(cd, 0, 4), put(cd, local, 4);
    cd += name;
  }
  const uint64_t at = out.size();
  out += cd;
  put(out, 0x06054b50, 4), put(out, 0, 2), put(out, 0, 2), put(out, entries.size(), 2), put(out, entries.size(), 2);
  put(out, cd.size(), 4), put(out, at, 4), put(out, 0, 2);
  return out;
}

std::string write(const std::string& name, const std::string& bytes) {
  const std::string path = yolo11::test::scratch_dir("pt_checkpoint") + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

/// The message read_pt_checkpoint throws for `zip` (empty when it does not throw).
std::string error_of(const std::string& name, const std::string& zip) {
  try {
    read_pt_checkpoint(write(name, zip));
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

std::string pkl_zip(const std::string& pkl, std::vector<std::pair<std::string, std::string>> more = {}) {
  more.insert(more.begin(), {"archive/data.pkl", pkl});
  more.emplace_back("archive/version", "3\n");
  return make_zip(more);
}

std::string u32(uint32_t v) {
  std::string s;
  put(s, v, 4);
  return s;
}
std::string unicode(const std::string& s) { return "X" + u32(static_cast<uint32_t>(s.size())) + s; }

/// A pickle of _rebuild_tensor_v2(storage 'key' of FloatStorage with `numel`, offset 0, size (n,), stride (1,)).
std::string tensor_pickle(int numel, int n) {
  return std::string("\x80\x02") + "ctorch._utils\n_rebuild_tensor_v2\n(" + "(" + unicode("storage") +
         "ctorch\nFloatStorage\n" + unicode("0") + unicode("cpu") + "K" + char(numel) + "tQ" + "K\x00"s + "K" +
         char(n) + "\x85" + "K\x01\x85" + "\x89" + "ccollections\nOrderedDict\n)R" + "tR.";
}

/// A pickled object record: cls() (NEWOBJ) with BUILD state {key: value ...} from the pickled `pairs`.
std::string record(const std::string& module, const std::string& name, const std::string& pairs) {
  return "c" + module + "\n" + name + "\n)\x81}(" + pairs + "ub";
}

/// _rebuild_tensor_v2 of the 2 elements of storage `key` (a HalfStorage of 2), size (2,), stride (1,).
std::string half_tensor(const std::string& key) {
  return "ctorch._utils\n_rebuild_tensor_v2\n((" + unicode("storage") + "ctorch\nHalfStorage\n" + unicode(key) +
         unicode("cpu") + "K\x02tQK\x00"s + "K\x02\x85K\x01\x85\x89" "ccollections\nOrderedDict\n)RtR";
}

}  // namespace

TEST(PtCheckpoint, EmaIsPreferredAndTheStateDictFollowsTorchsRules) {
  // {'model': None, 'ema': DetectionModel(model=Sequential(0=Detect(w, buffers b and non-persistent np)))}
  const std::string detect = record("ultralytics.nn.modules.head", "Detect",
                                    unicode("_parameters") + "ccollections\nOrderedDict\n)R(" + unicode("w") +
                                        half_tensor("0") + unicode("none") + "Nu" + unicode("_buffers") + "}(" +
                                        unicode("b") + half_tensor("1") + unicode("np") + half_tensor("0") + "u" +
                                        unicode("_non_persistent_buffers_set") + "c__builtin__\nset\n](" +
                                        unicode("np") + "e\x85R");
  const std::string seq = record("torch.nn.modules.container", "Sequential", unicode("_modules") + "}(" +
                                                                              unicode("0") + detect + "u");
  const std::string dm = record("ultralytics.nn.tasks", "DetectionModel",
                                unicode("_modules") + "}(" + unicode("model") + seq + "u" + unicode("nc") + "K\x02" +
                                    unicode("names") + "}(K\x00"s + unicode("a") + "K\x01" + unicode("b") + "u");
  const std::string pkl = "\x80\x02}(" + unicode("model") + "N" + unicode("ema") + dm + "u.";
  // float16 1.0, -2.0 and 0.5, 65504
  const std::string s0("\x00\x3c\x00\xc0", 4), s1("\x00\x38\xff\x7b", 4);
  const auto path = write("ema.pt", pkl_zip(pkl, {{"archive/data/0", s0}, {"archive/data/1", s1}}));
  const auto ck = read_pt_checkpoint(path);
  EXPECT_EQ(ck.source, "ema");
  EXPECT_EQ(ck.nc, 2);
  EXPECT_EQ(ck.names, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(ck.yaml.at("sppf_act").get<bool>());  // no SPPF: the default
  ASSERT_EQ(ck.state_dict.size(), 2u);  // None parameters and non-persistent buffers are not state
  EXPECT_EQ(ck.state_dict[0].first, "model.0.w");
  EXPECT_EQ(ck.state_dict[1].first, "model.0.b");
  EXPECT_EQ(ck.state_dict[0].second.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(ck.state_dict[0].second, torch::tensor({1.f, -2.f})));
  EXPECT_TRUE(torch::equal(ck.state_dict[1].second, torch::tensor({0.5f, 65504.f})));
}

TEST(PtCheckpoint, Shapes3StateDictEqualsTheReferenceLoaderBitForBit) {
  const auto ck = read_pt_checkpoint(fixture("yolo11n_shapes3.pt"));
  const auto ref = yolo11::io::load_safetensors(fixture("yolo11n_shapes3_state_dict.safetensors"));
  ASSERT_EQ(ck.state_dict.size(), ref.tensors.size());
  for (size_t k = 0; k < ref.tensors.size(); ++k) {
    const auto& [name, want] = ref.tensors[k];
    const auto& [got_name, got] = ck.state_dict[k];
    ASSERT_EQ(got_name, name) << "key " << k;
    ASSERT_EQ(got.scalar_type(), want.scalar_type()) << name;
    ASSERT_EQ(got.sizes(), want.sizes()) << name;
    ASSERT_TRUE(got.is_contiguous()) << name;
    ASSERT_EQ(std::memcmp(got.data_ptr(), want.data_ptr(), want.nbytes()), 0) << name << " differs";
  }
  EXPECT_EQ(ck.nc, 3);
  EXPECT_EQ(ck.names, (std::vector<std::string>{"rect", "ellipse", "triangle"}));
  EXPECT_EQ(ck.stride, (std::vector<double>{8, 16, 32}));
  EXPECT_EQ(ck.scale, "n");
  EXPECT_EQ(ck.source, "model");  // ema is None in the fixture
  EXPECT_TRUE(ck.yaml.at("sppf_act").get<bool>());
  EXPECT_EQ(ck.yaml.at("nc").get<int>(), 3);
  EXPECT_TRUE(ck.train_args.is_object());
  EXPECT_TRUE(ck.train_args.contains("imgsz"));
}

TEST(PtCheckpoint, Coco128ReadsItsModelWhenEmaIsNone) {
  const auto ck = read_pt_checkpoint(fixture("yolo11n_coco128_e2.pt"));
  EXPECT_EQ(ck.source, "model");
  EXPECT_EQ(ck.nc, 80);
  ASSERT_EQ(ck.names.size(), 80u);
  EXPECT_EQ(ck.names[0], "person");
  EXPECT_EQ(ck.state_dict.size(), 499u);
  EXPECT_FALSE(ck.yaml.at("sppf_act").get<bool>());  // 8.4.50's SPPF.cv1: Identity
  EXPECT_EQ(ck.state_dict.front().first, "model.0.conv.weight");
  EXPECT_EQ(ck.state_dict.back().first, "model.23.dfl.conv.weight");
  for (const auto& [k, t] : ck.state_dict)
    EXPECT_TRUE(t.scalar_type() == torch::kFloat || k.find("num_batches_tracked") != std::string::npos) << k;
}

TEST(PtCheckpoint, TensorsHonourOffsetAndStrideOfTheirStorage) {
  // _rebuild_tensor_v2(storage of 6 floats 0..5, offset 1, size (2, 2), stride (1, 3)) = [[1, 4], [2, 5]]
  std::string pkl = std::string("\x80\x02") + "ctorch._utils\n_rebuild_tensor_v2\n(" + "(" + unicode("storage") +
                    "ctorch\nFloatStorage\n" + unicode("0") + unicode("cpu") + "K\x06tQ" + "K\x01" + "K\x02K\x02\x86" +
                    "K\x01K\x03\x86" + "\x89" + "ccollections\nOrderedDict\n)R" + "tR.";
  auto storage = torch::arange(6, torch::kFloat);
  auto load = [&](const yolo11::io::pickle::Value&) {
    auto v = std::make_shared<yolo11::io::pickle::Value>();
    v->kind = yolo11::io::pickle::Value::Kind::Storage;
    v->dtype = torch::kFloat;
    v->tensor = torch::from_blob(storage.data_ptr(), {24}, torch::kByte).clone();
    return v;
  };
  const auto t = yolo11::io::pickle::unpickle(pkl, "strided", load);
  ASSERT_TRUE(t->is(yolo11::io::pickle::Value::Kind::Tensor));
  EXPECT_TRUE(torch::equal(t->tensor, torch::tensor({{1.f, 4.f}, {2.f, 5.f}}))) << t->tensor;
}

TEST(PtCheckpoint, TruncatedZipIsAClearError) {
  std::ifstream in(fixture("yolo11n_shapes3.pt"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const size_t keep : {bytes.size() / 2, bytes.size() - 30, size_t{10}, size_t{0}}) {
    const auto e = error_of("cut.pt", bytes.substr(0, keep));
    EXPECT_NE(e.find("truncated"), std::string::npos) << keep << ": " << e;
  }
  const auto e = error_of("cutpkl.pt", pkl_zip("\x80\x02}q\x00X\x05\x00\x00\x00mo"s));
  EXPECT_NE(e.find("truncated pickle"), std::string::npos) << e;
  EXPECT_NE(error_of("nopkl.pt", make_zip({{"a/b", "x"}})).find("no <name>/data.pkl"), std::string::npos);
}

TEST(PtCheckpoint, StorageShorterThanItsTensorIsAnError) {
  // the storage claims 4 floats, its entry holds 2
  auto e = error_of("short_storage.pt", pkl_zip(tensor_pickle(4, 4), {{"archive/data/0", std::string(8, '\0')}}));
  EXPECT_NE(e.find("fewer than its 4 Float elements"), std::string::npos) << e;
  // the storage holds 2 floats, the tensor wants 4 of them
  e = error_of("short_tensor.pt", pkl_zip(tensor_pickle(2, 4), {{"archive/data/0", std::string(8, '\0')}}));
  EXPECT_NE(e.find("reaches past its storage of 2 elements"), std::string::npos) << e;
  // the tensor fits: then the pickle is read and rejected for not being a checkpoint dict
  e = error_of("fits.pt", pkl_zip(tensor_pickle(4, 4), {{"archive/data/0", std::string(16, '\0')}}));
  EXPECT_NE(e.find("not a checkpoint dict"), std::string::npos) << e;
}

TEST(PtCheckpoint, ForbiddenGlobalsAreRejectedByName) {
  for (const std::string& g : {std::string("os\nsystem\n"), std::string("builtins\neval\n"),
                               std::string("__builtin__\ngetattr\n"), std::string("subprocess\nPopen\n")}) {
    const std::string pkl = "\x80\x02" "c" + g + unicode("ls") + "\x85R.";
    const auto e = error_of("global.pt", pkl_zip(pkl));
    const std::string name = g.substr(0, g.find('\n')) + "." + g.substr(g.find('\n') + 1, g.size() - g.find('\n') - 2);
    const std::string shown = name.rfind("__builtin__", 0) == 0 ? "builtins" + name.substr(11) : name;
    EXPECT_NE(e.find("global '" + shown + "' is not allowed"), std::string::npos) << e;
    EXPECT_NE(e.find("global.pt"), std::string::npos) << e;
  }
  // STACK_GLOBAL (protocol 4) goes through the same list
  const auto e = error_of("stack_global.pt", pkl_zip("\x80\x04" + unicode("posix") + unicode("system") + "\x93."));
  EXPECT_NE(e.find("global 'posix.system' is not allowed"), std::string::npos) << e;
}

TEST(PtCheckpoint, NestedContainerBombIsAnErrorNotACrash) {
  const int n = 200000;
  // MARK ... LIST nesting: [[[[...]]]]
  auto e = error_of("bomb1.pt", pkl_zip("\x80\x02" + std::string(n, '(') + std::string(n, 'l') + "."));
  EXPECT_NE(e.find("nested deeper than"), std::string::npos) << e;
  // EMPTY_LIST ... APPEND nesting
  e = error_of("bomb2.pt", pkl_zip("\x80\x02" + std::string(n, ']') + std::string(n - 1, 'a') + "."));
  EXPECT_NE(e.find("nested deeper than"), std::string::npos) << e;
  // a chain nested through the memo after each link was nested (the depth bound sees 2): read, then freed without
  // recursion; rejected as no checkpoint dict
  std::string chain = "\x80\x02]r" + u32(0);
  const uint32_t links = 300000;
  for (uint32_t i = 1; i <= links; ++i) chain += "j" + u32(i - 1) + "]r" + u32(i) + "a0";
  e = error_of("chain.pt", pkl_zip(chain + "."));
  EXPECT_NE(e.find("not a checkpoint dict"), std::string::npos) << e;
  // an unknown opcode and a bad memo reference are errors too
  EXPECT_NE(error_of("op.pt", pkl_zip("\x80\x02\xff.")).find("unsupported pickle opcode 0xff"), std::string::npos);
  EXPECT_NE(error_of("memo.pt", pkl_zip("\x80\x02h\x07.")).find("memo key 7 not set"), std::string::npos);
}

TEST(PtCheckpoint, NonYoloPicklesAreRejected) {
  // {'model': torch.nn.modules.linear.Linear()} (NEWOBJ + BUILD of an empty state)
  const std::string linear = "\x80\x02}" + unicode("model") + "ctorch.nn.modules.linear\nLinear\n)\x81}bs.";
  auto e = error_of("linear.pt", pkl_zip(linear));
  EXPECT_NE(e.find("torch.nn.modules.linear.Linear, not a YOLO detection model"), std::string::npos) << e;
  // a plain dict without a model, and a list
  e = error_of("nomodel.pt", pkl_zip("\x80\x02}" + unicode("epoch") + "K\x01s."));
  EXPECT_NE(e.find("neither 'ema' nor 'model'"), std::string::npos) << e;
  e = error_of("list.pt", pkl_zip("\x80\x02]."));
  EXPECT_NE(e.find("not a checkpoint dict"), std::string::npos) << e;
  // a DetectionModel whose layers end in something else than Detect
  const std::string seg = "\x80\x02}" + unicode("model") + "cultralytics.nn.tasks\nDetectionModel\n)\x81}bs.";
  e = error_of("empty_model.pt", pkl_zip(seg));
  EXPECT_NE(e.find("not an ultralytics Detect head"), std::string::npos) << e;
}

TEST(Pickle, AContainerHoldingItselfIsRejectedAndACycleOutsideTheResultIsFreed) {
  const auto no_pid = [](const yolo11::io::pickle::Value&) -> yolo11::io::pickle::Ref { return nullptr; };
  // l = []; l.append(l): PROTO 2, EMPTY_LIST, BINPUT 0, BINGET 0, APPEND, STOP
  try {
    yolo11::io::pickle::unpickle("\x80\x02]q\x00h\x00" "a."s, "cycle.pkl", no_pid);
    ADD_FAILURE() << "a list holding itself was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cycle.pkl: a container holds itself"), std::string::npos) << e.what();
  }
  // the same list, then POP and None as the result: the cycle is garbage, broken before unpickle returns (the
  // ASan+LSan suite of tools/sanitize.sh reports its memory otherwise)
  const auto none = yolo11::io::pickle::unpickle("\x80\x02]q\x00h\x00" "a0N."s, "garbage.pkl", no_pid);
  EXPECT_TRUE(none->is(yolo11::io::pickle::Value::Kind::None));
  // a list shared twice, not cyclic, is kept: [l, l] with l = [1]
  const auto shared = yolo11::io::pickle::unpickle("\x80\x02](]q\x00K\x01" "ah\x00" "e."s, "shared.pkl", no_pid);
  ASSERT_EQ(shared->items.size(), 2u);
  EXPECT_EQ(shared->items[0], shared->items[1]);
  EXPECT_EQ(shared->items[0]->items.size(), 1u);
}
