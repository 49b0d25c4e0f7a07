// The `yolo11` front end (include/yolo11/cli/cli.h): Ultralytics' `yolo MODE key=value ...` over the entry points of
// the yolo11-<mode> executables.
#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "yolo11/cli/cli.h"
#include "yolo11/config/train_config.h"
#include "yolo11/io/console.h"
#include "yolo11/core/strings.h"

namespace yolo11::cli {

namespace {

using core::ends_with;
using core::join;

const Mode* find_mode(const std::string& name) {
  for (const auto& m : modes())
    if (m.name == name) return &m;
  return nullptr;
}

/// `yolo11 help train`: every key with its default and description from the default config file (Ultralytics'
/// `yolo cfg`). False when that file cannot be read (the caller then lists the key names only).
bool print_train_keys(const Mode& m) {
  std::vector<config::KeyDoc> docs;
  try {
    docs = config::default_key_docs();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "yolo11 help train: %s; listing the key names only\n", e.what());
    return false;
  }
  std::printf("yolo11 %s: %s\n\nKeys (key=default  description; from %s):\n", m.name.c_str(), m.summary.c_str(),
              config::default_config_path().c_str());
  auto line = [](const std::string& key, const std::string& value, const std::string& description) {
    const std::string kv = key + "=" + value;
    std::printf("  %-28s%s%s\n", kv.c_str(), kv.size() >= 28 ? "  " : "", description.c_str());
  };
  for (const auto& k : m.keys) {
    if (k == "cfg") {
      line("cfg", "", "(str) a config YAML merged over these defaults, before the key=value arguments");
      continue;
    }
    const auto it = std::find_if(docs.begin(), docs.end(), [&](const config::KeyDoc& d) { return d.key == k; });
    if (it == docs.end()) line(k, "", "(not in the default config file)");
    else line(k, it->value, it->description);
  }
  return true;
}

void print_help(const Mode* only) {
  if (only == nullptr) {
    std::printf("yolo11: YOLO11 detection in C++ (LibTorch), Ultralytics-style command line.\n\n"
                "Usage: yolo11 MODE key=value ...    (yolo11 help MODE: the keys of one mode, for train with defaults "
                "and descriptions; yolo11 MODE --help: its options)\n\nModes:\n");
    for (const auto& m : modes()) std::printf("  %-8s %s\n", m.name.c_str(), m.summary.c_str());
    std::printf("\nExamples:\n"
                "  yolo11 train data=configs/datasets/coco8.yaml model=yolo11n.yaml epochs=3 imgsz=320\n"
                "  yolo11 val weights=runs/train/train/weights/best.safetensors data=configs/datasets/coco8.yaml\n"
                "  yolo11 predict weights=runs/train/train/weights/best.safetensors "
                "source=datasets/coco8/images/val conf=0.25\n"
                "  yolo11 analyze runs/train/train\n"
                "  yolo11 synth out=datasets/synth train=64 val=16\n"
                "  yolo11 sweep cfg=configs/coco128.yaml batch=8,16 workers=0,2 imgsz=320 steps=30 warmup=10\n\nKeys:\n");
  }
  if (only != nullptr && only->name == "train" && print_train_keys(*only)) return;
  for (const auto& m : modes()) {
    if (only != nullptr && &m != only) continue;
    if (only != nullptr) std::printf("yolo11 %s: %s\n", m.name.c_str(), m.summary.c_str());
    std::string line = "  " + m.name + ":";
    for (const auto& k : m.keys) {  // wrapped at 100 columns
      if (line.size() + 1 + k.size() > 100) {
        std::printf("%s\n", line.c_str());
        line = std::string(m.name.size() + 3, ' ');
      }
      line += " " + k;
    }
    std::printf("%s\n", line.c_str());
  }
}

}  // namespace

const std::vector<Mode>& modes() {
  static const std::vector<Mode> m = [] {
    std::vector<std::string> train_keys = {"cfg"};
    for (const auto& k : config::config_keys()) train_keys.push_back(k);
    return std::vector<Mode>{
        {"train", "train a model (configs/default.yaml keys; resume=RUN continues a run)", train_keys, &train},
        {"val", "mAP of weights on a dataset split",
         {"weights", "data", "imgsz", "batch", "conf", "iou", "max_det", "workers", "device", "split", "plots",
          "project", "name", "exist_ok", "model", "threads", "datasets_dir", "rect", "half", "agnostic_nms", "classes",
          "augment", "save_json", "save_txt", "save_conf", "verbose", "single_cls"},
         &val},
        {"predict", "detect objects in images, folders, globs, videos, a webcam or a .txt list",
         {"weights", "source", "imgsz", "conf", "iou", "max_det", "batch", "vid_stride", "save", "save_txt",
          "save_conf", "save_json", "line_width", "device", "project", "name", "exist_ok", "data"},
         &predict},
        {"analyze", "per-stage time breakdown and bottleneck diagnosis of a run", {"path", "json"}, &analyze},
        {"synth", "write a synthetic shapes dataset (train/val + data.yaml)",
         {"out", "train", "val", "imgsz", "max_objects", "seed", "ext"}, &synth},
        {"sweep", "train speed over a batch x workers x imgsz grid, one child run per point; verify=RUN A/B-tests a "
                  "run's advice (docs/sweeps.md)",
         {"cfg", "batch", "workers", "imgsz", "amp", "cache", "steps", "warmup", "point_timeout", "data", "name",
          "project", "resume", "exist_ok", "check_whatif", "train_exe", "verify", "rounds", "advice", "(train keys)"},
         &sweep},
    };
  }();
  return m;
}

std::vector<std::string> translate_args(const std::string& mode, const std::vector<std::string>& args) {
  const Mode* m = find_mode(mode);
  if (m == nullptr) throw std::invalid_argument("unknown mode '" + mode + "'");
  std::vector<std::string> out;
  for (const auto& a : args) {
    const auto eq = a.find('=');
    const std::string k = eq == std::string::npos ? std::string() : a.substr(0, eq);
    const std::string v = eq == std::string::npos ? a : a.substr(eq + 1);
    if (mode == "train" || a.rfind("-", 0) == 0) {  // train reads key=value itself; --options pass through
      out.push_back(a);
    } else if ((mode == "val" || mode == "predict") &&
               (k == "weights" || (k == "model" && (ends_with(v, ".safetensors") || ends_with(v, ".pt") ||
                                                    ends_with(v, ".pth"))))) {  // .pt: an Ultralytics checkpoint
      out.insert(out.end(), {"--weights", v});
    } else if ((mode == "val" && k == "data") || (mode == "predict" && k == "source")) {
      out.insert(out.end(), {"--" + k, v});
    } else if (mode == "val" || mode == "predict") {
      out.push_back(a);
    } else if (mode == "sweep" && (k == "cfg" || k == "verify")) {
      out.insert(out.end(), {"--" + k, v});
    } else if (mode == "sweep") {  // grid keys and the children's train keys: yolo11-sweep checks them
      out.push_back(a);
    } else if (mode == "analyze" && (k == "path" || eq == std::string::npos)) {
      out.push_back(v);
    } else if (mode == "analyze" && k == "json") {
      if (v == "true" || v == "True" || v == "1") out.push_back("--json");
    } else if (mode == "synth" && std::find(m->keys.begin(), m->keys.end(), k) != m->keys.end()) {
      std::string flag = k;
      std::replace(flag.begin(), flag.end(), '_', '-');
      out.insert(out.end(), {"--" + flag, v});
    } else {
      throw std::invalid_argument("yolo11 " + mode + ": '" + a + "' is not one of its keys (" + join(m->keys, " ") +
                                  ")");
    }
  }
  return out;
}

int dispatch(int argc, char** argv) {
  io::setup_console();  // plain lines, errors on stderr, no LibTorch notices (include/yolo11/io/console.h)
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args.front() == "detect") args.erase(args.begin());  // `yolo detect train ...`: the only task
  if (args.empty() || args.front() == "help" || args.front() == "--help" || args.front() == "-h") {
    const Mode* only = args.size() > 1 ? find_mode(args[1]) : nullptr;
    if (args.size() > 1 && only == nullptr) {
      std::fprintf(stderr, "yolo11 help: unknown mode '%s'\n", args[1].c_str());
      print_help(nullptr);
      return 2;
    }
    print_help(only);
    return args.empty() ? 2 : 0;
  }
  const Mode* m = find_mode(args.front());
  if (m == nullptr) {
    std::vector<std::string> names;
    for (const auto& x : modes()) names.push_back(x.name);
    const std::string guess = config::closest_name(args.front(), names);
    const std::string then = guess.empty() ? "; the modes are " : ". Did you mean '" + guess + "'? The modes are ";
    std::fprintf(stderr, "yolo11: unknown mode '%s'%s%s (yolo11 help lists their keys)\n", args.front().c_str(),
                 then.c_str(), join(names, ", ").c_str());
    return 2;
  }
  std::vector<std::string> rest;
  auto has_key = [&](const std::string& k) {  // with a value: `weights=` alone is as missing
    return std::any_of(args.begin() + 1, args.end(),
                       [&](const std::string& a) { return a.rfind(k + "=", 0) == 0 && a.size() > k.size() + 1; });
  };
  using Required = std::vector<std::pair<std::string, std::string>>;  // key, example
  const std::string weights_eg = "weights=runs/train/train/weights/best.safetensors";
  const Required required = m->name == "val"       ? Required{{"weights", weights_eg}, {"data", "data=coco8.yaml"}}
                            : m->name == "predict" ? Required{{"weights", weights_eg}, {"source", "source=images/"}}
                                                   : Required{};
  const bool dashed =  // the --weights / --data spelling of the per-mode executables: CLI11 checks those
      std::any_of(args.begin() + 1, args.end(), [](const std::string& a) { return a.rfind("--", 0) == 0; });
  for (const auto& [k, example] : required) {
    const bool weights_via_model =
        k == "weights" && std::any_of(args.begin() + 1, args.end(), [](const std::string& a) {
          return a.rfind("model=", 0) == 0 && (ends_with(a, ".safetensors") || ends_with(a, ".pt"));
        });
    if (!dashed && !has_key(k) && !weights_via_model) {
      std::fprintf(stderr, "yolo11 %s: %s= is required: pass %s=PATH, e.g. %s (yolo11 help %s lists the keys)\n",
                   m->name.c_str(), k.c_str(), k.c_str(), example.c_str(), m->name.c_str());
      return 2;
    }
  }
  try {
    rest = translate_args(m->name, std::vector<std::string>(args.begin() + 1, args.end()));
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  std::vector<std::string> storage{"yolo11 " + m->name};
  storage.insert(storage.end(), rest.begin(), rest.end());
  std::vector<char*> av;
  for (auto& s : storage) av.push_back(s.data());
  av.push_back(nullptr);
  return m->run(static_cast<int>(storage.size()), av.data());
}

}  // namespace yolo11::cli
