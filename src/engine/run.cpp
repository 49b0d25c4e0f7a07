// engine::build_run and engine::resume (include/yolo11/engine/detail/run.h): Ultralytics BaseTrainer._setup_train and
// resume_training, in C++. The order of construction is the order of random draws: keep it.
// DDP (WORLD_SIZE > 1, docs/dist.md): every rank builds the same run on its shard with batch / world; rank 0's
// initial weights are broadcast; rank 0 alone writes the run dir and validates.
#include "yolo11/engine/detail/run.h"

#include <sched.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <thread>

#include "yolo11/build_info.h"
#include "yolo11/core/compat.h"
#include "yolo11/engine/autobatch.h"
#include "yolo11/engine/calibration.h"
#include "yolo11/plot/data_plots.h"
#include "yolo11/engine/checkpoint.h"
#include "yolo11/engine/data_setup.h"
#include "yolo11/dist/sync_bn.h"
#include "yolo11/engine/fp_env.h"
#include "yolo11/engine/inference.h"
#include "yolo11/instrument/sampler.h"
#include "yolo11/io/pt_checkpoint.h"
#include "yolo11/io/run_dir.h"
#include "yolo11/model/weights.h"

namespace yolo11::engine {
namespace fs = std::filesystem;

TrainContext Run::context(Event e) {
  TrainContext c;
  c.event = e;
  c.cfg = &cfg;
  c.run = this;
  c.model = net ? net.get() : nullptr;
  c.ema = ema.get();
  c.optimizer = opt.opt.get();
  c.profiler = prof.get();
  c.train_loader = train_loader.get();
  c.val_loader = val_loader.get();
  c.best_fitness = best_fitness;
  c.run_dir = run_dir;
  c.rank = denv.rank;
  c.world = denv.world;
  c.main_rank = main_rank;
  c.epoch = epoch;
  c.epochs = cfg.epochs;
  c.num_batches = nb;
  c.global_step = global_step;
  c.tloss = ep.tloss;
  if (sched) c.lrs = sched->lrs();
  return c;
}

void Run::fire(Event e, const std::function<void(TrainContext&)>& fill) {
  if (callbacks == nullptr) return;
  TrainContext c = context(e);
  if (fill) fill(c);
  callbacks->run(e, c);
  if (c.stop && !stop) {
    spdlog::info("Stopping training after epoch {}: a callback at {} asked to stop", epoch + 1, event_name(e));
    stop = true;
  }
}

namespace {

/// Run dir, logging, threads, seed, device and process group.
void setup_environment(Run& r, const Callbacks& callbacks) {
  auto& cfg = r.cfg;
  r.t_run = Clock::now();
  r.denv = dist::from_env();  // world 1 unless launched torchrun-style (docs/dist.md)
  r.main_rank = r.denv.is_main();
  if (r.denv.distributed() && (cfg.batch < r.denv.world || cfg.batch % r.denv.world != 0))  // before any rank writes
    throw std::runtime_error(fmt::format("batch={} is the global batch and must be a multiple of WORLD_SIZE={} (each "
                                         "rank trains on batch / WORLD_SIZE); pass batch={}", cfg.batch, r.denv.world,
                                         std::max<int64_t>(1, cfg.batch / r.denv.world) * r.denv.world));
  r.resuming = cfg.resume != "false";
  if (r.main_rank) {
    r.run_dir = r.resuming ? cfg.resume : io::make_run_dir(cfg.project, cfg.name, cfg.exist_ok);  // resume: the run's
    fs::create_directories(r.run_dir + "/weights");
    io::setup_run_logging(r.run_dir, r.resuming);
    remove_stale_checkpoint_temps(r.run_dir + "/weights");  // temp files of saves a kill interrupted
    if (!r.resuming) fs::remove(r.run_dir + "/advice_verified.json");  // exist_ok: a verdict on another run's advice
    cfg.save_args(r.run_dir);
  } else {
    io::setup_rank_logging(r.denv.rank);
  }
  {
    TrainContext c;
    c.event = Event::on_pretrain_routine_start;
    c.cfg = &cfg;
    c.run_dir = r.run_dir;
    c.rank = r.denv.rank;
    c.world = r.denv.world;
    c.main_rank = r.main_rank;
    c.epochs = cfg.epochs;
    callbacks.run(Event::on_pretrain_routine_start, c);
  }
  r.cpus = core::usable_cores();  // affinity and cgroup CPU quota (core/cpus.h)
  r.cores = r.cpus.usable;
  r.threads = cfg.threads > 0 ? static_cast<int>(cfg.threads) : r.cores;
  if (r.cores < r.cpus.online)
    spdlog::warn("{}; intra-op threads {}{}", r.cpus.describe(), r.threads,
                 r.threads > r.cores ? ": more threads than usable cores, they time-share (set threads<=" +
                                           std::to_string(r.cores) + ")" : "");
  else if (r.threads > r.cores)
    spdlog::warn("threads={} exceeds the {} cores: the intra-op threads time-share (oversubscription)", r.threads,
                 r.cores);
  torch::set_num_threads(r.threads);
  const std::string fp_env_line = flush_denormals();  // before the loader threads start: they inherit it (issue 15)
  const std::string malloc_line = tune_malloc();      // before the model, loader and their big buffers
  torch::manual_seed(cfg.seed);
  const std::string determinism_line = compat::apply_determinism(cfg.deterministic);  // Ultralytics' init_seeds
  // The one device of this process (core/device.h), current before the model, the loader or the group touch it.
  r.plan = core::plan_device(cfg.device, r.denv.world, r.denv.local_rank);
  r.device = r.plan.device;
  r.cuda = r.plan.cuda();
  dist::GroupOptions gopt;
  gopt.device = r.device;
  gopt.timeout = std::chrono::seconds(cfg.dist_timeout);
  r.pg = std::make_unique<dist::ProcessGroup>(r.denv, gopt);
  spdlog::info("yolo11-cpp {} | LibTorch {} | device {} | intra-op threads {} of {} cores | workers {}",
               build::kVersion, build::kTorchVersion, r.device.str(), r.threads, r.cores, cfg.workers);
  spdlog::info("device: {}", r.plan.reason);
  spdlog::info("{}", determinism_line);
  if (!r.cuda) spdlog::info("{}", fp_env_line);
  spdlog::info("{}", malloc_line);
  if (r.pg->active())
    spdlog::info("DDP: rank 0 of {} ({} via {}:{}), global batch {} = {} per rank; rank 0 alone writes {}",
                 r.pg->world(), r.pg->backend(), r.denv.master_addr, r.denv.master_port, cfg.batch,
                 cfg.batch / r.pg->world(), r.run_dir);
}

void setup_data(Run& r) {
  auto& cfg = r.cfg;
  r.info = data::load_dataset_yaml(cfg.data, cfg.datasets_dir);
  r.nc = cfg.single_cls ? 1 : r.info.nc;
  r.names = cfg.single_cls ? std::vector<std::string>{"item"} : r.info.names;
  r.train_loader = make_train_loader(r.info, cfg, r.device, r.denv.rank, r.denv.world);
  r.loader_read_bytes = instrument::process_read_bytes();  // the first epoch's disk read rate counts from here
  if (r.main_rank) r.val_loader = make_val_loader(r.info, r.info.val, cfg, cfg.batch * 2, "val");  // rank 0 validates
  if (cfg.plots && r.main_rank) plot::plot_labels(r.train_loader->dataset(), r.run_dir + "/labels.jpg");
  r.nb = r.train_loader->num_batches();
}

void setup_model(Run& r) {
  auto& cfg = r.cfg;
  // Not resolved here: YOLOImpl first reads Ultralytics' model names (yolo11n.yaml = yolo11.yaml at scale n), then
  // finds the file (model::resolve_model_yaml); r.mo keeps what it settled on, for the validation copies.
  r.mo.yaml = cfg.model;
  r.mo.scale = cfg.model_scale;
  r.mo.nc = r.nc;
  std::optional<io::PtCheckpoint> ck;
  if (io::is_pt_path(cfg.model)) {  // Ultralytics model=x.pt: the checkpoint's architecture and weights
    ck = io::read_pt_checkpoint(cfg.model);
    r.mo.yaml = "configs/models/yolo11.yaml";
    if (!ck->scale.empty()) r.mo.scale = ck->scale;
    r.mo.sppf_act = ck->yaml.value("sppf_act", true);
  }
  r.net = model::YOLO(r.mo);
  r.mo = r.net->options();
  if (ck) {
    const auto report = model::transfer_weights(*r.net, ck->state_dict, cfg.model);
    // Another class count leaves the class branch untouched (as the reference); anything else is another graph.
    if (!report.complete() && ck->nc == r.nc)
      throw std::runtime_error(cfg.model + ": not a YOLO11 detection graph this project builds: " + report.str());
    if (report.complete()) spdlog::info("model={}: {}", cfg.model, report.str());
    else spdlog::warn("model={}: {}", cfg.model, report.str());
  }
  if (cfg.pretrained != "true" && cfg.pretrained != "false" && !cfg.pretrained.empty())
    model::load_weights(*r.net, cfg.pretrained);  // logs its transfer report (once)
  else if (cfg.pretrained == "true" && !ck && !r.resuming)
    spdlog::info("pretrained=true: no weights file given (pretrained=path.safetensors loads one); training from scratch");
  spdlog::info("{}", r.net->summary(cfg.imgsz));
  r.net->to(r.device);
  // channels_last (NHWC) activations: oneDNN/cuDNN's preferred layout; yolo11n b16 256px fwd+bwd on 2 CPU cores
  // 0.51 s vs 0.63 s NCHW (docs/benchmarks.md). Same numbers up to float rounding.
  model::to_channels_last(*r.net);
  r.pg->broadcast_parameters(*r.net, 0);  // DDP: every rank starts from rank 0's parameters and buffers
  r.preprocess.emplace(
      Preprocess::Options{.device = r.device,
                          .format = r.train_loader->options().input,
                          .multi_scale_range = cfg.multi_scale,
                          .imgsz = cfg.imgsz,
                          .stride = *std::max_element(r.net->strides().begin(), r.net->strides().end()),
                          .seed = static_cast<uint64_t>(cfg.seed)});
  loss::LossGains gains{cfg.box, cfg.cls, cfg.dfl};
  r.criterion.emplace(r.nc, r.net->strides(), r.net->reg_max(), gains);
}

/// Optimizer (its weight decay and the auto choice depend on the batch) and scheduler.
void setup_optimizer_and_scheduler(Run& r) {
  auto& cfg = r.cfg;
  const int64_t n_images = static_cast<int64_t>(r.train_loader->dataset().size());
  const ParamGroups groups = build_param_groups(*r.net);
  const int64_t accumulate0 = initial_accumulate(cfg.nbs, cfg.batch);
  const double wd = scaled_weight_decay(cfg.weight_decay, cfg.batch, accumulate0, cfg.nbs);
  const int64_t iterations = auto_rule_iterations(n_images, cfg.batch, cfg.nbs, cfg.epochs);
  r.sched.reset();  // refers to the optimizer it replaces
  r.opt = build_optimizer(groups, cfg, r.nc, iterations, wd);
  r.sched = std::make_unique<Scheduler>(*r.opt.opt, cfg, r.opt, r.nb);
  if (const auto w = warmup_warning(SchedulerOptions::from(cfg, r.opt, r.nb)); !w.empty()) spdlog::warn("{}", w);
}

void setup_optimization(Run& r) {
  model::freeze_layers(*r.net, r.cfg.freeze);
  setup_optimizer_and_scheduler(r);
  r.ema = std::make_unique<ModelEMA>(model::state_dict(*r.net));
}

/// Rank 0's validator on the val loader.
void setup_validator(Run& r) {
  const auto& cfg = r.cfg;
  ValidatorOptions vo;
  vo.conf = cfg.conf.value_or(0.001);
  vo.iou = cfg.iou;
  vo.max_det = cfg.max_det;
  vo.plots = cfg.plots;
  vo.save_dir = r.run_dir;
  vo.verbose = cfg.verbose;
  r.validator.emplace(r.val_loader, r.names, vo);
}

/// Mixed precision: autocast dtype, loss scaler (after resume: the check sees the trained weights).
void setup_amp(Run& r, const NamedTensors& resumed_scaler) {
  r.amp = choose_amp(r.cfg.amp, r.device, *r.net);
  if (r.amp.warn) spdlog::warn("{}", r.amp.line);
  else spdlog::info("{}", r.amp.line);
  GradScalerOptions gso;
  gso.enabled = r.amp.scaler;
  r.scaler = GradScaler(gso);
  if (r.scaler.enabled() && !resumed_scaler.empty()) {
    r.scaler.load(resumed_scaler);
    spdlog::info("resume: loss scale {} restored (growth tracker {})", r.scaler.get_scale(), r.scaler.growth_tracker());
  }
}

/// The speed this setting's compute reaches here (engine/calibration.h): the cached figure, or two of this run's steps
/// timed with the loader paused. A single process only (DDP ranks would time each other's contention), not with
/// instrument=off.
void setup_calibration(Run& r, instrument::ProfilerOptions& po) {
  const auto& cfg = r.cfg;
  r.calibrator.reset();
  if (po.level == instrument::Level::off || r.pg->active() || !cfg.calibrate) return;
  const std::string key = compute_calibration_key(r.mo, cfg.batch, cfg.imgsz, r.amp, r.device);
  r.calibration = cached_compute_calibration(key);
  if (r.calibration.cached) {
    spdlog::info("{}", r.calibration.line);
    po.compute_expected_s = r.calibration.step_s;
    return;
  }
  // The last two steps of the instrument warm-up, so that no window, table or sweep point holds a step run with the
  // loader paused; never the run's first step, which creates the kernels' primitives and fills the allocator.
  const int64_t first =
      r.start_epoch * r.nb + std::max<int64_t>(1, cfg.instrument_warmup - InRunCalibration::kTimedSteps);
  r.calibrator = std::make_unique<InRunCalibration>(key, first, r.cores, r.device);
  spdlog::info("compute calibration: none cached for this setting; steps {}-{} are timed with the loader paused ({})",
               first, first + InRunCalibration::kTimedSteps - 1, key);
}

void setup_instrumentation(Run& r) {
  auto& cfg = r.cfg;
  instrument::ProfilerOptions po;
  po.level = cfg.instrument;
  po.log_every = cfg.log_every;
  po.epochs = cfg.epochs;
  po.warmup_steps = cfg.instrument_warmup;
  if (!cfg.trace_steps.empty()) po.trace_steps = std::make_pair(cfg.trace_steps.start, cfg.trace_steps.stop);
  if (!cfg.trace_steps.empty() && po.level != instrument::Level::full)
    spdlog::warn("trace_steps={}:{} ignored: trace.json is written with instrument=full (now instrument={})",
                 cfg.trace_steps.start, cfg.trace_steps.stop, core::to_string(cfg.instrument));
  if (!cfg.profile_steps.empty()) po.profile_steps = std::make_pair(cfg.profile_steps.start, cfg.profile_steps.stop);
  if (!cfg.profile_ops.empty()) po.profile_ops = std::make_pair(cfg.profile_ops.start, cfg.profile_ops.stop);
  po.profile_ops_shapes = cfg.profile_ops_shapes;
  po.profile_ops_memory = cfg.profile_ops_memory;
  po.nvtx_ops = cfg.nvtx_ops;
  po.sync = cfg.sync;
  po.world_size = static_cast<int>(r.denv.world);
  if (r.pg->active()) po.dist_backend = r.pg->backend();
  po.train_flops_per_image = 3.0 * r.net->gflops(cfg.imgsz) * 1e9;  // MFU: forward + backward ≈ 3 × forward
  po.cuda = r.cuda;
  po.cuda_device = r.plan.cuda_index();  // events, sync, NVML and allocator stats of this rank's device
  po.run_dir = r.run_dir;
  po.rank = r.denv.rank;
  po.setting.workers = static_cast<int>(cfg.workers);
  po.setting.batch = cfg.batch;
  po.setting.imgsz = cfg.imgsz;
  po.setting.cache = cfg.cache;
  po.setting.amp = r.amp.autocast;
  po.setting.cores = r.cores;
  po.setting.affinity_cores = r.cpus.affinity;
  if (r.cpus.quota) po.setting.quota_cores = r.cpus.quota->cores, po.setting.quota_file = r.cpus.quota->file;
  po.setting.threads = r.threads;
  po.setting.device = r.device.str();
  setup_calibration(r, po);
  po.log_lines = false;  // the console logger logs take_window_line() itself, after its progress line
  r.prof = std::make_unique<instrument::Profiler>(po);
  if (cfg.workers > 0 && r.train_loader) {  // the workers' CPU time: the what-if's CPU contention (instrument/whatif.h)
    r.prof->set_loader_cpu_clock([loader = std::weak_ptr<data::Loader>(r.train_loader)] {
      const auto l = loader.lock();
      return l ? l->worker_cpu_seconds() : -1.0;
    });
  }
}

/// A fresh start that failed before training (bad device, model, dataset, port in use) removes the run dir it made,
/// so that the next start keeps the name instead of becoming train2, train3: only when the dir holds nothing but
/// args.yaml, train.log, labels.jpg and empty folders.
void remove_unused_run_dir(const Run& r) {
  if (!r.main_rank || r.resuming || r.run_dir.empty()) return;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(r.run_dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!it->is_directory() && name != "args.yaml" && name != "train.log" && name != "labels.jpg") return;
  }
  fs::remove_all(r.run_dir, ec);
  if (!ec) spdlog::info("removed {}: the run stopped before it trained", r.run_dir);
}

}  // namespace

NamedTensors resume(Run& r) {
  auto& cfg = r.cfg;
  NamedTensors resumed_scaler;
  auto ck = load_checkpoint(cfg.resume + "/weights", "last");  // every rank reads the run's checkpoint
  if (!ck)
    throw std::runtime_error("resume: no usable checkpoint in " + cfg.resume +
                             "/weights (last.* and last.prev.* missing or damaged); start a new run instead");
  model::transfer_weights(*r.net, ck->model, ck->path);
  r.ema->load(ck->ema, ck->ema_updates);
  if (!ck->optimizer.empty()) load_optimizer_state(*r.opt.opt, ck->optimizer, r.device);  // map location: this rank
  if (ck->rng_cpu.defined()) restore_rng_state(ck->rng_cpu);
  if (r.cuda && ck->rng_cuda.defined()) compat::set_cuda_rng_state(ck->rng_cuda, r.device.index());
  resumed_scaler = ck->scaler;
  r.start_epoch = ck->epoch + 1;
  r.best_fitness = ck->best_fitness;
  if (r.main_rank) {
    r.results = ResultsCsv::parse(ck->results_csv, r.run_dir + "/results.csv");
    r.results.truncate(r.start_epoch);
    const auto rows = r.results.results();  // results.csv's `time` continues from where the run stopped
    if (!rows.empty()) r.time_before = rows.back().time;
  }
  if (auto it = ck->extra.find("last_opt_step"); it != ck->extra.end()) r.sched->set_last_step(std::stoll(it->second));
  restore_gradients(*r.net, ck->grads);  // accumulated past the epoch's last optimizer step
  spdlog::info("Resuming training from {} (epoch {} done, best fitness {:.5f}, {} EMA updates) to {} epochs",
               ck->path, r.start_epoch, r.best_fitness, ck->ema_updates, cfg.epochs);
  if (r.start_epoch >= cfg.epochs)
    throw std::runtime_error(fmt::format("resume: {} already trained {} of epochs={}; pass epochs=N with N > {} to "
                                         "train longer", r.run_dir, r.start_epoch, cfg.epochs, r.start_epoch));
  return resumed_scaler;
}

void rebuild_for_batch(Run& r) {
  auto& cfg = r.cfg;
  if (cfg.rect) {  // the dataset's rect shapes are per batch
    r.train_loader = make_train_loader(r.info, cfg, r.device, r.denv.rank, r.denv.world);
  } else {
    const auto& old = *r.train_loader;
    data::LoaderOptions lo = old.options();
    lo.batch = r.denv.world > 1 ? cfg.batch / r.denv.world : cfg.batch;
    auto ds = old.dataset_ptr();
    auto aug = old.augment_options();
    r.train_loader.reset();  // its workers and prefetched batches go first
    r.train_loader = std::make_shared<data::Loader>(std::move(ds), aug, lo);
  }
  if (r.mosaic_closed) r.train_loader->close_mosaic();
  r.loader_read_bytes = instrument::process_read_bytes();
  r.nb = r.train_loader->num_batches();
  if (r.prof && cfg.workers > 0) {  // the profiler reads the new workers' CPU time (setup_instrumentation)
    r.prof->set_loader_cpu_clock([loader = std::weak_ptr<data::Loader>(r.train_loader)] {
      const auto l = loader.lock();
      return l ? l->worker_cpu_seconds() : -1.0;
    });
  }
  if (r.main_rank) {
    r.validator.reset();
    r.val_loader.reset();
    r.val_loader = make_val_loader(r.info, r.info.val, cfg, cfg.batch * 2, "val");
    setup_validator(r);
    cfg.save_args(r.run_dir);  // resume= reads the batch from args.yaml
  }
  setup_optimizer_and_scheduler(r);
  r.global_step = r.start_epoch * r.nb;  // only the first epoch retries: build_run's step numbering
  if (r.prof) {                          // another batch is another setting: its cached figure, or its own steps timed
    instrument::ProfilerOptions po = r.prof->options();
    po.compute_expected_s = 0;
    r.calibration = {};
    setup_calibration(r, po);
    r.prof->set_compute_expected(po.compute_expected_s);
  }
}

namespace {
/// model=x.pt and pretrained=FILE must exist before the dataset scan: this project downloads nothing.
void check_weight_files(const config::TrainConfig& cfg) {
  auto check = [](const std::string& key, const std::string& path) {
    if (std::filesystem::exists(path)) return;
    throw std::runtime_error(key + "=" + path + ": no such file (relative paths are from the current directory). " +
                             "Weights are not downloaded here: get Ultralytics' released ones from " +
                             "https://github.com/ultralytics/assets/releases (yolo11n.pt, ...) and pass their path");
  };
  if (io::is_pt_path(cfg.model)) check("model", cfg.model);
  if (cfg.pretrained != "true" && cfg.pretrained != "false" && !cfg.pretrained.empty())
    check("pretrained", cfg.pretrained);
}
}  // namespace

std::unique_ptr<Run> build_run(config::TrainConfig& cfg, const Callbacks& callbacks, TrainerHooks hooks) {
  auto run = std::make_unique<Run>(cfg);
  Run& r = *run;
  r.hooks = std::move(hooks);
  try {
    if (cfg.resume == "false") check_weight_files(cfg);
    setup_environment(r, callbacks);
    if (const std::string line = resolve_batch(cfg, r.device); !line.empty()) spdlog::warn("{}", line);  // batch=-1
    setup_data(r);
    setup_model(r);
    setup_optimization(r);
    r.results = ResultsCsv(r.run_dir + "/results.csv");
    const NamedTensors resumed_scaler = r.resuming ? resume(r) : NamedTensors{};
    setup_amp(r, resumed_scaler);
    setup_instrumentation(r);
  } catch (...) {
    remove_unused_run_dir(r);
    throw;
  }
  if (r.pg->active() && cfg.ddp_overlap) {  // after resume: the hooks live on the final parameter tensors
    r.reducer = std::make_unique<dist::GradReducer>(*r.pg, r.net->parameters(),
                                                    static_cast<int64_t>(cfg.bucket_cap_mb * 1024 * 1024));
    spdlog::info("DDP: gradient all-reduce overlapped with backward, {} bucket(s) of <= {} MiB (ddp_overlap=false: one "
                 "blocking reduce after backward)", r.reducer->num_buckets(), cfg.bucket_cap_mb);
  }
  if (cfg.sync_bn && r.pg->active()) {
    dist::ProcessGroup* pg = r.pg.get();
    const int64_t n = model::set_bn_forward(*r.net, [pg](const torch::Tensor& x, torch::nn::BatchNorm2dImpl& bn) {
      return dist::sync_batch_norm(x, bn, *pg);
    });
    spdlog::info("DDP: sync_bn=true: {} BatchNorm layers normalise with the global batch's statistics", n);
  } else if (cfg.sync_bn) {
    spdlog::info("sync_bn=true has no effect in a single process (WORLD_SIZE=1)");
  }
  if (r.main_rank) setup_validator(r);
  r.patience_left = cfg.patience;
  r.epoch = r.start_epoch;
  r.global_step = r.start_epoch * r.nb;
  r.summary.run_dir = r.run_dir;
  r.summary.precision = r.amp.precision();
  r.callbacks = &callbacks;
  r.fire(Event::on_pretrain_routine_end);
  return run;
}

}  // namespace yolo11::engine
