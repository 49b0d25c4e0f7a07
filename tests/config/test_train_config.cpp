// TrainConfig: defaults, merge order, validation errors, args.yaml round trip, resume rules, run dirs.
#include "yolo11/config/train_config.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <thread>
#include <vector>

#include "golden.h"
#include "yolo11/build_info.h"
#include "yolo11/core/strings.h"
#include "yolo11/io/run_dir.h"

namespace fs = std::filesystem;
using yolo11::config::TrainConfig;

namespace {

std::string write(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string p = dir + "/" + name;
  std::ofstream(p) << text;
  return p;
}

/// Runs `f`, expects std::runtime_error, returns its message.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected std::runtime_error";
  return "";
}

std::string src(const std::string& rel) { return (fs::path(yolo11::build::kSourceDir) / rel).string(); }

}  // namespace

TEST(TrainConfig, DefaultsMatchUltralytics) {
  const auto c = TrainConfig::load("", {});
  EXPECT_EQ(c.epochs, 100);
  EXPECT_EQ(c.batch, 16);
  EXPECT_EQ(c.imgsz, 640);
  EXPECT_EQ(c.optimizer, "auto");
  EXPECT_DOUBLE_EQ(c.lr0, 0.01);
  EXPECT_DOUBLE_EQ(c.lrf, 0.01);
  EXPECT_DOUBLE_EQ(c.momentum, 0.937);
  EXPECT_DOUBLE_EQ(c.weight_decay, 0.0005);
  EXPECT_DOUBLE_EQ(c.warmup_epochs, 3.0);
  EXPECT_DOUBLE_EQ(c.warmup_bias_lr, 0.1);
  EXPECT_DOUBLE_EQ(c.box, 7.5);
  EXPECT_DOUBLE_EQ(c.scale, 0.5);
  EXPECT_DOUBLE_EQ(c.fliplr, 0.5);
  EXPECT_EQ(c.close_mosaic, 10);
  EXPECT_EQ(c.nbs, 64);
  EXPECT_FALSE(c.time.has_value());
  EXPECT_FALSE(c.conf.has_value());
  EXPECT_TRUE(c.freeze.empty());
  EXPECT_EQ(c.cache, yolo11::core::CacheMode::off);
  EXPECT_EQ(c.model_scale, "n");
  EXPECT_EQ(c.instrument, yolo11::core::InstrumentLevel::basic);
  EXPECT_EQ(c.log_every, 10);
  EXPECT_TRUE(c.trace_steps.empty());
}

TEST(TrainConfig, KeyDocsAreTheDefaultFilesValuesAndLineComments) {
  const std::string d = yolo11::test::scratch_dir("key_docs");
  const std::string f = write(d, "default.yaml",
                              "# header comment\n\nepochs: 100 # (int) number of epochs\ndata: # (str) dataset YAML\n"
                              "name: 'a # b' # (str) quoted '#'\nscale:  # (str) two lines,\n        # the second one\n"
                              "plain: x\n");
  const auto docs = yolo11::config::default_key_docs(f);
  ASSERT_EQ(docs.size(), 5u);
  EXPECT_EQ(docs[0].key, "epochs");
  EXPECT_EQ(docs[0].value, "100");
  EXPECT_EQ(docs[0].description, "(int) number of epochs");
  EXPECT_EQ(docs[1].value, "");
  EXPECT_EQ(docs[1].description, "(str) dataset YAML");
  EXPECT_EQ(docs[2].value, "'a # b'");
  EXPECT_EQ(docs[2].description, "(str) quoted '#'");
  EXPECT_EQ(docs[3].description, "(str) two lines,");  // the key's own line only
  EXPECT_EQ(docs[3].key, "scale");
  EXPECT_EQ(docs[4].value, "x");
  EXPECT_EQ(docs[4].description, "");
  // The real file: every key TrainConfig knows has a default and a description there.
  const auto real = yolo11::config::default_key_docs(src("configs/default.yaml"));
  for (const auto& k : yolo11::config::config_keys()) {
    const auto it = std::find_if(real.begin(), real.end(), [&](const auto& x) { return x.key == k; });
    ASSERT_NE(it, real.end()) << k;
    EXPECT_FALSE(it->description.empty()) << k;
  }
  EXPECT_THROW(yolo11::config::default_key_docs(d + "/missing.yaml"), std::runtime_error);
}

TEST(TrainConfig, MergeOrderIsDefaultThenCfgFileThenOverrides) {
  const auto dir = yolo11::test::scratch_dir("config_merge");
  const auto cfg = write(dir, "run.yaml", "epochs: 5\nimgsz: 320\noptimizer: sgd\ncache: true\n");
  const auto c = TrainConfig::load(cfg, {"epochs=7", "lr0=0.02", "freeze=[0, 3]", "trace_steps=20:30"});
  EXPECT_EQ(c.epochs, 7);
  EXPECT_EQ(c.imgsz, 320);
  EXPECT_EQ(c.optimizer, "SGD");  // canonical spelling
  EXPECT_EQ(c.cache, yolo11::core::CacheMode::ram);
  EXPECT_DOUBLE_EQ(c.lr0, 0.02);
  EXPECT_EQ(c.freeze, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(c.trace_steps.start, 20);
  EXPECT_EQ(c.trace_steps.stop, 30);
  EXPECT_TRUE(c.trace_steps.contains(29));
  EXPECT_FALSE(c.trace_steps.contains(30));
  // cfg=FILE on the command line is the same as the cfg_file argument.
  EXPECT_EQ(TrainConfig::load("", {"cfg=" + cfg}).imgsz, 320);
}

TEST(TrainConfig, UnknownOverrideKeySuggestsTheClosestKey) {
  const auto msg = error_of([] { TrainConfig::load("", {"imsz=320"}); });
  EXPECT_NE(msg.find("unknown key 'imsz'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("command line"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Did you mean 'imgsz'?"), std::string::npos) << msg;
}

// A NUL in a quoted key once cut the unknown-key message short before the file name (fuzz_config_yaml; input kept
// in fuzz/regressions/config_yaml). Now the file is refused with its line, and control bytes in a key are escaped.
TEST(TrainConfig, NulByteInFileIsRefusedWithFileAndLine) {
  const auto dir = yolo11::test::scratch_dir("config_nul");
  const auto cfg = write(dir, "nul.yaml", std::string("epochs: 3\nname: 'a: \x04\0\0\0\x01' null\n", 32));
  const auto msg = error_of([&] { TrainConfig::load(cfg, {}); });
  EXPECT_NE(msg.find("nul.yaml:2 holds a NUL byte"), std::string::npos) << msg;
  const auto esc = error_of([] { TrainConfig::load("", {"ep\x1bochs=3"}); });
  EXPECT_NE(esc.find("unknown key 'ep\\x1bochs'"), std::string::npos) << esc;
  EXPECT_EQ(yolo11::core::printable(std::string("a\0b\n", 4)), "a\\x00b\\x0a");
}

TEST(CoreStrings, EnvFlagIsOnForAnythingButUnsetEmptyOrZero) {
  const char* name = "YOLO11_TEST_ENV_FLAG";
  ::unsetenv(name);
  EXPECT_FALSE(yolo11::core::env_flag(name));
  for (const char* off : {"", "0"}) {
    ::setenv(name, off, 1);
    EXPECT_FALSE(yolo11::core::env_flag(name)) << "'" << off << "'";
  }
  for (const char* on : {"1", "true", "00", "yes"}) {
    ::setenv(name, on, 1);
    EXPECT_TRUE(yolo11::core::env_flag(name)) << on;
  }
  ::unsetenv(name);
}

TEST(TrainConfig, UnknownKeyInFileNamesFileAndLine) {
  const auto dir = yolo11::test::scratch_dir("config_unknown");
  const auto cfg = write(dir, "bad.yaml", "imgsz: 320\nepoch: 3\n");
  const auto msg = error_of([&] { TrainConfig::load(cfg, {}); });
  EXPECT_NE(msg.find("'epoch'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad.yaml:2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Did you mean 'epochs'?"), std::string::npos) << msg;
}

TEST(TrainConfig, WrongTypeNamesKeyValueAndExpectedType) {
  auto msg = error_of([] { TrainConfig::load("", {"epochs=ten"}); });
  EXPECT_NE(msg.find("'epochs'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'ten'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("integer"), std::string::npos) << msg;
  msg = error_of([] { TrainConfig::load("", {"epochs=10.5"}); });
  EXPECT_NE(msg.find("integer"), std::string::npos) << msg;
  msg = error_of([] { TrainConfig::load("", {"amp=1"}); });
  EXPECT_NE(msg.find("true or false"), std::string::npos) << msg;
  msg = error_of([] { TrainConfig::load("", {"lr0=fast"}); });
  EXPECT_NE(msg.find("not a number"), std::string::npos) << msg;
}

TEST(TrainConfig, OutOfRangeNamesTheRange) {
  auto msg = error_of([] { TrainConfig::load("", {"fliplr=1.5"}); });
  EXPECT_NE(msg.find("'fliplr'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'1.5'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[0, 1]"), std::string::npos) << msg;
  msg = error_of([] { TrainConfig::load("", {"batch=0"}); });
  EXPECT_NE(msg.find("'batch'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("AutoBatch"), std::string::npos) << msg;
  msg = error_of([] { TrainConfig::load("", {"lr0=0"}); });
  EXPECT_NE(msg.find("(0, 1]"), std::string::npos) << msg;
  const auto dir = yolo11::test::scratch_dir("config_range");
  const auto cfg = write(dir, "r.yaml", "# comment\nepochs: 10\nmomentum: 1.0\n");
  msg = error_of([&] { TrainConfig::load(cfg, {}); });
  EXPECT_NE(msg.find("r.yaml:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[0, 1)"), std::string::npos) << msg;
}

TEST(TrainConfig, BadEnumListsAllowedValues) {
  auto msg = error_of([] { TrainConfig::load("", {"optimizer=Adamax"}); });
  EXPECT_NE(msg.find("'optimizer'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("SGD, Adam, AdamW, auto"), std::string::npos) << msg;
  msg = error_of([] { TrainConfig::load("", {"instrument=verbose"}); });
  EXPECT_NE(msg.find("off, basic, full"), std::string::npos) << msg;
  msg = error_of([] { TrainConfig::load("", {"cache=gpu"}); });
  EXPECT_NE(msg.find("false, true, ram, disk"), std::string::npos) << msg;
  msg = error_of([] { TrainConfig::load("", {"trace_steps=30:20"}); });
  EXPECT_NE(msg.find("START:STOP"), std::string::npos) << msg;
  msg = error_of([] { TrainConfig::load("", {"epochs"}); });
  EXPECT_NE(msg.find("key=value"), std::string::npos) << msg;
}

TEST(TrainConfig, ModelScaleComesFromTheModelName) {
  EXPECT_EQ(TrainConfig::load("", {"model=yolo11s.yaml"}).model_scale, "s");
  EXPECT_EQ(TrainConfig::load("", {"model=configs/models/yolo11.yaml", "model_scale=x"}).model_scale, "x");
  const auto msg = error_of([] { TrainConfig::load("", {"model=yolo11s.yaml", "model_scale=m"}); });
  EXPECT_NE(msg.find("model_scale"), std::string::npos) << msg;
}

TEST(TrainConfig, ImgszIsRoundedUpToStride) {
  EXPECT_EQ(TrainConfig::load("", {"imgsz=300"}).imgsz, 320);
  EXPECT_EQ(TrainConfig::load("", {"freeze=3"}).freeze, (std::vector<int64_t>{0, 1, 2}));
  // A count beyond any model's layers is an error, not an index per "layer" (fuzz/regressions/config_kv).
  EXPECT_EQ(TrainConfig::load("", {"freeze=1000"}).freeze.size(), 1000u);
  EXPECT_THROW(TrainConfig::load("", {"freeze=66666666666663"}), std::runtime_error);
  EXPECT_DOUBLE_EQ(*TrainConfig::load("", {"time=1.5"}).time, 1.5);
  EXPECT_FALSE(TrainConfig::load("", {"time=1.5", "time=null"}).time.has_value());
}

TEST(TrainConfig, ArgsYamlRoundTripsEveryKey) {
  const auto dir = yolo11::test::scratch_dir("config_args");
  const auto c = TrainConfig::load("", {"epochs=3", "freeze=[1,2]", "conf=0.25", "name=my run", "trace_steps=5:9",
                                        "pretrained=weights/x.safetensors", "multi_scale=0.25", "cache=disk"});
  c.save_args(dir);
  ASSERT_TRUE(fs::exists(dir + "/args.yaml"));
  const auto back = TrainConfig::load(dir + "/args.yaml", {});
  EXPECT_EQ(back.to_yaml(), c.to_yaml());
  EXPECT_EQ(back.name, "my run");
  EXPECT_EQ(back.pretrained, "weights/x.safetensors");
  for (const auto& k : yolo11::config::config_keys())
    EXPECT_NE(("\n" + c.to_yaml()).find("\n" + k + ":"), std::string::npos) << k;  // every key is written
}

TEST(TrainConfig, ResumeAllowsOnlyRunControlKeys) {
  const auto dir = yolo11::test::scratch_dir("config_resume");
  const auto saved = TrainConfig::load("", {"epochs=10", "lr0=0.02"});
  saved.save_args(dir);
  const auto r = TrainConfig::load_for_resume(dir + "/args.yaml", {"epochs=20", "device=cpu", "workers=2"});
  EXPECT_EQ(r.epochs, 20);
  EXPECT_DOUBLE_EQ(r.lr0, 0.02);
  EXPECT_NO_THROW(yolo11::config::check_resume_compatible(saved, r));
  auto msg = error_of([&] { TrainConfig::load_for_resume(dir + "/args.yaml", {"lr0=0.1"}); });
  EXPECT_NE(msg.find("'lr0' cannot be changed when resuming"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the run has lr0=0.02"), std::string::npos) << msg;
  // The original command line repeated with resume= appended: equal values are no change.
  const auto same = TrainConfig::load_for_resume(dir + "/args.yaml", {"lr0=0.02", "epochs=30"});
  EXPECT_EQ(same.epochs, 30);
  EXPECT_TRUE(yolo11::config::resume_differences(saved, same).empty());
  auto other = saved;
  other.mosaic = 0.5;
  msg = error_of([&] { yolo11::config::check_resume_compatible(saved, other); });
  EXPECT_NE(msg.find("mosaic"), std::string::npos) << msg;
}

TEST(RunDir, MakeRunDirIncrementsLikeUltralytics) {
  const auto dir = yolo11::test::scratch_dir("config_rundir");
  const std::string p = dir + "/runs";
  EXPECT_EQ(yolo11::io::make_run_dir(p, "", false), p + "/train");
  EXPECT_TRUE(fs::is_directory(p + "/train/weights"));
  EXPECT_EQ(yolo11::io::make_run_dir(p, "", false), p + "/train2");
  EXPECT_EQ(yolo11::io::make_run_dir(p, "", false), p + "/train3");
  EXPECT_EQ(yolo11::io::make_run_dir(p, "", true), p + "/train");
  EXPECT_EQ(yolo11::io::make_run_dir(p, "exp", false), p + "/exp");
}

TEST(TrainConfig, ConcurrentRunDirClaimsNeverShareADirectory) {
  // Issue 10: two runs started together with the same project and no name could both take `train`. Claims are
  // mkdir calls that fail when the directory exists; here 16 threads and then 8 processes claim at the same moment.
  constexpr int kThreads = 16, kProcs = 8, kRounds = 5;
  for (int round = 0; round < kRounds; ++round) {
    const std::string p = yolo11::test::scratch_dir("config_rundir_race" + std::to_string(round)) + "/runs";
    std::vector<std::string> got(kThreads);
    std::atomic<int> ready{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
      ts.emplace_back([&, t] {
        ++ready;
        while (ready.load() < kThreads) std::this_thread::yield();  // start together
        got[t] = yolo11::io::make_run_dir(p, "", false);
      });
    for (auto& t : ts) t.join();
    std::set<std::string> unique(got.begin(), got.end());
    EXPECT_EQ(unique.size(), static_cast<size_t>(kThreads)) << "round " << round;
    EXPECT_TRUE(unique.count(p + "/train") && unique.count(p + "/train" + std::to_string(kThreads))) << "round " << round;

    // Processes: each writes the directory it claimed into a file named by its index.
    const std::string out = p + "/../claims";
    fs::create_directories(out);
    const auto start = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    std::vector<pid_t> kids;
    for (int k = 0; k < kProcs; ++k) {
      const pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        std::this_thread::sleep_until(start);
        int rc = 0;
        try {
          std::ofstream(out + "/" + std::to_string(k)) << yolo11::io::make_run_dir(p, "exp", false);
        } catch (...) {
          rc = 1;
        }
        ::_exit(rc);
      }
      kids.push_back(pid);
    }
    std::set<std::string> claimed;
    for (pid_t pid : kids) {
      int st = 0;
      ASSERT_EQ(::waitpid(pid, &st, 0), pid);
      EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    for (int k = 0; k < kProcs; ++k) {
      std::ifstream in(out + "/" + std::to_string(k));
      std::string d;
      std::getline(in, d);
      claimed.insert(d);
    }
    EXPECT_EQ(claimed.size(), static_cast<size_t>(kProcs)) << "round " << round;
    EXPECT_TRUE(claimed.count(p + "/exp") && claimed.count(p + "/exp" + std::to_string(kProcs))) << "round " << round;
  }
}

TEST(TrainConfig, ShippedRunConfigsLoad) {
  const auto coco128 = TrainConfig::load(src("configs/coco128.yaml"), {});
  EXPECT_EQ(coco128.imgsz, 640);
  EXPECT_EQ(coco128.batch, 16);
  EXPECT_EQ(coco128.epochs, 100);
  EXPECT_EQ(coco128.model_scale, "n");
  EXPECT_EQ(coco128.data, "configs/datasets/coco128.yaml");
  const auto shapes = TrainConfig::load(src("configs/shapes3.yaml"), {});
  EXPECT_EQ(shapes.imgsz, 256);
  EXPECT_EQ(shapes.epochs, 30);
  EXPECT_EQ(shapes.workers, 2);
  EXPECT_FALSE(shapes.amp);
  const auto coco8 = TrainConfig::load(src("configs/coco8.yaml"), {});
  EXPECT_EQ(coco8.data, "configs/datasets/coco8.yaml");
}

// TrainConfig is built from one struct per section of configs/default.yaml: every key of the file sits under the
// heading that is its struct's kSection, and a section read on its own is the TrainConfig's.
TEST(ConfigSections, EveryKeySitsUnderItsStructsHeadingInDefaultYaml) {
  std::ifstream in(src("configs/default.yaml"));
  ASSERT_TRUE(in) << src("configs/default.yaml");
  const std::regex heading(R"(^# (.+?) -{3,}$)"), key(R"(^([a-z0-9_]+):)");
  std::string section, line;
  std::map<std::string, std::string> file_section;
  for (int n = 1; std::getline(in, line); ++n) {
    std::smatch m;
    if (std::regex_match(line, m, heading))
      section = m[1];
    else if (std::regex_search(line, m, key))
      file_section[m[1]] = section;
  }
  ASSERT_EQ(file_section.size(), yolo11::config::config_keys().size());
  std::set<std::string> sections;
  for (const auto& k : yolo11::config::config_keys()) {
    ASSERT_TRUE(file_section.count(k)) << k << " is not in configs/default.yaml";
    EXPECT_EQ(file_section[k], yolo11::config::config_section(k)) << k;
    sections.insert(file_section[k]);
  }
  EXPECT_EQ(sections.size(), 9u);
  EXPECT_EQ(yolo11::config::config_section("lr0"), yolo11::config::Hyperparameters::kSection);
  EXPECT_EQ(yolo11::config::config_section("calibrate"), yolo11::config::InstrumentSettings::kSection);
  EXPECT_THROW(yolo11::config::config_section("lr1"), std::runtime_error);

  auto c = TrainConfig::load("", {"hsv_h=0.02", "log_every=7"});
  const yolo11::config::Hyperparameters& hyp = c;
  EXPECT_EQ(hyp.hsv_h, 0.02);
  yolo11::config::InstrumentSettings& ins = c;
  ins.log_every = 9;
  EXPECT_EQ(c.get("log_every"), "9");
}
