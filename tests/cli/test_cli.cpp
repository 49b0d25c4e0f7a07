// The `yolo11` front end (issue 11): `yolo11 MODE key=value ...` reaches the same entry points as the yolo11-<mode>
// executables, `yolo11 help` lists the modes and their keys, and wrong modes or keys are clear errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "golden.h"
#include "process.h"
#include "yolo11/cli/cli.h"
#include "yolo11/config/train_config.h"
#include "yolo11/model/weights.h"
#include "yolo11/model/yolo.h"
#include "yolo11_test_config.h"

namespace fs = std::filesystem;
using yolo11::cli::translate_args;
using yolo11::test::read_text;

namespace {

std::string front_end() { return yolo11::test::exe("yolo11"); }

/// results.csv rows without the `time` column (wall time differs between runs).
std::vector<std::string> rows_without_time(const fs::path& csv) {
  std::vector<std::string> out;
  std::istringstream in(read_text(csv.string()));
  std::string line;
  while (std::getline(in, line)) {
    const auto a = line.find(','), b = line.find(',', a + 1);
    out.push_back(line.substr(0, a) + line.substr(b));
  }
  return out;
}

/// Runs `yolo11 args...` with stdout into `out` and stderr into `err` (files); returns the exit code.
int run_split(const std::vector<std::string>& args, const std::string& out, const std::string& err) {
  std::vector<std::string> sh{"-c", "exec \"$0\" \"$@\" >'" + out + "' 2>'" + err + "'", front_end()};
  sh.insert(sh.end(), args.begin(), args.end());
  return yolo11::test::run("/bin/sh", sh, out + ".sh.log");
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(Cli, KeyValueArgumentsBecomeEachModesOptions) {
  using V = std::vector<std::string>;
  EXPECT_EQ(translate_args("train", {"epochs=3", "cfg=a.yaml", "--cfg", "b.yaml"}),
            (V{"epochs=3", "cfg=a.yaml", "--cfg", "b.yaml"}));
  EXPECT_EQ(translate_args("val", {"model=best.safetensors", "data=d.yaml", "imgsz=64"}),
            (V{"--weights", "best.safetensors", "--data", "d.yaml", "imgsz=64"}));
  EXPECT_EQ(translate_args("val", {"model=best.pt", "data=d.yaml"}),  // an Ultralytics checkpoint, as `yolo val`
            (V{"--weights", "best.pt", "--data", "d.yaml"}));
  EXPECT_EQ(translate_args("predict", {"model=yolo11n.pt", "source=img"}),
            (V{"--weights", "yolo11n.pt", "--source", "img"}));
  EXPECT_EQ(translate_args("val", {"model=yolo11s.yaml", "weights=w.safetensors"}),
            (V{"model=yolo11s.yaml", "--weights", "w.safetensors"}));  // a model YAML stays the architecture key
  EXPECT_EQ(translate_args("predict", {"weights=w.safetensors", "source=img", "conf=0.5"}),
            (V{"--weights", "w.safetensors", "--source", "img", "conf=0.5"}));
  EXPECT_EQ(translate_args("analyze", {"path=runs/train/x", "json=true"}), (V{"runs/train/x", "--json"}));
  EXPECT_EQ(translate_args("analyze", {"runs/train/x"}), (V{"runs/train/x"}));
  EXPECT_EQ(translate_args("synth", {"out=d", "max_objects=3"}), (V{"--out", "d", "--max-objects", "3"}));
  EXPECT_THROW(translate_args("synth", {"colour=red"}), std::invalid_argument);
  EXPECT_THROW(translate_args("export", {}), std::invalid_argument);
  EXPECT_EQ(translate_args("sweep", {"cfg=c.yaml", "batch=8,16", "imgsz=320", "steps=30"}),
            (V{"--cfg", "c.yaml", "batch=8,16", "imgsz=320", "steps=30"}));
  EXPECT_EQ(translate_args("sweep", {"verify=runs/train/x", "advice=workers=2"}),
            (V{"--verify", "runs/train/x", "advice=workers=2"}));
  EXPECT_EQ(yolo11::cli::modes().size(), 6u);
}

TEST(Cli, HelpListsEveryModeAndItsKeys) {
  ASSERT_TRUE(fs::exists(front_end())) << front_end() << " not built";
  const std::string dir = yolo11::test::scratch_dir("cli_help");
  EXPECT_EQ(yolo11::test::run(front_end(), {"help"}, dir + "/help.txt"), 0);
  const std::string help = read_text(dir + "/help.txt");
  for (const char* s : {"train", "val", "predict", "analyze", "synth", "close_mosaic", "source", "max_objects", "json"})
    EXPECT_NE(help.find(s), std::string::npos) << s << " missing from:\n" << help;
  EXPECT_EQ(yolo11::test::run(front_end(), {"help", "predict"}, dir + "/predict.txt"), 0);
  EXPECT_NE(read_text(dir + "/predict.txt").find("save_txt"), std::string::npos);
  // Mistakes: a clear message and exit code 2, like a CLI11 usage error.
  EXPECT_EQ(yolo11::test::run(front_end(), {"tarin", "epochs=1"}, dir + "/bad.txt"), 2);
  const std::string bad = read_text(dir + "/bad.txt");
  EXPECT_NE(bad.find("unknown mode 'tarin'"), std::string::npos) << bad;
  EXPECT_NE(bad.find("train, val, predict, analyze, synth"), std::string::npos) << bad;
  EXPECT_EQ(yolo11::test::run(front_end(), {"synth", "colour=red"}, dir + "/badkey.txt"), 2);
  EXPECT_NE(read_text(dir + "/badkey.txt").find("'colour=red' is not one of its keys"), std::string::npos);
  EXPECT_EQ(yolo11::test::run(front_end(), {}, dir + "/none.txt"), 2);
}

TEST(Cli, HelpTrainShowsEachKeysDefaultAndDescription) {
  ASSERT_TRUE(fs::exists(front_end())) << front_end() << " not built";
  const std::string dir = yolo11::test::scratch_dir("cli_help_train");
  ASSERT_EQ(yolo11::test::run(front_end(), {"help", "train"}, dir + "/train.txt"), 0);
  const std::string help = read_text(dir + "/train.txt");
  std::map<std::string, std::string> lines;  // key → its line
  std::istringstream in(help);
  for (std::string l; std::getline(in, l);)
    if (l.rfind("  ", 0) == 0 && l.find('=') != std::string::npos) lines[l.substr(2, l.find('=') - 2)] = l;
  // The default and the comment of configs/default.yaml, e.g. `epochs: 100 # (int) number of epochs to train for`
  for (const auto& d : yolo11::config::default_key_docs(std::string(YOLO11_TEST_SOURCE_DIR) + "/configs/default.yaml")) {
    ASSERT_TRUE(lines.count(d.key)) << d.key << " missing from:\n" << help;
    EXPECT_NE(lines[d.key].find(d.key + "=" + d.value + " "), std::string::npos) << lines[d.key];
    EXPECT_FALSE(d.description.empty()) << d.key;
    EXPECT_NE(lines[d.key].find(d.description), std::string::npos) << lines[d.key];
  }
  EXPECT_NE(lines["epochs"].find("epochs=100"), std::string::npos) << lines["epochs"];
  EXPECT_NE(lines["epochs"].find("(int) number of epochs to train for"), std::string::npos) << lines["epochs"];
  for (const auto& k : yolo11::config::config_keys()) EXPECT_TRUE(lines.count(k)) << k;
  EXPECT_TRUE(lines.count("cfg"));
  // `yolo11 help` stays a short overview: key names, no descriptions.
  ASSERT_EQ(yolo11::test::run(front_end(), {"help"}, dir + "/help.txt"), 0);
  const std::string overview = read_text(dir + "/help.txt");
  EXPECT_EQ(overview.find("number of epochs to train for"), std::string::npos) << overview;
  EXPECT_LT(std::count(overview.begin(), overview.end(), '\n'), 60) << overview;
}

TEST(Cli, EveryModeRunsThroughTheFrontEndLikeItsExecutable) {
  ASSERT_TRUE(fs::exists(front_end())) << front_end() << " not built";
  const std::string project = yolo11::test::scratch_dir("cli_modes");
  const std::string log = project + "/log.txt";
  auto args = yolo11::test::coco8_train_args(project, "front", 2);
  args.insert(args.end(), {"deterministic=true", "instrument=basic"});

  // train: `yolo11 train ...` and `yolo11-train ...` give the same results.csv (the same entry point).
  std::vector<std::string> front{"detect", "train"};  // Ultralytics' optional task word
  front.insert(front.end(), args.begin(), args.end());
  ASSERT_EQ(yolo11::test::run(front_end(), front, log), 0) << read_text(log);
  auto direct = args;
  direct.push_back("name=direct");
  ASSERT_EQ(yolo11::test::run(yolo11::test::exe("yolo11-train"), direct, log), 0) << read_text(log);
  const fs::path run = fs::path(project) / "front";
  ASSERT_EQ(yolo11::test::count_rows(run / "results.csv"), 2u);
  EXPECT_EQ(rows_without_time(run / "results.csv"), rows_without_time(fs::path(project) / "direct" / "results.csv"));

  const std::string weights = (run / "weights" / "last.safetensors").string();
  const std::string data = std::string(YOLO11_TEST_SOURCE_DIR) + "/configs/datasets/coco8.yaml";
  const std::string datasets = fs::path(yolo11::test::dataset_dir("coco8")).parent_path().string();
  const std::string model = std::string(YOLO11_TEST_SOURCE_DIR) + "/configs/models/yolo11.yaml";
  EXPECT_EQ(yolo11::test::run(front_end(),
                              {"val", "weights=" + weights, "data=" + data, "model=" + model, "datasets_dir=" + datasets,
                               "imgsz=64", "batch=4", "workers=1", "plots=false", "project=" + project, "name=val"},
                              log),
            0)
      << read_text(log);
  EXPECT_TRUE(fs::is_directory(fs::path(project) / "val"));
  EXPECT_EQ(yolo11::test::run(front_end(),
                              {"predict", "model=" + weights, "source=" + yolo11::test::dataset_dir("coco8") + "/images/val",
                               "imgsz=64", "conf=0.0", "save_txt=true", "project=" + project, "name=pred"},
                              log),
            0)
      << read_text(log);
  EXPECT_TRUE(fs::exists(fs::path(project) / "pred" / "000000000036.jpg")) << read_text(log);
  EXPECT_EQ(yolo11::test::run(front_end(), {"analyze", "path=" + run.string(), "json=true"}, project + "/analyze.txt"),
            0)
      << read_text(project + "/analyze.txt");
  EXPECT_NE(read_text(project + "/analyze.txt").find("\"bottleneck\""), std::string::npos);
  EXPECT_EQ(yolo11::test::run(front_end(), {"synth", "out=" + project + "/synth", "train=2", "val=1", "imgsz=64"}, log),
            0)
      << read_text(log);
  EXPECT_TRUE(fs::exists(fs::path(project) / "synth" / "data.yaml")) << read_text(log);
}

// Issue 16 item 5: a model trained with single_cls=true validates with single_cls=true (the key was accepted and
// ignored); without it the error says what to add.
TEST(Cli, ValWithSingleClsValidatesAOneClassModel) {
  const std::string project = yolo11::test::scratch_dir("val_single_cls");
  const std::string model = std::string(YOLO11_TEST_SOURCE_DIR) + "/configs/models/yolo11.yaml";
  const std::string weights = project + "/one_class.safetensors";
  yolo11::model::save_weights(*yolo11::model::YOLO(yolo11::model::ModelOptions{model, "n", 1, true}), weights);
  const std::string data = std::string(YOLO11_TEST_SOURCE_DIR) + "/configs/datasets/coco8.yaml";
  const std::string datasets = fs::path(yolo11::test::dataset_dir("coco8")).parent_path().string();
  const std::string log = project + "/log.txt";
  const std::vector<std::string> base{"val",         "weights=" + weights, "data=" + data, "model=" + model,
                                      "datasets_dir=" + datasets, "imgsz=64", "batch=4", "workers=0",
                                      "plots=false", "project=" + project};
  auto plain = base;
  plain.push_back("name=plain");
  EXPECT_EQ(yolo11::test::run(front_end(), plain, log), 1) << read_text(log);
  EXPECT_NE(read_text(log).find("predicts 1 classes but"), std::string::npos) << read_text(log);
  EXPECT_NE(read_text(log).find("add single_cls=true"), std::string::npos) << read_text(log);
  auto single = base;
  single.insert(single.end(), {"name=single", "single_cls=true"});
  ASSERT_EQ(yolo11::test::run(front_end(), single, log), 0) << read_text(log);
  const std::string out = read_text(log);
  EXPECT_NE(out.find("item"), std::string::npos) << out;  // the one class row, as Ultralytics names it
}

TEST(Cli, MistypedModeAndMissingKeysAnswerInTheKeyValueSpelling) {
  const std::string dir = yolo11::test::scratch_dir("cli_errors");
  const std::string log = dir + "/out.log";
  EXPECT_EQ(yolo11::test::run(front_end(), {"trian", "epochs=1"}, log), 2);
  EXPECT_NE(read_text(log).find("unknown mode 'trian'. Did you mean 'train'?"), std::string::npos) << read_text(log);
  fs::remove(log);
  EXPECT_EQ(yolo11::test::run(front_end(), {"val", "data=coco8.yaml"}, log), 2);
  EXPECT_NE(read_text(log).find("yolo11 val: weights= is required"), std::string::npos) << read_text(log);
  EXPECT_EQ(read_text(log).find("--weights"), std::string::npos) << read_text(log);
  fs::remove(log);
  EXPECT_EQ(yolo11::test::run(front_end(), {"predict", "weights=w.safetensors"}, log), 2);
  EXPECT_NE(read_text(log).find("yolo11 predict: source= is required"), std::string::npos) << read_text(log);
}

// Errors go to stderr, as plain text in the key=value spelling the user typed (not CLI11's --option spelling or
// spdlog's "[error]"), with a non-zero exit code; stdout stays empty.
TEST(Cli, ErrorsGoToStderrInTheKeyValueSpelling) {
  const std::string dir = yolo11::test::scratch_dir("cli_stderr");
  const std::string out = dir + "/out.txt", err = dir + "/err.txt";
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"val", "data=coco8.yaml"}, "yolo11 val: weights= is required: pass weights=PATH"},
      {{"val", "weights=", "data=coco8.yaml"}, "yolo11 val: weights= is required: pass weights=PATH"},
      {{"synth", "out=" + dir + "/synth", "train=abc"}, "train=abc: not an integer"},
      {{"train", "epochs=abc"}, "'abc' is not an integer"},
      {{"val", "weights=" + dir + "/none.safetensors", "data=coco8.yaml"},
       "weights=" + dir + "/none.safetensors: no such file"},
      {{"train", "model=" + dir + "/yolo11n.pt", "data=coco8.yaml", "epochs=1"},
       "model=" + dir + "/yolo11n.pt: no such file (relative paths are from the current directory). Weights are not "
       "downloaded here"},
      {{"train", "pretrained=" + dir + "/nope.safetensors", "data=coco8.yaml", "epochs=1"},
       "pretrained=" + dir + "/nope.safetensors: no such file"},
  };
  for (const auto& c : cases) {
    fs::remove(out), fs::remove(err);
    EXPECT_NE(run_split(c.args, out, err), 0) << c.args[1];
    const std::string o = read_text(out), e = read_text(err);
    EXPECT_NE(e.find(c.says), std::string::npos) << "stderr: " << e << "\nstdout: " << o;
    for (const char* old : {"[error]", "[info]", "--weights", "--train", "Could not convert"})
      EXPECT_EQ(e.find(old) == std::string::npos && o.find(old) == std::string::npos, true) << old << ": " << e << o;
    EXPECT_EQ(o.find(c.says), std::string::npos) << "the error went to stdout: " << o;
    EXPECT_EQ(o.find("train: "), std::string::npos) << "a missing weights file is found before the dataset scan: " << o;
  }
}

// The console of a coco8 run reads as the reference's: plain lines (no spdlog "[info]", no LibTorch notices), per
// epoch the progress line, the validation table and one epoch line; the stage, loader and diagnosis tables once, at
// the end. train.log keeps every epoch's tables, and epochs are numbered N/E, from 1.
TEST(Cli, TheConsoleShowsPerEpochOnlyProgressValidationAndASummaryLine) {
  const std::string project = yolo11::test::scratch_dir("cli_console");
  const std::string out = project + "/out.txt", err = project + "/err.txt";
  auto args = yolo11::test::coco8_train_args(project, "run", 2, /*batch=*/1);  // 4 steps per epoch
  args.insert(args.begin(), "train");
  args.insert(args.end(), {"instrument=basic", "instrument_warmup=2", "log_every=2"});
  ASSERT_EQ(run_split(args, out, err), 0) << read_text(out) << read_text(err);
  const std::string console = read_text(out), errors = read_text(err);
  const std::string log = read_text(project + "/run/train.log");
  for (const char* noise : {"[info]", "InitGoogleLogging", "scatter_reduce", "[W "}) {
    EXPECT_EQ(console.find(noise), std::string::npos) << noise << "\n" << console;
    EXPECT_EQ(errors.find(noise), std::string::npos) << noise << "\n" << errors;
  }
  EXPECT_EQ(count(console, "Epoch    GPU_mem"), 2u) << console;  // the progress header of each epoch
  EXPECT_EQ(count(console, "mAP50-95)"), 2u) << console;       // the validation table of each epoch
  EXPECT_NE(console.find("epoch 1/2: train"), std::string::npos) << console;
  EXPECT_NE(console.find("epoch 2/2: train"), std::string::npos) << console;
  // The tables of the run, once at the end; no per-epoch table, warm-up, window or diagnosis line.
  EXPECT_EQ(count(console, "max % of step"), 1u) << console;
  EXPECT_EQ(count(console, "loader part"), 1u) << console;
  EXPECT_EQ(count(console, "run diagnosis"), 1u) << console;
  EXPECT_GT(console.find("max % of step"), console.find("epoch 2/2: train")) << console;
  for (const char* per_epoch : {"warm-up (steps", "diagnosis (steps", "epoch 1/2 (", "img/s, data-wait"})
    EXPECT_EQ(console.find(per_epoch), std::string::npos) << per_epoch << "\n" << console;
  // train.log: every epoch's table, loader table and the window lines; 1-based epochs only.
  EXPECT_NE(log.find("epoch 1/2 (steps 2-3)"), std::string::npos) << log;
  EXPECT_NE(log.find("epoch 2/2 (steps 4-7)"), std::string::npos) << log;
  EXPECT_GE(count(log, "max % of step"), 3u) << log;  // two epochs and the run
  EXPECT_GE(count(log, "loader part"), 3u) << log;
  EXPECT_NE(log.find("warm-up (steps 0-1"), std::string::npos) << log;
  EXPECT_NE(log.find("diagnosis (steps "), std::string::npos) << log;
  EXPECT_EQ(log.find("epoch 0"), std::string::npos) << log;
  EXPECT_EQ(log.find("[info]"), std::string::npos) << log;
}

TEST(Cli, AStartThatFailsBeforeTrainingLeavesNoRunDirBehind) {
  const std::string dir = yolo11::test::scratch_dir("cli_early_failure");
  const std::string datasets = fs::path(yolo11::test::dataset_dir("coco8")).parent_path().string();
  const std::string log = dir + "/out.log";
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"model=nosuch.yaml"},
                                               std::vector<std::string>{"device=7"}}) {
    std::vector<std::string> args = {"train", "data=coco8.yaml", "datasets_dir=" + datasets, "epochs=1", "imgsz=64",
                                     "project=" + dir, "name=run"};
    args.insert(args.end(), bad.begin(), bad.end());
    EXPECT_NE(yolo11::test::run(front_end(), args, log), 0) << bad[0];
    EXPECT_FALSE(fs::exists(dir + "/run")) << bad[0] << "\n" << read_text(log);
  }
  // a dir that already held a run's files is kept (exist_ok=true onto a trained run)
  fs::create_directories(dir + "/kept/weights");
  std::ofstream(dir + "/kept/results.csv") << "epoch\n";
  EXPECT_NE(yolo11::test::run(front_end(), {"train", "data=coco8.yaml", "datasets_dir=" + datasets, "model=nosuch.yaml",
                                            "project=" + dir, "name=kept", "exist_ok=true"}, log), 0);
  EXPECT_TRUE(fs::exists(dir + "/kept/results.csv"));
}
