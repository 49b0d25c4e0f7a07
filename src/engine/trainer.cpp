// engine::Trainer — one training run in Ultralytics BaseTrainer's phases: build_run (src/engine/run.cpp), then per
// epoch train_epoch (train_step per batch) and validate_and_save, with callbacks at Ultralytics' events. A step reads:
//   dataloader → h2d → forward (autocast) → loss → backward (scaled loss) →
//   [optimizer (unscale, clip, step unless inf/NaN, scaler update, zero_grad) → ema]
// each stage timed and NVTX-ranged by instrument::Profiler. Console output, results.csv/png and checkpoints are the
// default callbacks (src/engine/callbacks.cpp).
// DDP (WORLD_SIZE > 1, docs/dist.md): every rank runs this same loop on its shard with batch / world; at each
// optimizer step the accumulated gradients are summed over ranks (the allreduce stage) before unscale/clip/step;
// rank 0 alone writes the run dir and validates.
// Faults (docs/recipe.md "Crash safety"): an epoch that turns non-finite re-runs from the good state it started from
// (train_epoch, src/engine/recovery.cpp); an out-of-memory error in the first epoch halves the batch; any other one
// ends the run with one message naming the stage (Trainer::train).
// Reference: Ultralytics BaseTrainer._do_train / DetectionTrainer (8.4.50).
#include "yolo11/engine/trainer.h"

#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <sstream>

#include "run_reports.h"
#include "test_hooks.h"
#include "yolo11/core/compat.h"
#include "yolo11/data/transforms.h"
#include "yolo11/engine/inference.h"
#include "yolo11/engine/interrupt.h"
#include "yolo11/engine/multi_tensor_optim.h"
#include "yolo11/engine/detail/recovery.h"
#include "yolo11/engine/detail/run.h"
#include "yolo11/instrument/sampler.h"
#include "yolo11/io/pt_checkpoint.h"
#include "yolo11/io/run_dir.h"
#include "yolo11/model/weights.h"
#include "yolo11/core/strings.h"

namespace yolo11::engine {
namespace fs = std::filesystem;

namespace {
using core::seconds_since;

/// "loss nan (box, cls, dfl 1.234, 5.678, 0.9)": a step's total loss and its items, read on the host (a sync: only
/// when a run is failing).
std::string losses_string(const at::Tensor& total, const at::Tensor& items) {
  if (!total.defined() || !items.defined()) return "n/a";
  const auto v = items.detach().to(torch::kCPU, torch::kDouble);
  std::vector<double> parts(static_cast<size_t>(v.numel()));
  for (int64_t k = 0; k < v.numel(); ++k) parts[static_cast<size_t>(k)] = v[k].item<double>();
  return fmt::format("loss {:.4g} (box, cls, dfl {:.4g})", total.detach().to(torch::kCPU).item<double>(),
                     fmt::join(parts, ", "));
}

/// Test hook (never set in production): YOLO11_TEST_NAN="EPOCH:RANK" makes every loss of the 0-based epoch EPOCH on
/// rank RANK NaN until the run's first non-finite recovery (tests/dist: the ranks recover together).
const std::optional<std::pair<int64_t, int64_t>>& test_nan() {
  static const std::optional<std::pair<int64_t, int64_t>> v = []() -> std::optional<std::pair<int64_t, int64_t>> {
    const char* e = std::getenv("YOLO11_TEST_NAN");
    if (e == nullptr || *e == '\0') return std::nullopt;
    std::istringstream is(e);
    int64_t epoch = 0, rank = 0;
    char colon = 0;
    if (!(is >> epoch >> colon >> rank) || colon != ':')
      throw std::runtime_error(std::string("YOLO11_TEST_NAN=") + e + ": expected EPOCH:RANK (test hook)");
    return std::make_pair(epoch, rank);
  }();
  return v;
}
}  // namespace

config::TrainConfig prepare_resume(const config::TrainConfig& cfg, const std::vector<std::string>& overrides) {
  if (cfg.resume == "false") return cfg;
  if (io::is_pt_path(cfg.resume))
    throw std::runtime_error("resume=" + cfg.resume + ": resume continues one of this project's runs "
                             "(resume=runs/train/NAME or its weights/last.safetensors), not an Ultralytics .pt; start "
                             "from the checkpoint with model=" + cfg.resume + " (its architecture and weights) or "
                             "pretrained=" + cfg.resume);
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
  for (const auto& o : overrides)  // cfg=FILE is the --cfg spelling: compared below like --cfg, not replayed
    if (o.rfind("resume=", 0) != 0 && o.rfind("cfg=", 0) != 0) rest.push_back(o);
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

Trainer::Trainer(config::TrainConfig cfg, TrainerHooks hooks) : cfg_(std::move(cfg)), hooks_(std::move(hooks)) {
  add_default_callbacks(callbacks_);
}

Trainer::~Trainer() = default;

TrainSummary Trainer::train() {
  try {
    return run_all();
  } catch (const std::exception& e) {
    if (!is_out_of_memory(e)) throw;
    // One clear error instead of "std::bad_alloc": nothing of the failure touched the checkpoints (save_checkpoint
    // replaces files atomically), so the message can point at last.* and resume=.
    throw std::runtime_error(out_of_memory_message(e, static_cast<RunStage>(stage_), cfg_, run_.get()));
  }
}

void Trainer::enter(int stage) {
  stage_ = stage;
  if (run_ && run_->hooks.on_stage) {
    const auto s = static_cast<RunStage>(stage);
    const char* name = s == RunStage::loader       ? "loader"
                       : s == RunStage::validation ? "validation"
                       : s == RunStage::checkpoint ? "checkpoint"
                                                   : nullptr;
    if (name != nullptr) run_->hooks.on_stage(name, run_->epoch);
  }
}

TrainSummary Trainer::run_all() {
  stage_ = static_cast<int>(RunStage::build);
  run_ = build_run(cfg_, callbacks_, hooks_);
  Run& r = *run_;
  stage_ = static_cast<int>(RunStage::other);
  r.fire(Event::on_train_start);
  for (r.epoch = r.start_epoch; r.epoch < cfg_.epochs; ++r.epoch) {
    train_epoch();
    if (stopped_mid_epoch()) break;
    if (max_steps_reached()) {  // benchmarks (yolo11-sweep): the cut epoch gets its table, no validation or checkpoint
      io::file_log()->info("{}", r.prof->end_epoch());
      spdlog::info("max_steps={} reached: stopped without validation or checkpoint", cfg_.max_steps);
      break;
    }
    if (r.epoch + 1 < cfg_.epochs) start_loader_epoch(r.epoch + 1);  // built while this epoch validates
    validate_and_save();
    if (r.stop) break;
  }
  stage_ = static_cast<int>(RunStage::other);
  r.epoch = std::min(r.epoch, cfg_.epochs - 1);  // on_train_end sees the last epoch run, not one past it
  check_replicas();
  report_run(r);
  r.prof->finish();
  if (r.calibration.step_s > 0 && !r.calibration.key.empty()) {
    // Compute faster than its calibration: the calibration ran on a busy machine. The next run measures again.
    const double speed = r.prof->run_summary().compute_speed;
    if (speed > 1.3 && forget_compute_calibration(r.calibration.key))
      spdlog::warn("compute calibration: this run computed at {:.2f}x its calibrated speed ({:.3f} s per step), so the "
                   "calibration must have run on a busy machine; removed from the cache, the next run measures it "
                   "again", speed, r.calibration.step_s);
  }
  if (r.main_rank)
    mark_summary_interrupted(r.run_dir, r.summary.interrupted, r.summary.interrupted_epoch, r.summary.interrupted_step,
                             r.summary.epochs_done);
  r.summary.best_fitness = r.best_fitness;
  r.summary.seconds = seconds_since(r.t_run);
  r.summary.batch = cfg_.batch;
  r.fire(Event::on_train_end);
  r.fire(Event::teardown);
  TrainSummary summary = r.summary;
  run_.reset();
  return summary;
}

void Trainer::train_epoch() {
  Run& r = *run_;
  const int64_t epoch = r.epoch;
  const auto t_start = Clock::now();
  int64_t first_step = r.global_step;
  r.prof->begin_epoch(epoch);
  // What a non-finite epoch starts over from (host copies of the EMA, optimizer and scaler state; its size and time
  // go to train.log, docs/recipe.md "Crash safety" has measured ones).
  const auto t_keep = Clock::now();
  r.good = keep_good_state(r);
  io::file_log()->info("epoch {}: good state kept for non-finite recovery: {:.1f} MiB in {:.1f} ms", epoch + 1,
                       static_cast<double>(r.good->bytes) / (1024.0 * 1024.0), 1e3 * seconds_since(t_keep));
  for (;;) {
    run_epoch_pass(first_step, t_start);
    if (r.ep.restart == EpochState::Restart::none) break;
    prepare_restart();
    if (r.ep.restart == EpochState::Restart::out_of_memory) {  // new batches per epoch, new optimizer
      first_step = r.start_epoch * r.nb;  // only the first epoch of this process retries (build_run's numbering)
      r.good = keep_good_state(r);
    }
  }
  if (r.ep.nonfinite_steps == 0) r.nan_recoveries = 0;  // a clean epoch: the next incident gets 3 recoveries again
  // DDP: buffers once more: batches after the epoch's last optimizer step updated each rank's BN statistics alone.
  if (r.pg->active()) r.pg->broadcast_buffers(*r.net, 0);
  r.ep.t_train = seconds_since(r.ep.t_start);
  r.loader_report = r.train_loader->take_stats();  // before run_all starts the next epoch's batches
  r.fire(Event::on_train_epoch_end);
}

void Trainer::run_epoch_pass(int64_t first_step, Clock::time_point t_start) {
  Run& r = *run_;
  const int64_t epoch = r.epoch;
  r.ep = EpochState{};
  r.ep.t_start = t_start;  // the epoch's time includes the passes that were restarted
  r.global_step = first_step;
  r.sched->on_epoch_start(epoch);
  start_loader_epoch(epoch);  // a no-op when run_all started it during the previous epoch's validation
  if (r.calibrator) r.calibrator->on_epoch_start(first_step);  // a refused calibration tries this epoch's first steps
  r.net->train();
  r.ep.loss_sum = torch::zeros({3}, torch::TensorOptions().dtype(torch::kDouble).device(r.device));
  r.ep.bad_since_step = torch::zeros({}, torch::TensorOptions().dtype(torch::kBool).device(r.device));
  r.fire(Event::on_train_epoch_start);
  for (int64_t i = 0; i < r.nb; ++i, ++r.global_step) {
    if (!r.pg->active() && stop_signal() != 0) break;  // SIGINT/SIGTERM: the step before this one was the last
    if (max_steps_reached() || !train_step(i)) break;
  }
  enter(static_cast<int>(RunStage::other));
  if (r.ep.restart != EpochState::Restart::none) return;
  const auto mean = (r.ep.loss_sum / static_cast<double>(std::max<int64_t>(r.ep.seen_steps, 1))).to(torch::kCPU);
  for (int k = 0; k < 3; ++k) r.ep.tloss[static_cast<size_t>(k)] = mean[k].item<double>();
  // DDP: the epoch's train losses (results.csv) are the mean over ranks; the progress lines are rank 0's.
  if (r.pg->active()) {
    const auto m = r.pg->all_reduce_mean(r.ep.loss_sum / static_cast<double>(std::max<int64_t>(r.ep.seen_steps, 1)),
                                         "all_reduce of the epoch's train losses")
                       .to(torch::kCPU);
    for (int k = 0; k < 3; ++k) r.ep.tloss[static_cast<size_t>(k)] = m[k].item<double>();
  }
  // The epoch may not end non-finite: no validation, results row or checkpoint comes from such an epoch. Checked
  // once per epoch (one host sync): the last optimizer step skipped for a non-finite loss, or non-finite weights or
  // EMA (an update with non-finite gradients from a finite loss). A cut epoch (signal, max_steps) is not validated.
  if (r.ep.seen_steps == 0 || (!r.pg->active() && stop_signal() != 0) || max_steps_reached()) return;
  std::string why;
  if (r.nan_streak > 0)
    why = fmt::format("the epoch ended on {} optimizer step{} skipped for non-finite losses", r.nan_streak,
                      r.nan_streak == 1 ? "" : "s");
  else if (!all_finite(model::state_dict(*r.net)))
    why = "the weights are non-finite at the end of the epoch";
  else if (!all_finite(r.ema->state()))
    why = "the EMA weights are non-finite at the end of the epoch";
  // DDP: the replicas hold the same weights and flags; rank 0's verdict is taken by all, so they restart together.
  if (r.pg->active()) {
    const bool bad = r.pg->broadcast_flag(!why.empty(), 0, "broadcast of the non-finite epoch check");
    if (!bad) why.clear();
    else if (why.empty()) why = "rank 0 found the epoch non-finite";
  }
  if (why.empty()) return;
  ++r.ep.nonfinite_steps;  // the epoch is not clean
  r.ep.restart = EpochState::Restart::nonfinite;
  r.ep.restart_why = fmt::format("{} (step {}: {})", why, r.global_step - 1,
                                 losses_string(r.ep.last_total, r.ep.last_items));
}

void Trainer::prepare_restart() {
  Run& r = *run_;
  const auto kind = r.ep.restart;
  r.loader_epoch = -1;  // the next pass starts the epoch's batches over
  if (kind == EpochState::Restart::out_of_memory) {
    const int64_t old = cfg_.batch;
    cfg_.batch = std::max<int64_t>(old / 2, 1);
    ++r.oom_retries;
    ++r.summary.oom_retries;
    spdlog::warn("out of memory with batch={} in epoch {} ({}): reducing to batch={} and restarting the epoch ({}/3)",
                 old, r.epoch + 1, r.ep.restart_why, cfg_.batch, r.oom_retries);
    r.opt.opt->zero_grad();  // frees the gradients of the failed step
    r.synthetic_batch.reset();
    compat::empty_cache();
    rebuild_for_batch(r);
    return;
  }
  ++r.nan_recoveries;
  if (r.nan_recoveries > 3)
    throw std::runtime_error(fmt::format(
        "training stopped in epoch {}: {}, after 3 recoveries from the state the epoch started from. The last good "
        "checkpoint is in {}/weights. Try: lower lr0 (now {}), a longer warmup (warmup_epochs, now {}), amp=false "
        "(now {}), and check the labels (boxes inside the image, class ids below nc)",
        r.epoch + 1, r.ep.restart_why, r.run_dir.empty() ? std::string("the run dir") : r.run_dir, cfg_.lr0,
        cfg_.warmup_epochs, cfg_.amp ? "true" : "false"));
  ++r.summary.nonfinite_recoveries;
  spdlog::warn("epoch {}: {}: recovering (attempt {}/3): the model restarts from the EMA weights the epoch started "
               "with, EMA and optimizer state restored, and the epoch runs again",
               r.epoch + 1, r.ep.restart_why, r.nan_recoveries);
  restore_good_state(r, *r.good);
  r.nan_streak = 0;
}

void Trainer::start_loader_epoch(int64_t epoch) {
  Run& r = *run_;
  if (r.loader_epoch == epoch) return;
  r.loader_epoch = epoch;
  // Ultralytics closes at epoch == epochs - close_mosaic, so a run shorter than close_mosaic keeps mosaic
  // throughout; `>=` closes it again after a resume past that epoch.
  if (cfg_.close_mosaic > 0 && cfg_.epochs >= cfg_.close_mosaic && epoch >= cfg_.epochs - cfg_.close_mosaic &&
      !r.mosaic_closed) {
    spdlog::info("Closing dataloader mosaic");
    r.train_loader->close_mosaic();
    r.mosaic_closed = true;
  }
  if (!r.synthetic_batch) r.train_loader->start_epoch(epoch);  // synthetic_data: no loader work after the first batch
}

bool Trainer::max_steps_reached() const {
  const Run& r = *run_;
  return cfg_.max_steps > 0 && r.global_step - r.start_epoch * r.nb >= cfg_.max_steps;
}

bool Trainer::stopped_mid_epoch() {
  Run& r = *run_;
  if (r.pg->active() || stop_signal() == 0 || r.ep.seen_steps >= r.nb) return false;
  // Abandon the partial epoch: no validation, results row or checkpoint (DDP stops at epoch ends only).
  r.summary.interrupted = stop_signal();
  r.summary.interrupted_epoch = r.epoch + 1;
  r.summary.interrupted_step = r.global_step;
  spdlog::warn("{}: training stopped in epoch {} after {} of {} steps (not saved); {}", signal_name(stop_signal()),
               r.epoch + 1, r.ep.seen_steps, r.nb, r.epoch > r.start_epoch || r.resuming
                   ? fmt::format("resume={} continues after epoch {}", r.run_dir, r.epoch)
                   : std::string("no epoch was completed, nothing to resume"));
  return true;
}

bool Trainer::train_step(int64_t i) {
  Run& r = *run_;
  const int64_t epoch = r.epoch;
  const int64_t ni = i + r.nb * epoch;
  r.fire(Event::on_train_batch_start, [&](TrainContext& c) { c.batch_i = i; });
  r.prof->begin_step(r.global_step);
  std::optional<data::Batch> batch;
  enter(static_cast<int>(RunStage::loader));
  {
    auto s = r.prof->stage(instrument::StepStage::dataloader);
    if (r.synthetic_batch) {
      batch = *r.synthetic_batch;  // synthetic_data=true: pre-made tensors, the pipeline costs nothing
    } else {
      batch = r.train_loader->next();
      test_delay(r.denv.rank, instrument::StepStage::dataloader);
      if (cfg_.synthetic_data && batch) r.synthetic_batch = batch;
    }
  }
  enter(static_cast<int>(RunStage::step));
  r.prof->set_queue_depth(r.train_loader->queue_depth());
  if (!batch) {
    r.prof->end_step(0);
    return false;
  }
  torch::Tensor imgs;
  {
    auto s = r.prof->stage(instrument::StepStage::h2d);
    imgs = (*r.preprocess)(batch->images, epoch, i);  // float input on the device, multi_scale (engine/preprocess.h)
    // targets (batch_idx, cls, bboxes) stay on the host: the loss groups them there without a device sync
  }
  r.sched->on_iteration(ni, epoch);
  loss::DetectionLoss::Output out;
  // The in-run calibration (engine/calibration.h) times this step's forward + loss + backward with the loader paused.
  InRunCalibration* const calib = r.calibrator && r.calibrator->wants(r.global_step) ? r.calibrator.get() : nullptr;
  struct Abandon {
    InRunCalibration* c;
    ~Abandon() {
      if (c != nullptr) c->abandon();
    }
  } abandon{calib};
  if (calib != nullptr) calib->begin(r.synthetic_batch ? nullptr : r.train_loader.get());
  try {
    std::vector<torch::Tensor> feats;
    {
      auto s = r.prof->stage(instrument::StepStage::forward);
      compat::AutocastGuard ac(r.device.type(), r.amp.autocast, r.amp.dtype);
      feats = r.net->forward_feats(imgs);
    }
    {
      auto s = r.prof->stage(instrument::StepStage::loss);
      out = (*r.criterion)(feats, batch->batch_idx, batch->cls, batch->bboxes);
      if (r.hooks.on_loss) out.total = r.hooks.on_loss(epoch, i, out.total);
      const auto& nan_test = test_nan();
      if (nan_test && nan_test->first == epoch && nan_test->second == r.denv.rank && r.summary.nonfinite_recoveries == 0)
        out.total = out.total * std::numeric_limits<float>::quiet_NaN();
      // Non-finite losses are flagged on the device and checked at the next optimizer step, where the
      // gradient clipping synchronizes anyway: no per-step host sync hides data stalls on a GPU.
      r.ep.bad_since_step.logical_or_(torch::isfinite(out.total).logical_not());
    }
    {
      auto s = r.prof->stage(instrument::StepStage::backward);
      if (r.reducer && r.sched->will_step(ni)) r.reducer->arm();  // DDP: this backward ends the accumulation cycle
      r.scaler.scale(out.total).backward();  // float16: loss × scale keeps small gradients representable
      test_delay(r.denv.rank, instrument::StepStage::backward);
    }
    if (calib != nullptr) {
      abandon.c = nullptr;
      if (calib->end()) {
        r.calibration = calib->result();
        spdlog::info("{}", r.calibration.line);
        if (r.calibration.step_s > 0) r.prof->set_compute_expected(r.calibration.step_s);
      }
    }
  } catch (const c10::OutOfMemoryError& e) {
    // What the CUDA caching allocator throws. As the reference: in the first epoch of a single process the batch is
    // halved and the epoch restarted (at most 3 times); anything else ends the run (Trainer::train's message).
    if (epoch != r.start_epoch || r.pg->active() || r.oom_retries >= 3 || cfg_.batch <= 1) throw;
    r.ep.restart = EpochState::Restart::out_of_memory;
    const std::string what = e.what();
    r.ep.restart_why = what.substr(0, what.find('\n'));
    r.prof->end_step(0);
    return false;
  }
  r.ep.last_total = out.total;
  r.ep.last_items = out.items;
  if (r.sched->should_step(ni)) {
    if (optimizer_step()) {
      auto s = r.prof->stage(instrument::StepStage::ema);
      r.ema->update(model::state_dict(*r.net));
    }
    if (r.nan_streak >= 5) {  // persistent: the epoch starts over from its good state (Trainer::prepare_restart)
      r.ep.restart = EpochState::Restart::nonfinite;
      r.ep.restart_why = fmt::format("{} optimizer steps in a row saw non-finite losses (step {}: {})", r.nan_streak,
                                     r.global_step, losses_string(out.total, out.items));
      r.prof->end_step(batch->size());
      return false;
    }
  }
  r.ep.loss_sum.add_(out.items.to(torch::kDouble));
  ++r.ep.seen_steps;
  r.prof->end_step(batch->size());
  report_ranks(r);  // DDP: every rank's stage times when a window closed (straggler report)
  r.fire(Event::on_train_batch_end, [&](TrainContext& c) {
    c.batch_i = i;
    c.batch = &*batch;
    c.batch_images = batch->size();
    c.input_size = imgs.size(3);
    c.loss_items = out.items;
  });
  return true;
}

bool Trainer::optimizer_step() {
  Run& r = *run_;
  if (r.pg->active()) {
    // DDP, once per optimizer step (after accumulation): skip together if any rank saw a non-finite loss,
    // else SUM the accumulated gradients. Each rank's loss is its batch mean × its batch b (Ultralytics'
    // loss.sum() × batch), so Σ_ranks b·∇mean_r = B·mean_r ∇mean_r: the update of one process on the
    // global batch B = b·world (what Ultralytics gets from loss × world + DDP's mean).
    auto s = r.prof->stage(instrument::StepStage::allreduce);
    // With ddp_overlap the buckets started during backward: this waits for what backward did not hide (the
    // exposed communication). A non-finite loss on any rank then skips the step on all of them.
    if (r.reducer) r.reducer->finish(/*average=*/false);
    auto bad = r.ep.bad_since_step.to(torch::kFloat);  // on the model's device, the group's (core/device.h)
    r.pg->all_reduce_max_(bad, "all_reduce of the non-finite-loss flag");
    r.ep.bad_since_step.copy_(bad > 0);
    if (!r.reducer && bad.item<float>() == 0) r.pg->all_reduce_gradients(r.net->parameters(), /*average=*/false);
    // BatchNorm running statistics follow each rank's own batches: rank 0's win (DDP's broadcast_buffers,
    // here once per optimizer step), so the EMA, which averages buffers too, stays identical on every rank.
    r.pg->broadcast_buffers(*r.net, 0);
  }
  auto s = r.prof->stage(instrument::StepStage::optimizer);
  bool stepped = false;
  if (r.ep.bad_since_step.item<bool>()) {
    ++r.nan_streak;
    ++r.ep.nonfinite_steps;
    ++r.summary.nonfinite_skipped_steps;
    spdlog::warn("step {}: non-finite loss since the last optimizer step: update skipped ({} in a row)",
                 r.global_step, r.nan_streak);
    r.fire(Event::on_before_zero_grad);
    r.opt.opt->zero_grad();
    r.ep.bad_since_step.zero_();
    return false;
  }
  r.nan_streak = 0;
  const auto params = r.net->parameters();
  r.scaler.unscale_(params);  // clip the true gradients
  clip_grad_norm(params, 10.0);  // multi-tensor, and no wait for the GPU (LibTorch's returns a double)
  const double scale_used = r.scaler.get_scale();
  stepped = r.scaler.step(*r.opt.opt);  // skipped when the unscaled gradients hold inf/NaN
  r.scaler.update();
  if (!stepped) {
    ++r.ep.amp_skipped;
    ++r.summary.amp_skipped_steps;
    spdlog::debug("step {}: inf/NaN gradients at loss scale {}: optimizer step skipped, scale now {}",
                  r.global_step, scale_used, r.scaler.get_scale());
  }
  r.fire(Event::on_before_zero_grad);
  r.opt.opt->zero_grad();
  return stepped;
}

void Trainer::validate_and_save() {
  Run& r = *run_;
  const int64_t epoch = r.epoch;
  // ---- validation on the EMA weights ----
  ValResult vr;
  const bool final_epoch = epoch + 1 == cfg_.epochs;
  const bool validated = (cfg_.val || final_epoch) && r.main_rank;
  if (validated) {
    enter(static_cast<int>(RunStage::validation));
    auto s = r.prof->stage(instrument::StepStage::val);
    const auto tv = Clock::now();
    r.fire(Event::on_val_start);
    // A fresh inference copy of the EMA weights: BN folded into the convs, channels_last.
    model::YOLO val_net(r.mo);
    model::copy_state(r.ema->state(), *val_net);
    val_net->fuse();
    model::to_channels_last(*val_net);
    val_net->to(r.device);
    // Plots (batch mosaics, confusion matrices, curves) at the last validation only, as the reference: the final
    // epoch or one that early stopping may end.
    const bool possible_stop = cfg_.patience > 0 && r.patience_left <= 1;
    // The per-class rows likewise: the reference prints them only in its final evaluation.
    const bool last_val = final_epoch || possible_stop;
    // The forward in the precision the run trains in, as the reference's validator during an AMP run (half =
    // trainer.amp); the last validation in float32, as the reference's final evaluation, so the run's final metrics
    // are float32's. On the CPU, bfloat16 halves the validation's inference time (docs/benchmarks.md).
    std::optional<c10::ScalarType> val_autocast;
    if (r.amp.autocast && !last_val) val_autocast = r.amp.dtype;
    if (val_autocast && epoch == r.start_epoch)
      spdlog::info(
          "validation: forward in {} autocast, as the training (the reference validates in float16 during an "
          "AMP run); the last validation in float32",
          r.amp.precision());
    vr = r.validator->run(val_net, &*r.criterion, r.device, cfg_.plots && last_val, cfg_.verbose && last_val,
                          val_autocast);
    r.ep.t_val = seconds_since(tv);
    r.fire(Event::on_val_end, [&](TrainContext& c) { c.val = &vr; });
  }
  const double fitness = vr.metrics.fitness;
  // As the reference's validate(): the best fitness includes this epoch's before on_fit_epoch_end fires.
  const bool is_best = fitness > r.best_fitness;
  if (is_best) r.best_fitness = fitness;
  EpochResult row;
  {
    auto s = r.prof->stage(instrument::StepStage::log);
    // The epoch's freed memory back to the kernel before the epoch's memory reading (instrument/sampler.h).
    const double released = instrument::release_free_heap();
    spdlog::debug("epoch {}: {:.0f} MiB of free heap returned to the system", epoch + 1, released);
    io::file_log()->info("{}", r.prof->end_epoch());  // the console has the run's table at the end (report_run)
    report_loader(r);  // the loader workers' per-transform times of this epoch
    row.epoch = epoch + 1;
    row.time = r.time_before + seconds_since(r.t_run);
    row.box_loss = r.ep.tloss[0];
    row.cls_loss = r.ep.tloss[1];
    row.dfl_loss = r.ep.tloss[2];
    row.precision = vr.metrics.precision;
    row.recall = vr.metrics.recall;
    row.map50 = vr.metrics.map50;
    row.map50_95 = vr.metrics.map50_95;
    row.val_box_loss = vr.loss_items[0];
    row.val_cls_loss = vr.loss_items[1];
    row.val_dfl_loss = vr.loss_items[2];
    const auto lrs = r.sched->lrs();
    row.lr_pg0 = lrs.at(0);
    row.lr_pg1 = lrs.at(1);
    row.lr_pg2 = lrs.at(2);
    r.fire(Event::on_fit_epoch_end, [&](TrainContext& c) {
      c.val = validated ? &vr : nullptr;
      c.row = &row;
      c.fitness = fitness;
    });
  }
  {
    auto s = r.prof->stage(instrument::StepStage::checkpoint);
    enter(static_cast<int>(RunStage::checkpoint));
    if (cfg_.save && r.main_rank)
      r.fire(Event::on_model_save, [&](TrainContext& c) {
        c.val = validated ? &vr : nullptr;
        c.row = &row;
        c.fitness = fitness;
        c.is_best = is_best;
      });
    r.patience_left = is_best ? cfg_.patience : r.patience_left - 1;
  }
  enter(static_cast<int>(RunStage::other));
  r.summary.epochs_done = epoch + 1;
  r.summary.final_map50 = vr.metrics.map50;
  r.summary.final_map50_95 = vr.metrics.map50_95;
  if (cfg_.patience > 0 && r.patience_left <= 0) {
    spdlog::info("Stopping training early: no improvement in the last {} epoch{} (patience={})", cfg_.patience,
                 cfg_.patience == 1 ? "" : "s", cfg_.patience);
    r.stop = true;
  }
  if (!r.stop && stop_signal() != 0 && epoch + 1 < cfg_.epochs) {  // DDP: rank 0's decision is broadcast below
    r.summary.interrupted = stop_signal();
    r.summary.interrupted_epoch = epoch + 2;
    r.summary.interrupted_step = r.global_step;
    spdlog::warn("{}: training stopped after epoch {} (resume={} continues)", signal_name(stop_signal()), epoch + 1,
                 r.run_dir);
    r.stop = true;
  }
  if (!r.stop && cfg_.time && seconds_since(r.t_run) > *cfg_.time * 3600.0) {
    spdlog::info("Stopping training: time limit of {} h reached", *cfg_.time);
    r.stop = true;
  }
  if (r.pg->active()) {  // DDP: ranks > 0 wait here while rank 0 validates and saves; rank 0's stop decision rules
    r.stop = r.pg->broadcast_flag(r.stop, 0, "broadcast of rank 0's stop decision");
  }
}

void Trainer::check_replicas() {
  Run& r = *run_;
  if (!r.pg->active()) return;  // DDP: prove the replicas stayed in lockstep (bitwise-equal weights on every rank)
  const uint64_t h = dist::weights_hash(*r.net);
  const int64_t hi = static_cast<int64_t>(h >> 32), lo = static_cast<int64_t>(h & 0xffffffffull);
  const std::vector<int64_t> v =
      r.pg->all_reduce_max(std::vector<int64_t>{hi, lo, -hi, -lo}, "all_reduce of the weight hashes");
  r.summary.weights_identical = v[0] == -v[2] && v[1] == -v[3];
  r.summary.weights_hash = fmt::format("{:016x}", h);
  if (r.summary.weights_identical)
    spdlog::info("DDP: final weights identical on all {} ranks (hash {})", r.pg->world(), r.summary.weights_hash);
  else
    spdlog::error("DDP: final weights differ between ranks (this rank {} hash {}): the replicas went out of sync",
                  r.pg->rank(), r.summary.weights_hash);
}

}  // namespace yolo11::engine
