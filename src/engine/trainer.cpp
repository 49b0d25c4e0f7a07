// engine::Trainer — one training run, top to bottom. A step reads:
//   dataloader → h2d → forward (autocast) → loss → backward (scaled loss) →
//   [optimizer (unscale, clip, step unless inf/NaN, scaler update, zero_grad) → ema]
// each stage timed and NVTX-ranged by instrument::Profiler; validation, checkpoint and log per epoch.
// DDP (WORLD_SIZE > 1, docs/dist.md): every rank runs this same loop on its shard with batch / world; rank 0's
// initial weights are broadcast; at each optimizer step the accumulated gradients are summed over ranks
// ("allreduce" stage) before unscale/clip/step; rank 0 alone writes the run dir and validates.
// Reference: Ultralytics BaseTrainer._do_train / DetectionTrainer (8.4.50).
#include "yolo11/engine/trainer.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "yolo11/build_info.h"
#include "yolo11/compat.h"
#include "yolo11/data/dataset.h"
#include "yolo11/data/dataset_info.h"
#include "yolo11/data/loader.h"
#include "yolo11/data/plots.h"
#include "yolo11/dist/dist.h"
#include "yolo11/engine/amp.h"
#include "yolo11/engine/checkpoint.h"
#include "yolo11/engine/data_setup.h"
#include "yolo11/engine/ema.h"
#include "yolo11/engine/inference.h"
#include "yolo11/engine/interrupt.h"
#include "yolo11/engine/optimizer.h"
#include "yolo11/engine/results.h"
#include "yolo11/engine/schedule.h"
#include "yolo11/engine/validator.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/io/file.h"
#include "yolo11/engine/fp_env.h"
#include "yolo11/loss/detection_loss.h"
#include "yolo11/model/yolo.h"

namespace yolo11::engine {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Console + train.log logger; the console keeps colours, the file gets plain lines.
/// `append`: a resumed run adds to its train.log instead of replacing the history of the epochs already run.
void setup_logging(const std::string& run_dir, bool append) {
  auto console = std::make_shared<spdlog::sinks::stdout_color_sink_mt>();
  auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(run_dir + "/train.log", /*truncate=*/!append);
  auto logger = std::make_shared<spdlog::logger>("yolo11", spdlog::sinks_init_list{console, file});
  logger->set_pattern("%v");
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  // File-only twin: for lines the console already shows (the \r progress line on a terminal).
  spdlog::drop("yolo11_file");
  auto file_only = std::make_shared<spdlog::logger>("yolo11_file", file);
  file_only->set_pattern("%v");
  file_only->flush_on(spdlog::level::info);
  spdlog::register_logger(file_only);
}

/// DDP ranks other than 0: console only, warnings and errors, prefixed with the rank (Ultralytics silences them
/// too); rank 0's train.log is the run's log.
void setup_rank_logging(int rank) {
  auto console = std::make_shared<spdlog::sinks::stdout_color_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("yolo11", console);
  logger->set_pattern(fmt::format("[rank {}] %v", rank));
  logger->set_level(spdlog::level::warn);
  spdlog::set_default_logger(logger);
  spdlog::drop("yolo11_file");
  auto none = std::make_shared<spdlog::logger>("yolo11_file");  // no sinks: the file twin of rank 0 only
  spdlog::register_logger(none);
}

/// Ultralytics-style progress line: "  1/100  0G  3.123  5.123  4.123  45  640: 38% 3/8 1.2it/s 2.1s<4.3s".
std::string progress_line(int64_t epoch, int64_t epochs, const std::string& mem, const std::vector<double>& tloss,
                          int64_t instances, int64_t size, int64_t i, int64_t nb, double elapsed) {
  const double its = elapsed > 0 ? static_cast<double>(i) / elapsed : 0.0;
  const double eta = its > 0 ? static_cast<double>(nb - i) / its : 0.0;
  const int pct = static_cast<int>(100.0 * static_cast<double>(i) / static_cast<double>(std::max<int64_t>(nb, 1)));
  const int bar_len = 12, filled = pct * bar_len / 100;
  std::string bar(static_cast<size_t>(filled), '#');
  bar += std::string(static_cast<size_t>(bar_len - filled), '-');
  return fmt::format("{:>11}{:>11}{:>11.4g}{:>11.4g}{:>11.4g}{:>11}{:>11}: {:>3}% {} {}/{} {:.2f}it/s {:.1f}s<{:.1f}s",
                     fmt::format("{}/{}", epoch + 1, epochs), mem, tloss[0], tloss[1], tloss[2], instances, size, pct,
                     bar, i, nb, its, elapsed, eta);
}

std::string progress_header() {
  return fmt::format("{:>11}{:>11}{:>11}{:>11}{:>11}{:>11}{:>11}", "Epoch", "GPU_mem", "box_loss", "cls_loss",
                     "dfl_loss", "Instances", "Size");
}

std::string memory_string(bool cuda) {
  if (cuda) {
    const int64_t b = compat::memory_allocated(0);
    return b >= 0 ? fmt::format("{:.3g}G", static_cast<double>(b) / 1e9) : "n/a";
  }
  return "0G";
}


/// Copies a (name, tensor) state into the matching tensors of `dst` (same keys, same shapes).
void copy_state(const std::vector<std::pair<std::string, torch::Tensor>>& src, model::YOLO& dst) {
  torch::NoGradGuard ng;
  auto dst_state = model::state_dict(*dst);
  std::unordered_map<std::string, torch::Tensor> by_name(dst_state.begin(), dst_state.end());
  for (const auto& [k, v] : src) {
    auto it = by_name.find(k);
    if (it != by_name.end()) it->second.copy_(v);
  }
}

/// freeze=[i, ...]: parameters of layers model.<i>. get no gradient (Ultralytics also always freezes the DFL conv).
void freeze_layers(model::YOLOImpl& net, const std::vector<int64_t>& freeze) {
  if (freeze.empty()) return;
  const int64_t nl = static_cast<int64_t>(net.layers().size());
  std::vector<int64_t> missing;
  for (int64_t i : freeze)
    if (i < 0 || i >= nl) missing.push_back(i);
  if (!missing.empty())
    spdlog::warn("freeze: the model has {} layers (0-{}); {} of the requested indices do not exist (e.g. {})", nl,
                 nl - 1, missing.size(), missing.front());
  int64_t n = 0;
  for (auto& p : net.named_parameters()) {
    for (int64_t i : freeze) {
      if (p.key().rfind("model." + std::to_string(i) + ".", 0) == 0) {
        p.value().set_requires_grad(false);
        ++n;
      }
    }
  }
  spdlog::info("freeze: {} parameter tensors of layers {} frozen", n, fmt::join(freeze, ","));
  bool any_trainable = false;
  for (const auto& p : net.parameters()) any_trainable = any_trainable || p.requires_grad();
  if (!any_trainable)
    throw std::runtime_error(fmt::format("freeze: layers {} froze the entire model (it has {} layers, 0-{}): nothing "
                                         "is left to train; freeze fewer layers (freeze={} keeps the Detect head trainable)",
                                         fmt::join(freeze, ","), nl, nl - 1, nl - 1));
}

/// Mixed-precision policy of a run (docs/recipe.md "AMP").
struct AmpPolicy {
  bool autocast = false;
  c10::ScalarType dtype = torch::kFloat;
  bool scaler = false;  // float16 needs loss scaling; bfloat16 has float32's exponent range and does not
  bool warn = false;    // amp=true could not be honoured
  std::string line;     // the one log line saying what was chosen and why
};

/// amp=false → float32. CUDA → float16 autocast + GradScaler when check_amp(float16) passes, else float32.
/// CPU → bfloat16 autocast (no scaler) when the CPU has bf16 instructions and check_amp(bfloat16) passes, else
/// float32. (On this project's avx512_bf16 dev CPU a yolo11n training step is ~20% faster in bfloat16: docs/recipe.md.)
AmpPolicy choose_amp(bool amp, const torch::Device& device, model::YOLOImpl& net) {
  AmpPolicy p;
  if (!amp) {
    p.line = "amp=false: float32 training";
    return p;
  }
  if (device.is_cuda()) {
    const AmpCheck chk = check_amp(net, device, torch::kHalf);
    if (!chk.ok) {
      p.warn = true;
      p.line = "amp=true, but float16 autocast disagrees with float32 on this device: training in float32 (amp off). " +
               chk.message;
      return p;
    }
    p.autocast = p.scaler = true;
    p.dtype = torch::kHalf;
    p.line = "amp=true: CUDA float16 autocast + GradScaler (dynamic loss scaling from 2^16). " + chk.message;
    return p;
  }
  if (!cpu_supports_bf16()) {
    p.warn = true;
    p.line = "amp=true: this CPU has no bfloat16 instructions (no avx512_bf16/amx_bf16/bf16 in /proc/cpuinfo): "
             "training in float32 (amp off)";
    return p;
  }
  const AmpCheck chk = check_amp(net, device, torch::kBFloat16);
  if (!chk.ok) {
    p.warn = true;
    p.line = "amp=true, but bfloat16 autocast disagrees with float32 on this CPU: training in float32 (amp off). " +
             chk.message;
    return p;
  }
  p.autocast = true;
  p.dtype = torch::kBFloat16;
  p.line = "amp=true: CPU bfloat16 autocast (the CPU has bf16 instructions), no loss scaling (bfloat16 has "
           "float32's range); amp=false trains in float32. " + chk.message;
  return p;
}

}  // namespace

config::TrainConfig prepare_resume(const config::TrainConfig& cfg, const std::vector<std::string>& overrides) {
  if (cfg.resume == "false") return cfg;
  fs::path run;
  if (cfg.resume == "true") {
    const fs::path project = cfg.project.empty() ? fs::path("runs/train") : fs::path(cfg.project);
    fs::file_time_type newest{};
    if (fs::is_directory(project)) {
      for (const auto& e : fs::directory_iterator(project)) {
        const fs::path last = e.path() / "weights" / "last.safetensors";
        if (fs::exists(last) && (run.empty() || fs::last_write_time(last) > newest)) {
          newest = fs::last_write_time(last);
          run = e.path();
        }
      }
    }
    if (run.empty())
      throw std::runtime_error("resume=true: no run with weights/last.safetensors under " + project.string() +
                               "; pass resume=runs/train/NAME");
  } else {
    run = cfg.resume;
    if (fs::is_regular_file(run)) run = run.parent_path().parent_path();  // .../NAME/weights/last.safetensors
    if (!fs::exists(run / "args.yaml"))
      throw std::runtime_error("resume=" + cfg.resume + ": " + (run / "args.yaml").string() +
                               " not found; pass a run directory (runs/train/NAME) or its weights/last.safetensors");
  }
  std::vector<std::string> rest;
  for (const auto& o : overrides)
    if (o.rfind("resume=", 0) != 0) rest.push_back(o);
  auto resumed = config::TrainConfig::load_for_resume((run / "args.yaml").string(), rest);
  resumed.resume = run.string();
  // Values from --cfg cannot change a resumed run either: say which ones are ignored (keys the request sets
  // away from the defaults and away from the run's value).
  const auto defaults = config::TrainConfig::load("", {});
  const auto& allowed = config::resume_overridable_keys();
  std::vector<std::string> ignored;
  for (const auto& k : config::config_keys()) {
    if (k == "name" || k == "project" || std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
    const std::string want = cfg.get(k);
    if (want != defaults.get(k) && want != resumed.get(k))
      ignored.push_back(fmt::format("{}={} (run has {})", k, want, resumed.get(k)));
  }
  if (!ignored.empty())
    spdlog::warn("resume: the run's saved args are kept; these requested values are ignored: {}", fmt::join(ignored, ", "));
  return resumed;
}

Trainer::Trainer(config::TrainConfig cfg, TrainerHooks hooks) : cfg_(std::move(cfg)), hooks_(std::move(hooks)) {}

TrainSummary Trainer::train() {
  const auto t_run = Clock::now();
  auto& cfg = cfg_;

  // ---- DDP env, run dir, logging, threads, seed, device ------------------------------------------------------
  const dist::Env denv = dist::from_env();  // world 1 unless launched torchrun-style (docs/dist.md)
  const bool main_rank = denv.is_main();    // rank 0 writes the run dir, logs, checkpoints and validates
  if (denv.distributed() && (cfg.batch < denv.world || cfg.batch % denv.world != 0))  // before any rank writes
    throw std::runtime_error(fmt::format("batch={} is the global batch and must be a multiple of WORLD_SIZE={} (each "
                                         "rank trains on batch / WORLD_SIZE); pass batch={}", cfg.batch, denv.world,
                                         std::max<int64_t>(1, cfg.batch / denv.world) * denv.world));
  const bool resuming = cfg.resume != "false";
  std::string run_dir;  // empty on ranks > 0: they write nothing
  if (main_rank) {
    run_dir = resuming ? cfg.resume : config::make_run_dir(cfg.project, cfg.name, cfg.exist_ok);  // resume: the run's dir
    fs::create_directories(run_dir + "/weights");
    setup_logging(run_dir, resuming);
    remove_stale_checkpoint_temps(run_dir + "/weights");  // temp files of saves a kill interrupted
    cfg.save_args(run_dir);
  } else {
    setup_rank_logging(denv.rank);
  }
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = cfg.threads > 0 ? static_cast<int>(cfg.threads) : cores;
  torch::set_num_threads(threads);
  const std::string fp_env_line = flush_denormals();  // before the loader threads start: they inherit it (issue 15)
  torch::manual_seed(cfg.seed);
  torch::Device device = select_device(cfg.device);
  if (denv.distributed() && device.is_cuda())  // one GPU per process, as torchrun's LOCAL_RANK
    device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(denv.local_rank));
  const bool cuda = device.is_cuda();
  dist::GroupOptions gopt;
  gopt.cuda = cuda;
  dist::ProcessGroup pg(denv, gopt);  // world 1: inactive, every collective below is a no-op
  spdlog::info("yolo11-cpp {} | LibTorch {} | device {} | intra-op threads {} of {} cores | workers {}",
               build::kVersion, build::kTorchVersion, device.str(), threads, cores, cfg.workers);
  if (!cuda) spdlog::info("{}", fp_env_line);
  if (pg.active())
    spdlog::info("DDP: rank 0 of {} ({} via {}:{}), global batch {} = {} per rank; rank 0 alone writes {}",
                 pg.world(), pg.backend(), denv.master_addr, denv.master_port, cfg.batch, cfg.batch / pg.world(),
                 run_dir);

  // ---- data -------------------------------------------------------------------------------------------------
  const auto info = data::load_dataset_yaml(cfg.data, cfg.datasets_dir);
  const int64_t nc = cfg.single_cls ? 1 : info.nc;
  const std::vector<std::string> names = cfg.single_cls ? std::vector<std::string>{"item"} : info.names;
  auto train_loader = make_train_loader(info, cfg, /*pin_memory=*/cuda, denv.rank, denv.world);
  std::shared_ptr<data::Loader> val_loader;  // rank 0 validates alone (as Ultralytics)
  if (main_rank) val_loader = make_val_loader(info, info.val, cfg, cfg.batch * 2, "val");
  if (cfg.plots && main_rank) data::plot_labels(train_loader->dataset(), run_dir + "/labels.jpg");

  // ---- model, loss ------------------------------------------------------------------------------------------
  model::ModelOptions mo;
  mo.yaml = model::resolve_model_yaml(cfg.model);
  mo.scale = cfg.model_scale;
  mo.nc = nc;
  model::YOLO net(mo);
  if (cfg.pretrained != "true" && cfg.pretrained != "false" && !cfg.pretrained.empty())
    spdlog::info("{}", model::load_weights(*net, cfg.pretrained).str());
  else if (cfg.pretrained == "true")
    spdlog::info("pretrained=true: no weights file given (pretrained=path.safetensors loads one); training from scratch");
  spdlog::info("{}", net->summary(cfg.imgsz));
  net->to(device);
  // channels_last (NHWC) activations: oneDNN/cuDNN's preferred layout; yolo11n b16 256px fwd+bwd on 2 CPU cores
  // 0.51 s vs 0.63 s NCHW (docs/benchmarks.md). Same numbers up to float rounding.
  model::to_channels_last(*net);
  pg.broadcast_parameters(*net, 0);  // DDP: every rank starts from rank 0's parameters and buffers
  loss::LossGains gains{cfg.box, cfg.cls, cfg.dfl};
  loss::DetectionLoss criterion(nc, net->strides(), net->reg_max(), gains);

  // ---- optimizer, schedule, EMA -----------------------------------------------------------------------------
  const int64_t nb = train_loader->num_batches();
  const int64_t n_images = static_cast<int64_t>(train_loader->dataset().size());
  freeze_layers(*net, cfg.freeze);
  const ParamGroups groups = build_param_groups(*net);
  const int64_t accumulate0 = initial_accumulate(cfg.nbs, cfg.batch);
  const double wd = scaled_weight_decay(cfg.weight_decay, cfg.batch, accumulate0, cfg.nbs);
  const int64_t iterations = auto_rule_iterations(n_images, cfg.batch, cfg.nbs, cfg.epochs);
  OptimizerChoice opt = build_optimizer(groups, cfg, nc, iterations, wd);
  Scheduler sched(*opt.opt, cfg, opt, nb);
  ModelEMA ema(model::state_dict(*net));

  // ---- resume: weights, EMA, optimizer, RNG, results so far ------------------------------------------------
  int64_t start_epoch = 0;
  double best_fitness = -1;
  ResultsCsv results(run_dir + "/results.csv");  // appended (written) by rank 0 only
  NamedTensors resumed_scaler;
  if (resuming) {
    auto ck = load_checkpoint(cfg.resume + "/weights", "last");  // every rank reads the run's checkpoint
    if (!ck)
      throw std::runtime_error("resume: no usable checkpoint in " + cfg.resume +
                               "/weights (last.* and last.prev.* missing or damaged); start a new run instead");
    model::transfer_weights(*net, ck->model, ck->path);
    ema.load(ck->ema, ck->ema_updates);
    if (!ck->optimizer.empty()) load_optimizer_state(*opt.opt, ck->optimizer);
    if (ck->rng_cpu.defined()) restore_rng_state(ck->rng_cpu);
    if (cuda && ck->rng_cuda.defined()) compat::set_cuda_rng_state(ck->rng_cuda, device.index());
    resumed_scaler = ck->scaler;
    start_epoch = ck->epoch + 1;
    best_fitness = ck->best_fitness;
    if (main_rank) {
      results = ResultsCsv::parse(ck->results_csv, run_dir + "/results.csv");
      results.truncate(start_epoch);
    }
    if (auto it = ck->extra.find("last_opt_step"); it != ck->extra.end()) sched.set_last_step(std::stoll(it->second));
    restore_gradients(*net, ck->grads);  // accumulated past the epoch's last optimizer step
    spdlog::info("Resuming training from {} (epoch {} done, best fitness {:.5f}, {} EMA updates) to {} epochs",
                 ck->path, start_epoch, best_fitness, ck->ema_updates, cfg.epochs);
    if (start_epoch >= cfg.epochs)
      throw std::runtime_error(fmt::format("resume: {} already trained {} of epochs={}; pass epochs=N with N > {} to "
                                           "train longer", run_dir, start_epoch, cfg.epochs, start_epoch));
  }

  // ---- mixed precision: autocast dtype, loss scaler (after resume: the check sees the trained weights) ---------
  const AmpPolicy amp = choose_amp(cfg.amp, device, *net);
  if (amp.warn) spdlog::warn("{}", amp.line);
  else spdlog::info("{}", amp.line);
  GradScalerOptions gso;
  gso.enabled = amp.scaler;
  GradScaler scaler(gso);
  if (scaler.enabled() && !resumed_scaler.empty()) {
    scaler.load(resumed_scaler);
    spdlog::info("resume: loss scale {} restored (growth tracker {})", scaler.get_scale(), scaler.growth_tracker());
  }

  // ---- instrumentation --------------------------------------------------------------------------------------
  instrument::ProfilerOptions po;
  po.level = instrument::parse_level(cfg.instrument);
  po.log_every = cfg.log_every;
  if (!cfg.trace_steps.empty()) po.trace_steps = std::make_pair(cfg.trace_steps.start, cfg.trace_steps.stop);
  if (!cfg.trace_steps.empty() && po.level != instrument::Level::full)
    spdlog::warn("trace_steps={}:{} ignored: trace.json is written with instrument=full (now instrument={})",
                 cfg.trace_steps.start, cfg.trace_steps.stop, cfg.instrument);
  if (!cfg.profile_steps.empty()) po.profile_steps = std::make_pair(cfg.profile_steps.start, cfg.profile_steps.stop);
  po.sync = cfg.sync;
  po.cuda = cuda;
  po.run_dir = run_dir;
  po.workers = static_cast<int>(cfg.workers);
  po.batch = cfg.batch;
  po.imgsz = cfg.imgsz;
  po.cache = cfg.cache;
  po.amp = amp.autocast;
  po.cores = cores;
  po.device = device.str();
  po.log_lines = false;  // the loop logs take_window_line() itself, after its progress line
  instrument::Profiler prof(po);

  std::optional<Validator> validator;
  if (main_rank)
    validator.emplace(val_loader, names,
                      ValidatorOptions{cfg.conf.value_or(0.001), cfg.iou, cfg.max_det, cfg.plots, run_dir, cfg.verbose});
  const bool tty = ::isatty(fileno(stdout)) != 0;
  int64_t patience_left = cfg.patience;
  int64_t global_step = start_epoch * nb;
  int nan_streak = 0;
  bool mosaic_closed = false;
  TrainSummary summary;
  summary.run_dir = run_dir;
  summary.precision = amp.autocast ? (amp.dtype == torch::kHalf ? "float16" : "bfloat16") : "float32";
  spdlog::info("Image sizes {} train, {} val\nLogging results to {}\nStarting training for {} epochs...", cfg.imgsz,
               cfg.imgsz, run_dir, cfg.epochs);

  for (int64_t epoch = start_epoch; epoch < cfg.epochs; ++epoch) {
    const auto t_epoch = Clock::now();
    prof.begin_epoch(epoch);
    sched.on_epoch_start(epoch);
    // Ultralytics closes at epoch == epochs - close_mosaic, so a run shorter than close_mosaic keeps mosaic
    // throughout; `>=` closes it again after a resume past that epoch.
    if (cfg.close_mosaic > 0 && cfg.epochs >= cfg.close_mosaic && epoch >= cfg.epochs - cfg.close_mosaic &&
        !mosaic_closed) {
      spdlog::info("Closing dataloader mosaic");
      train_loader->close_mosaic();
      mosaic_closed = true;
    }
    train_loader->start_epoch(epoch);
    net->train();
    std::vector<double> tloss{0, 0, 0};
    auto loss_sum = torch::zeros({3}, torch::TensorOptions().dtype(torch::kDouble).device(device));
    auto bad_since_step = torch::zeros({}, torch::TensorOptions().dtype(torch::kBool).device(device));
    int64_t seen_steps = 0;
    int64_t amp_skipped = 0;  // GradScaler skips this epoch (inf/NaN gradients; not counted as non-finite losses)
    std::string line;
    bool line_logged = false;  // the current progress line is already in train.log
    auto last_print = Clock::now();
    spdlog::info("\n{}", progress_header());

    for (int64_t i = 0; i < nb; ++i, ++global_step) {
      if (!pg.active() && stop_signal() != 0) break;  // SIGINT/SIGTERM: the step before this one was the last
      const int64_t ni = i + nb * epoch;
      prof.begin_step(global_step);
      std::optional<data::Batch> batch;
      {
        auto s = prof.stage("dataloader");
        batch = train_loader->next();
      }
      prof.set_queue_depth(train_loader->queue_depth());
      if (!batch) {
        prof.end_step(0);
        break;
      }
      torch::Tensor imgs, bidx, bcls, bxywh;
      {
        auto s = prof.stage("h2d");
        imgs = batch->images.to(device, /*non_blocking=*/true)
                   .to(torch::kFloat)
                   .div_(255.0)
                   .contiguous(torch::MemoryFormat::ChannelsLast);
        if (cfg.multi_scale > 0) {  // one random size per batch, as Ultralytics' preprocess_batch (boxes are normalized)
          data::Rng rng = data::Rng::for_sample(static_cast<uint64_t>(cfg.seed) ^ 0x6D756C7469ull, epoch, i);
          const int64_t gs = *std::max_element(net->strides().begin(), net->strides().end());
          imgs = data::multi_scale(imgs, cfg.imgsz, gs, rng, cfg.multi_scale).contiguous(torch::MemoryFormat::ChannelsLast);
        }
        bidx = batch->batch_idx;  // targets stay on the host: the loss groups them there without a device sync
        bcls = batch->cls;
        bxywh = batch->bboxes;
      }
      sched.on_iteration(ni, epoch);
      std::vector<torch::Tensor> feats;
      {
        auto s = prof.stage("forward");
        compat::AutocastGuard ac(device.type(), amp.autocast, amp.dtype);
        feats = net->forward_feats(imgs);
      }
      loss::DetectionLoss::Output out;
      {
        auto s = prof.stage("loss");
        out = criterion(feats, bidx, bcls, bxywh);
        if (hooks_.on_loss) out.total = hooks_.on_loss(epoch, i, out.total);
        // Non-finite losses are flagged on the device and checked at the next optimizer step, where the
        // gradient clipping synchronizes anyway: no per-step host sync hides data stalls on a GPU.
        bad_since_step.logical_or_(torch::isfinite(out.total).logical_not());
      }
      {
        auto s = prof.stage("backward");
        scaler.scale(out.total).backward();  // float16: loss × scale keeps small gradients representable
      }
      if (sched.should_step(ni)) {
        bool stepped = false;
        if (pg.active()) {
          // DDP, once per optimizer step (after accumulation): skip together if any rank saw a non-finite loss,
          // else SUM the accumulated gradients. Each rank's loss is its batch mean × its batch b (Ultralytics'
          // loss.sum() × batch), so Σ_ranks b·∇mean_r = B·mean_r ∇mean_r: the update of one process on the
          // global batch B = b·world (what Ultralytics gets from loss × world + DDP's mean).
          auto s = prof.stage("allreduce");
          auto bad = bad_since_step.to(torch::kFloat);
          pg.all_reduce_max_(bad);
          bad_since_step.copy_(bad > 0);
          if (bad.item<float>() == 0) pg.all_reduce_gradients(net->parameters(), /*average=*/false);
          // BatchNorm running statistics follow each rank's own batches: rank 0's win (DDP's broadcast_buffers,
          // here once per optimizer step), so the EMA, which averages buffers too, stays identical on every rank.
          pg.broadcast_buffers(*net, 0);
        }
        {
          auto s = prof.stage("optimizer");
          if (bad_since_step.item<bool>()) {
            ++nan_streak;
            ++summary.nonfinite_skipped_steps;
            spdlog::warn("step {}: non-finite loss since the last optimizer step: update skipped ({} in a row)",
                         global_step, nan_streak);
            opt.opt->zero_grad();
            bad_since_step.zero_();
          } else {
            nan_streak = 0;
            const auto params = net->parameters();
            scaler.unscale_(params);  // clip the true gradients
            torch::nn::utils::clip_grad_norm_(params, 10.0);
            const double scale_used = scaler.get_scale();
            stepped = scaler.step(*opt.opt);  // skipped when the unscaled gradients hold inf/NaN
            scaler.update();
            if (!stepped) {
              ++amp_skipped;
              ++summary.amp_skipped_steps;
              spdlog::debug("step {}: inf/NaN gradients at loss scale {}: optimizer step skipped, scale now {}",
                            global_step, scale_used, scaler.get_scale());
            }
            opt.opt->zero_grad();
          }
        }
        if (stepped) {
          auto s = prof.stage("ema");
          ema.update(model::state_dict(*net));
        }
        if (nan_streak >= 5)
          throw std::runtime_error(fmt::format("{} optimizer steps in a row saw non-finite losses (epoch {}): training "
                                               "stopped; the last good checkpoint is in {}/weights. Lower lr0 or "
                                               "check the labels.", nan_streak, epoch + 1, run_dir));
      }
      loss_sum.add_(out.items.to(torch::kDouble));
      ++seen_steps;
      prof.end_step(batch->size());
      auto window = prof.take_window_line();
      const bool last = i + 1 == nb;
      if (window || last || (tty && seconds_since(last_print) > 0.25)) {  // the only per-step host sync
        last_print = Clock::now();
        const auto mean = (loss_sum / static_cast<double>(seen_steps)).to(torch::kCPU);
        for (int k = 0; k < 3; ++k) tloss[k] = mean[k].item<double>();
        line = progress_line(epoch, cfg.epochs, memory_string(cuda), tloss, batch->cls.size(0), imgs.size(3), i + 1,
                             nb, seconds_since(t_epoch));
        if (tty) {
          std::fprintf(stdout, "\r%s", line.c_str());
          std::fflush(stdout);
        }
      }
      line_logged = static_cast<bool>(window);
      if (window) {
        if (tty) {
          std::fprintf(stdout, "\n");
          spdlog::get("yolo11_file")->info("{}", line);
        } else {
          spdlog::info("{}", line);
        }
        spdlog::info("{}", *window);
      }
      // As Ultralytics' plot_idx: the first three steps of the run and of the close_mosaic phase, named by step.
      const int64_t close_ni = cfg.close_mosaic > 0 && cfg.epochs >= cfg.close_mosaic
                                   ? (cfg.epochs - cfg.close_mosaic) * nb : -10;
      if (cfg.plots && main_rank && (ni < 3 || (ni >= close_ni && ni < close_ni + 3)))
        data::plot_images(*batch, names, fmt::format("{}/train_batch{}.jpg", run_dir, ni));
    }
    if (tty) std::fprintf(stdout, "\n");
    if (!line.empty() && !line_logged) {  // the epoch's final progress line, also in train.log
      if (tty) spdlog::get("yolo11_file")->info("{}", line);
      else spdlog::info("{}", line);
    }
    // DDP: the epoch's train losses (results.csv) are the mean over ranks; the progress lines above are rank 0's.
    // Buffers once more: batches after the epoch's last optimizer step updated each rank's BN statistics alone.
    if (pg.active()) {
      const auto mean = pg.all_reduce_mean(loss_sum / static_cast<double>(std::max<int64_t>(seen_steps, 1))).to(torch::kCPU);
      for (int k = 0; k < 3; ++k) tloss[k] = mean[k].item<double>();
      pg.broadcast_buffers(*net, 0);
    }
    const double t_train = seconds_since(t_epoch);
    if (!pg.active() && stop_signal() != 0 && seen_steps < nb) {  // abandon the partial epoch: no val, row or save
      summary.interrupted = stop_signal();
      summary.interrupted_epoch = epoch + 1;
      summary.interrupted_step = global_step;
      spdlog::warn("{}: training stopped in epoch {} after {} of {} steps (not saved); {}", signal_name(stop_signal()),
                   epoch + 1, seen_steps, nb, epoch > start_epoch || resuming
                       ? fmt::format("resume={} continues after epoch {}", run_dir, epoch)
                       : std::string("no epoch was completed, nothing to resume"));
      break;
    }

    // ---- validation on the EMA weights ----------------------------------------------------------------------
    ValResult vr;
    double t_val = 0;
    const bool final_epoch = epoch + 1 == cfg.epochs;
    if ((cfg.val || final_epoch) && main_rank) {
      auto s = prof.stage("val");
      const auto tv = Clock::now();
      // A fresh inference copy of the EMA weights: BN folded into the convs, channels_last.
      model::YOLO val_net(mo);
      copy_state(ema.state(), val_net);
      val_net->fuse();
      model::to_channels_last(*val_net);
      val_net->to(device);
      vr = validator->run(val_net, &criterion, device);
      t_val = seconds_since(tv);
    }
    const double fitness = vr.metrics.fitness;
    {
      auto s = prof.stage("log");
      spdlog::info("{}", prof.end_epoch());
      EpochResult row;
      row.epoch = epoch + 1;
      row.time = seconds_since(t_run);
      row.box_loss = tloss[0];
      row.cls_loss = tloss[1];
      row.dfl_loss = tloss[2];
      row.precision = vr.metrics.precision;
      row.recall = vr.metrics.recall;
      row.map50 = vr.metrics.map50;
      row.map50_95 = vr.metrics.map50_95;
      row.val_box_loss = vr.loss_items[0];
      row.val_cls_loss = vr.loss_items[1];
      row.val_dfl_loss = vr.loss_items[2];
      const auto lrs = sched.lrs();
      row.lr_pg0 = lrs.at(0);
      row.lr_pg1 = lrs.at(1);
      row.lr_pg2 = lrs.at(2);
      if (main_rank) results.append(row);
      if (cfg.plots && main_rank) plot_results(run_dir + "/results.csv", run_dir + "/results.png");
      spdlog::info("epoch {}/{}: train {:.1f}s, val {:.1f}s, mAP50 {:.4f}, mAP50-95 {:.4f}{}", epoch + 1, cfg.epochs,
                   t_train, t_val, vr.metrics.map50, vr.metrics.map50_95,
                   scaler.enabled() ? fmt::format(", AMP: {} steps skipped for inf/NaN gradients, loss scale {}",
                                                  amp_skipped, scaler.get_scale())
                                    : std::string());
    }
    {
      auto s = prof.stage("checkpoint");
      const bool is_best = fitness > best_fitness;
      if (is_best) best_fitness = fitness;
      if (cfg.save && main_rank) {
        Checkpoint ck;
        ck.epoch = epoch;
        ck.best_fitness = best_fitness;
        ck.ema = ema.state();
        ck.model = model::state_dict(*net);
        ck.ema_updates = ema.updates();
        ck.optimizer = save_optimizer_state(*opt.opt);
        ck.args_yaml = cfg.to_yaml();
        ck.results_csv = results.text();
        ck.rng_cpu = capture_rng_state();
        if (cuda) ck.rng_cuda = compat::cuda_rng_state(device.index());
        ck.scaler = scaler.state();
        ck.extra["last_opt_step"] = std::to_string(sched.last_step());
        if (sched.last_step() < (epoch + 1) * nb - 1) ck.grads = accumulated_gradients(*net);  // mid-accumulation
        if (!save_checkpoint(run_dir + "/weights", ck, is_best, save_period_due(epoch, cfg.save_period)))
          spdlog::warn("epoch {}: weights hold NaN/Inf, checkpoint not written; {}/weights keeps the last good one",
                       epoch + 1, run_dir);
      }
      patience_left = is_best ? cfg.patience : patience_left - 1;
    }
    summary.epochs_done = epoch + 1;
    summary.final_map50 = vr.metrics.map50;
    summary.final_map50_95 = vr.metrics.map50_95;
    bool stop = false;
    if (cfg.patience > 0 && patience_left <= 0) {
      spdlog::info("Stopping training early: no improvement in the last {} epochs (patience={})", cfg.patience,
                   cfg.patience);
      stop = true;
    }
    if (!stop && stop_signal() != 0 && epoch + 1 < cfg.epochs) {  // DDP: rank 0's decision is broadcast below
      summary.interrupted = stop_signal();
      summary.interrupted_epoch = epoch + 2;
      summary.interrupted_step = global_step;
      spdlog::warn("{}: training stopped after epoch {} (resume={} continues)", signal_name(stop_signal()), epoch + 1,
                   run_dir);
      stop = true;
    }
    if (!stop && cfg.time && seconds_since(t_run) > *cfg.time * 3600.0) {
      spdlog::info("Stopping training: time limit of {} h reached", *cfg.time);
      stop = true;
    }
    if (pg.active()) {  // DDP: ranks > 0 wait here while rank 0 validates and saves; rank 0's stop decision rules
      auto flag = torch::full({1}, stop ? 1.0f : 0.0f, torch::TensorOptions().device(device));
      pg.broadcast({flag}, 0);
      stop = flag.item<float>() > 0;
    }
    if (stop) break;
  }
  if (pg.active()) {  // DDP: prove the replicas stayed in lockstep (bitwise-equal weights on every rank)
    const uint64_t h = dist::weights_hash(*net);
    const int64_t hi = static_cast<int64_t>(h >> 32), lo = static_cast<int64_t>(h & 0xffffffffull);
    auto t = torch::tensor({hi, lo, -hi, -lo}, torch::TensorOptions().dtype(torch::kLong).device(device));
    pg.all_reduce_max_(t);
    const auto v = t.to(torch::kCPU);
    summary.weights_identical = v[0].item<int64_t>() == -v[2].item<int64_t>() &&
                                v[1].item<int64_t>() == -v[3].item<int64_t>();
    summary.weights_hash = fmt::format("{:016x}", h);
    if (summary.weights_identical)
      spdlog::info("DDP: final weights identical on all {} ranks (hash {})", pg.world(), summary.weights_hash);
    else
      spdlog::error("DDP: final weights differ between ranks (this rank {} hash {}): the replicas went out of sync",
                    pg.rank(), summary.weights_hash);
  }
  prof.finish();
  if (main_rank)
    mark_summary_interrupted(run_dir, summary.interrupted, summary.interrupted_epoch, summary.interrupted_step,
                             summary.epochs_done);
  summary.best_fitness = best_fitness;
  summary.seconds = seconds_since(t_run);
  spdlog::info("{} epochs completed in {:.3f} hours.", summary.epochs_done, summary.seconds / 3600.0);
  return summary;
}

}  // namespace yolo11::engine
