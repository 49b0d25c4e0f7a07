#pragma once
// TrainConfig: every training hyperparameter and run setting, typed, with Ultralytics key names.
// Sources merge in the order configs/default.yaml -> --cfg FILE -> key=value overrides; every value is
// validated (type, range, allowed set) and errors name the key, the source (file:line or "command line"),
// the bad value and what is allowed.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "yolo11/core/settings.h"

namespace yolo11::config {

/// A half-open step range "START:STOP" (steps START..STOP-1). Empty when not set.
struct StepRange {
  int64_t start = -1, stop = -1;
  bool empty() const { return start < 0; }
  bool contains(int64_t step) const { return !empty() && step >= start && step < stop; }
  std::string str() const;  ///< "START:STOP" or "".
};

// The sections of configs/default.yaml, one struct each, in file order. TrainConfig is all of them, so a key is
// read as cfg.batch (Ultralytics' flat `args.batch`), and a part that needs one section takes that section only
// (augment_options reads config::Hyperparameters). Each struct's kSection is its heading in default.yaml;
// config_section(key) says which section holds a key, and the test that every key sits under its struct's heading
// is ConfigSections.EveryKeySitsUnderItsStructsHeadingInDefaultYaml (tests/config/test_train_config.cpp).

/// "Task and mode": what the run does.
struct TaskSettings {
  static constexpr const char* kSection = "Task and mode";
  std::string task = "detect";  ///< only "detect"
  std::string mode = "train";   ///< train | val | predict
};

/// "Train settings" (Ultralytics names and defaults).
struct TrainSettings {
  static constexpr const char* kSection = "Train settings";
  std::string model;                 ///< model YAML path
  std::string data;                  ///< dataset YAML path
  int64_t epochs = 100;
  std::optional<double> time;        ///< max hours; overrides epochs when set
  int64_t patience = 100;
  int64_t batch = 16;                ///< images per step; with batch_fraction > 0 the CPU fallback until AutoBatch resolves it
  /// AutoBatch (Ultralytics): batch=-1 → 0.6, batch=0.7 → 0.7 of the device memory; 0 = `batch` is fixed. Resolved by
  /// engine::resolve_batch at run start (CUDA: probe; CPU: falls back to batch=16 with a warning).
  double batch_fraction = 0.0;
  int64_t imgsz = 640;               ///< pixels, multiple of 32
  bool save = true;
  int64_t save_period = -1;
  bool save_pt = false;              ///< also write weights/last.pt and best.pt, Ultralytics checkpoints (model/pt_save.h)
  core::CacheMode cache = core::CacheMode::off;  ///< false | true = ram | disk (core/settings.h)
  std::string device;                ///< "" | "cpu" | "0" | "cuda:0" | "0,1"
  int64_t workers = 8;
  std::string project;               ///< "" → runs/train
  std::string name;                  ///< "" → train
  bool exist_ok = false;
  std::string pretrained = "true";   ///< "true" | "false" | weights path
  std::string optimizer = "auto";    ///< SGD | Adam | AdamW | auto
  bool verbose = true;
  int64_t seed = 0;
  bool deterministic = true;
  bool single_cls = false;
  bool rect = false;
  bool cos_lr = false;
  int64_t close_mosaic = 10;
  std::string resume = "false";      ///< "false" | "true" | path of a run dir / checkpoint
  bool amp = true;
  double fraction = 1.0;
  bool profile = false;
  std::vector<int64_t> freeze;       ///< layer indices to freeze (int N in YAML → 0..N-1)
  double multi_scale = 0.0;
};

/// "Val/Test settings".
struct ValSettings {
  static constexpr const char* kSection = "Val/Test settings";
  bool val = true;
  std::string split = "val";
  bool save_json = false;
  std::optional<double> conf;
  double iou = 0.7;
  int64_t max_det = 300;
  bool half = false;
  bool plots = true;
  bool agnostic_nms = false;         ///< one NMS over all classes (val and predict)
  bool augment = false;              ///< test-time augmentation in yolo11 val: scales 1, 0.83 (flipped), 0.67, merged
  std::vector<int64_t> classes;      ///< keep only these class ids in the dataset's labels (empty = all), as Ultralytics
};

/// "Predict settings" (yolo11 predict; engine::PredictOptions::from_overrides reads them through the key table).
struct PredictSettings {
  static constexpr const char* kSection = "Predict settings";
  std::string source;                ///< image, folder, glob, video, webcam index or .txt list
  int64_t vid_stride = 1;            ///< video / webcam: every vid_stride-th frame
  bool save_txt = false, save_conf = false;
  int64_t line_width = 0;            ///< box line width in pixels; 0 = 2
};

/// "Hyperparameters": optimizer and schedule, loss gains, augmentation.
struct Hyperparameters {
  static constexpr const char* kSection = "Hyperparameters";
  double lr0 = 0.01, lrf = 0.01, momentum = 0.937, weight_decay = 0.0005;
  double warmup_epochs = 3.0, warmup_momentum = 0.8, warmup_bias_lr = 0.1;
  double box = 7.5, cls = 0.5, dfl = 1.5;
  int64_t nbs = 64;
  double hsv_h = 0.015, hsv_s = 0.7, hsv_v = 0.4;
  double degrees = 0.0, translate = 0.1, scale = 0.5, shear = 0.0, perspective = 0.0;  ///< scale: aug gain
  double flipud = 0.0, fliplr = 0.5, bgr = 0.0;
  double mosaic = 1.0, mixup = 0.0, cutmix = 0.0, copy_paste = 0.0;
};

/// "Runtime [ours]": how this process runs.
struct RuntimeSettings {
  static constexpr const char* kSection = "Runtime [ours]";
  std::string model_scale;           ///< n|s|m|l|x; after load() always resolved (from the model name or "n")
  int64_t threads = 0;               ///< intra-op threads, 0 = all cores
  std::string datasets_dir = "datasets";
};

/// "Distributed training (DDP) [ours]".
struct DistSettings {
  static constexpr const char* kSection = "Distributed training (DDP) [ours]";
  int64_t dist_timeout = 1800;       ///< seconds: DDP store connect and every collective (torch.distributed default)
  bool ddp_overlap = true;           ///< DDP: each gradient bucket's all-reduce starts during backward (PyTorch DDP)
  double bucket_cap_mb = 25;         ///< DDP: gradient bucket size, MiB (PyTorch DDP's bucket_cap_mb)
  bool sync_bn = false;              ///< DDP: BatchNorm statistics over the global batch (torch.nn.SyncBatchNorm)
};

/// "Instrumentation [ours]": stage timers, traces, profiles, the diagnosis and the loggers that export them.
struct InstrumentSettings {
  static constexpr const char* kSection = "Instrumentation [ours]";
  core::InstrumentLevel instrument = core::InstrumentLevel::basic;  ///< off | basic | full (core/settings.h)
  int64_t log_every = 10;
  int64_t instrument_warmup = 3;     ///< first steps of a process kept out of windows, tables and diagnosis
  StepRange trace_steps;
  StepRange profile_steps;
  StepRange profile_ops;             ///< operator profile window (ops.txt, ops.csv, ops_trace.json); empty = none
  bool profile_ops_shapes = false;   ///< operator table also grouped by input shape
  bool profile_ops_memory = false;   ///< operator profile records allocations (MiB per stage)
  /// The diagnosis's expected compute speed (engine/calibration.h): this setting's cached figure, else the last two
  /// steps of the instrument warm-up timed with the loader paused (no extra step), cached per setting and machine
  /// when the machine was quiet. Skipped with instrument=off and under DDP.
  bool calibrate = true;
  bool nvtx_ops = false;             ///< an NVTX range per operator, nested in the stage ranges (Nsight)
  bool sync = false;
  bool tensorboard = false;          ///< write runs/train/<name>/events.out.tfevents.* (engine/loggers.h)
  int64_t metrics_port = 0;          ///< Prometheus /metrics on this TCP port (rank r: port + LOCAL_RANK); 0 = off
  std::string metrics_host = "127.0.0.1";  ///< address the /metrics server binds (0.0.0.0 = every interface)
};

/// "Benchmarks [ours]": settings of yolo11-sweep and yolo11-bench runs.
struct BenchSettings {
  static constexpr const char* kSection = "Benchmarks [ours]";
  int64_t max_steps = 0;        ///< stop after this many steps of the process (no val, no checkpoint); 0 = off
  bool synthetic_data = false;  ///< every step reuses the first batch (no loader cost; yolo11-sweep data=synthetic)
  bool verify_advice = false;        ///< after the run: A/B its diagnosis advice (bench::verify_advice) → advice_verified.json
};

/// Every training hyperparameter and run setting: the sections above, in default.yaml order.
struct TrainConfig : TaskSettings,
                     TrainSettings,
                     ValSettings,
                     PredictSettings,
                     Hyperparameters,
                     RuntimeSettings,
                     DistSettings,
                     InstrumentSettings,
                     BenchSettings {
  /// Loads default.yaml (see default_config_path()), then `cfg_file` (if not empty), then `overrides`
  /// ("key=value", Ultralytics CLI form; "cfg=FILE" is accepted as an alternative to `cfg_file`).
  /// Throws std::runtime_error naming key, source, bad value and allowed values/range.
  static TrainConfig load(const std::string& cfg_file, const std::vector<std::string>& overrides,
                          const std::string& default_yaml = "");
  /// Resume: loads default.yaml → `args_yaml` (the run's saved args.yaml) → overrides; only run-control keys
  /// (resume_overridable_keys()) may be overridden. Another key given with the value the run already has is
  /// accepted (the original command line plus resume= works); with a different value it throws naming the key,
  /// the requested and the saved value.
  static TrainConfig load_for_resume(const std::string& args_yaml, const std::vector<std::string>& overrides,
                                     const std::string& default_yaml = "");
  /// All resolved values as YAML ("key: value" lines in default.yaml order), loadable by load().
  std::string to_yaml() const;
  /// Writes to_yaml() to <run_dir>/args.yaml atomically.
  void save_args(const std::string& run_dir) const;
  /// Value of one key as it would appear in to_yaml() (throws for an unknown key, with a suggestion).
  std::string get(const std::string& key) const;
};

/// default.yaml path: `explicit_path` if given, else env YOLO11_DEFAULT_CFG, else <source dir>/configs/default.yaml.
std::string default_config_path(const std::string& explicit_path = "");
/// Every key TrainConfig knows, in default.yaml order.
const std::vector<std::string>& config_keys();
/// The default.yaml section that holds `key` (the kSection of the struct above that has its field, e.g.
/// "Hyperparameters" for lr0). Throws std::runtime_error for an unknown key, with a suggestion.
std::string config_section(const std::string& key);
/// One key of the default config file as written there: `key: value # (type) description`.
struct KeyDoc {
  std::string key;
  std::string value;        ///< the default as written ("" when the value is empty)
  std::string description;  ///< the comment on the key's own line, e.g. "(int) number of epochs to train for"
};
/// The top-level keys of default_config_path(default_yaml), in file order, with their defaults and one-line
/// descriptions (what `yolo11 help train` prints). Throws std::runtime_error when the file cannot be read.
std::vector<KeyDoc> default_key_docs(const std::string& default_yaml = "");
/// Keys that may differ from the saved args when resuming (epochs, time, patience, device, workers, batch, ...).
const std::vector<std::string>& resume_overridable_keys();
/// Every key that differs between `saved` and `requested` and is not resume-overridable, as
/// "key (saved X, requested Y)"; empty when they agree.
std::vector<std::string> resume_differences(const TrainConfig& saved, const TrainConfig& requested);
/// Throws std::runtime_error listing resume_differences() when there are any.
void check_resume_compatible(const TrainConfig& saved, const TrainConfig& requested);

/// The candidate nearest to `word` (case-insensitive edit distance) when it is close enough to be a typo (distance
/// ≤ max(2, |word| / 3)), else "". Used for "Did you mean" in config keys and command-line modes.
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace yolo11::config
