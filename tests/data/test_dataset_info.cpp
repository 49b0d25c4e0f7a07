// Dataset YAML: path resolution, split forms, names forms and the errors for bad names / nc / missing data.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "golden.h"
#include "yolo11/data/dataset_info.h"

using namespace yolo11::data;
namespace fs = std::filesystem;

namespace {
std::string yaml(const fs::path& dir, const std::string& text) {
  fs::create_directories(dir);
  std::ofstream(dir / "d.yaml") << text;
  return (dir / "d.yaml").string();
}
std::string error_of(const std::string& path, const std::string& datasets_dir = "") {
  try {
    load_dataset_yaml(path, datasets_dir);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(DatasetYaml, RelativePathResolvesAgainstDatasetsDirThenYamlDir) {
  const fs::path d = yolo11::test::scratch_dir("yaml_rel");
  fs::create_directories(d / "dsdir" / "toy" / "images" / "train");
  const auto y = yaml(d / "cfg", "path: toy\ntrain: images/train\nval: [images/val, extra.txt]\nnames: [a, b]\n");
  const auto info = load_dataset_yaml(y, (d / "dsdir").string());
  EXPECT_EQ(info.root, (d / "dsdir" / "toy").string());
  ASSERT_EQ(info.train.size(), 1u);
  EXPECT_EQ(info.train[0], (d / "dsdir" / "toy" / "images" / "train").string());
  ASSERT_EQ(info.val.size(), 2u);
  EXPECT_EQ(info.val[1], (d / "dsdir" / "toy" / "extra.txt").string());
  EXPECT_EQ(info.nc, 2);
  // not in the datasets dir → beside the YAML
  fs::create_directories(d / "cfg" / "toy");
  const auto info2 = load_dataset_yaml(y, (d / "nowhere").string());
  EXPECT_EQ(info2.root, (d / "cfg" / "toy").string());
}

TEST(DatasetYaml, MissingDatasetNamesCandidatesAndFetchCommand) {
  const fs::path d = yolo11::test::scratch_dir("yaml_missing");
  const auto y = yaml(d, "path: coco999\ntrain: images/train\nval: images/val\nnames: [a]\n");
  const std::string e = error_of(y, (d / "dsdir").string());
  EXPECT_NE(e.find((d / "dsdir" / "coco999").string()), std::string::npos) << e;
  // coco999 is not one tools/get_dataset.sh knows: say where to put it instead of a command that cannot work
  EXPECT_EQ(e.find("get_dataset.sh"), std::string::npos) << e;
  EXPECT_NE(e.find("put the dataset's images/ and labels/ at " + (d / "dsdir" / "coco999").string()), std::string::npos)
      << e;
  const auto y8 = yaml(d, "path: coco8\ntrain: images/train\nval: images/val\nnames: [a]\n");
  const std::string e8 = error_of(y8, (d / "dsdir").string());
  if (e8.find("not found") != std::string::npos) {  // coco8 may exist through YOLO11_DATASETS_MIRROR
    EXPECT_NE(e8.find("run tools/get_dataset.sh coco8"), std::string::npos) << e8;
  }
}

TEST(DatasetYaml, ShortNamesFindTheShippedDatasetYamls) {
  // data=coco8.yaml / data=coco128 as Ultralytics users type them
  EXPECT_EQ(fs::path(resolve_dataset_yaml("coco8.yaml")).filename(), "coco8.yaml");
  EXPECT_EQ(fs::path(resolve_dataset_yaml("coco128")).parent_path().filename(), "datasets");
  try {
    resolve_dataset_yaml("nosuch.yaml");
    ADD_FAILURE() << "nosuch.yaml resolved";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("configs/datasets/nosuch.yaml"), std::string::npos) << e.what();
  }
}

TEST(DatasetYaml, NamesAsDictAndNcAgreeing) {
  const fs::path d = yolo11::test::scratch_dir("yaml_dict");
  const auto y = yaml(d, "train: t\nval: v\nnc: 3\nnames:\n  0: x\n  2: z\n  1: y\n");
  const auto info = load_dataset_yaml(y);
  EXPECT_EQ(info.names, (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(info.root, d.string());  // no `path`: the YAML's dir
}

TEST(DatasetYaml, BadNamesAndNcAreErrorsQuotingTheValue) {
  const fs::path d = yolo11::test::scratch_dir("yaml_bad");
  EXPECT_NE(error_of(yaml(d / "s", "train: t\nval: v\nnames: person\n")).find("'person'"), std::string::npos);
  EXPECT_NE(error_of(yaml(d / "n", "train: t\nval: v\nnames: null\n")).find("null"), std::string::npos);
  EXPECT_NE(error_of(yaml(d / "g", "train: t\nval: v\nnames: {0: a, 2: c}\n")).find("{0: a, 2: c}"),
            std::string::npos);
  const std::string nc = error_of(yaml(d / "c", "train: t\nval: v\nnc: 3\nnames: [a, b]\n"));
  EXPECT_NE(nc.find("nc: 3"), std::string::npos) << nc;
  EXPECT_NE(nc.find("[a, b]"), std::string::npos) << nc;
  EXPECT_NE(error_of(yaml(d / "v", "train: t\nnames: [a]\n")).find("`val`"), std::string::npos);
}

// An empty list is no split (fuzz/regressions/dataset_yaml/empty_val_list.yaml): it was accepted with no val source.
TEST(DatasetYaml, AnEmptySplitListIsAnErrorWithFileAndLine) {
  const fs::path d = yolo11::test::scratch_dir("yaml_empty_split");
  const std::string v = error_of(yaml(d / "v", "train: t\nval: []\nnames: [a]\n"));
  EXPECT_NE(v.find("d.yaml:2: `val` lists no source ([])"), std::string::npos) << v;
  const std::string t = error_of(yaml(d / "t", "names: [a]\ntrain: []\nval: v\n"));
  EXPECT_NE(t.find("d.yaml:2: `train` lists no source"), std::string::npos) << t;
}

// A NUL anywhere in the file (a key, a class name, a comment) is refused with the file and line: inside a value it
// would cut every later message short, the file name included.
TEST(DatasetYaml, NulByteAnywhereIsRefusedWithFileAndLine) {
  const fs::path d = yolo11::test::scratch_dir("yaml_nul");
  const std::string e = error_of(yaml(d, std::string("train: t\nval: v\nnames: ['a\0b']\n", 31)));
  EXPECT_NE(e.find("d.yaml:3 holds a NUL byte"), std::string::npos) << e;
}

TEST(DatasetYaml, ShippedConfigsParseAgainstTheSharedDatasets) {
  const std::string repo = fs::path(__FILE__).parent_path().parent_path().parent_path().string();
  for (const char* n : {"coco8", "coco128", "shapes3"}) {
    const std::string ds = fs::path(yolo11::test::dataset_dir(n)).parent_path().string();
    const auto info = load_dataset_yaml(repo + "/configs/datasets/" + n + ".yaml", ds);
    EXPECT_TRUE(fs::is_directory(info.train.at(0))) << info.train[0];
    EXPECT_TRUE(fs::is_directory(info.val.at(0))) << info.val[0];
    EXPECT_EQ(info.nc, std::string(n) == "shapes3" ? 3 : 80);
  }
}
