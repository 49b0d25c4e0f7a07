// Callback registry and the trainer's default callbacks (include/yolo11/engine/callbacks.h): the console logger
// (Ultralytics' tqdm progress line, the profiler's window lines, the epoch line), the first train-batch plots,
// results.csv/png and checkpointing; then the TensorBoard and /metrics loggers (src/engine/loggers.cpp).
#include "yolo11/engine/callbacks.h"

#include <nlohmann/json.hpp>

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <stdexcept>

#include "yolo11/core/compat.h"
#include "yolo11/plot/data_plots.h"
#include "yolo11/engine/checkpoint.h"
#include "yolo11/engine/loggers.h"
#include "yolo11/engine/detail/run.h"
#include "yolo11/io/console.h"
#include "yolo11/io/run_dir.h"
#include "yolo11/model/pt_save.h"
#include "yolo11/model/weights.h"
#include "yolo11/core/strings.h"

namespace yolo11::engine {

namespace {
constexpr const char* kNames[kNumEvents] = {
    "on_pretrain_routine_start", "on_pretrain_routine_end", "on_train_start",     "on_train_epoch_start",
    "on_train_batch_start",      "on_before_zero_grad",     "on_train_batch_end", "on_train_epoch_end",
    "on_val_start",              "on_val_end",              "on_fit_epoch_end",   "on_model_save",
    "on_train_end",              "teardown"};

using core::seconds_since;

/// Console logger: per epoch the progress line (\r-updated on a terminal at least every 0.25 s, else printed at the
/// epoch's last step and every 30 s), then the validation table (Validator) and the epoch line; the run's start
/// and end lines. train.log gets each epoch's final progress line, and at each profiler window that window's
/// progress line and window line (the console does not show the window lines).
struct ConsoleLogger {
  bool tty = ::isatty(fileno(stdout)) != 0;
  std::string line;      // the current progress line
  bool in_file = false;  // the current progress line is in train.log
  bool shown = false;    // ... and on the console as a line of its own (not a terminal)
  Clock::time_point last_print;

  void train_start(TrainContext& c) {
    spdlog::info("Image sizes {} train, {} val\nLogging results to {}\nStarting training for {} epoch{}...",
                 c.cfg->imgsz, c.cfg->imgsz, c.run_dir, c.epochs, c.epochs == 1 ? "" : "s");
  }
  void epoch_start(TrainContext&) {
    line.clear();
    in_file = shown = false;
    last_print = Clock::now();
    spdlog::info("\n{}", io::progress_header());
  }
  void batch_end(TrainContext& c) {
    Run& r = *c.run;
    auto window = r.prof->take_window_line();
    const bool last = c.batch_i + 1 == c.num_batches;
    const bool due = seconds_since(last_print) > (tty ? 0.25 : 30.0);
    if (window || last || due) {  // the only per-step host sync
      const auto mean = (r.ep.loss_sum / static_cast<double>(r.ep.seen_steps)).to(torch::kCPU);
      std::vector<double> tloss(3);
      for (int k = 0; k < 3; ++k) tloss[static_cast<size_t>(k)] = mean[k].item<double>();
      line = io::progress_line(c.epoch, c.epochs, io::memory_string(r.cuda), tloss, c.batch->cls.size(0),
                               c.input_size, c.batch_i + 1, c.num_batches, seconds_since(r.ep.t_start));
      in_file = shown = false;
      if (tty) {
        io::progress_update(line);
        last_print = Clock::now();
      } else if (due || last) {
        spdlog::info("{}", line);
        in_file = shown = true;
        last_print = Clock::now();
      }
    }
    if (window) {
      if (!in_file) io::file_log()->info("{}", line);
      io::file_log()->info("{}", *window);
      in_file = true;
    }
  }
  void epoch_end(TrainContext&) {
    if (tty) io::progress_end();
    if (line.empty()) return;
    if (!tty && !shown) spdlog::info("{}", line);  // the epoch stopped before its last step
    else if (!in_file) io::file_log()->info("{}", line);
  }
  void fit_epoch_end(TrainContext& c) {
    const Run& r = *c.run;
    const double map50 = c.val ? c.row->map50 : 0.0, map = c.val ? c.row->map50_95 : 0.0;
    spdlog::info("epoch {}/{}: train {:.1f}s, val {:.1f}s, mAP50 {:.4f}, mAP50-95 {:.4f}{}", c.epoch + 1, c.epochs,
                 r.ep.t_train, r.ep.t_val, map50, map,
                 r.scaler.enabled() ? fmt::format(", AMP: {} steps skipped for inf/NaN gradients, loss scale {}",
                                                  r.ep.amp_skipped, r.scaler.get_scale())
                                    : std::string());
  }
  void train_end(TrainContext& c) {
    // As the reference: the epochs this process trained (a resumed run counts from its start epoch).
    const int64_t n = c.run->summary.epochs_done - c.run->start_epoch;
    spdlog::info("{} epoch{} completed in {:.3f} hours.", n, n == 1 ? "" : "s", c.run->summary.seconds / 3600.0);
  }
};

/// As Ultralytics' plot_idx: the first three steps of the run and of the close_mosaic phase, named by step.
void plot_train_batch(TrainContext& c) {
  const auto& cfg = *c.cfg;
  if (!cfg.plots || !c.main_rank) return;
  const int64_t ni = c.batch_i + c.num_batches * c.epoch;
  const int64_t close_ni = cfg.close_mosaic > 0 && cfg.epochs >= cfg.close_mosaic
                               ? (cfg.epochs - cfg.close_mosaic) * c.num_batches : -10;
  if (ni < 3 || (ni >= close_ni && ni < close_ni + 3))
    plot::plot_images(*c.batch, c.run->names, fmt::format("{}/train_batch{}.jpg", c.run_dir, ni));
}

/// results.csv row (rank 0) and results.png (plots=true).
void save_results(TrainContext& c) {
  if (!c.main_rank) return;
  c.run->results.append(*c.row);
  if (c.cfg->plots) plot_results(c.run_dir + "/results.csv", c.run_dir + "/results.png");
}

/// weights/last (+ best, + epochN at save_period) with everything resume needs; written atomically.
void save_model(TrainContext& c) {
  Run& r = *c.run;
  Checkpoint ck;
  ck.epoch = c.epoch;
  ck.best_fitness = r.best_fitness;
  ck.ema = r.ema->state();
  ck.model = model::state_dict(*r.net);
  ck.ema_updates = r.ema->updates();
  ck.optimizer = save_optimizer_state(*r.opt.opt);
  ck.args_yaml = r.cfg.to_yaml();
  ck.results_csv = r.results.text();
  ck.rng_cpu = capture_rng_state();
  if (r.cuda) ck.rng_cuda = compat::cuda_rng_state(r.device.index());
  ck.scaler = r.scaler.state();
  ck.extra["last_opt_step"] = std::to_string(r.sched->last_step());
  ck.model_meta = {{"names", nlohmann::json(r.names).dump()},
                   {"nc", std::to_string(r.mo.nc)},
                   {"model_scale", r.mo.scale},
                   {"sppf_act", r.mo.sppf_act ? "true" : "false"}};
  if (r.sched->last_step() < (c.epoch + 1) * r.nb - 1) ck.grads = accumulated_gradients(*r.net);  // mid-accumulation
  if (!save_checkpoint(c.run_dir + "/weights", ck, c.is_best, save_period_due(c.epoch, r.cfg.save_period))) {
    spdlog::warn("epoch {}/{}: weights hold NaN/Inf, checkpoint not written; {}/weights keeps the last good one",
                 c.epoch + 1, c.epochs, c.run_dir);
    return;
  }
  if (!r.cfg.save_pt) return;
  // The same EMA weights as Ultralytics checkpoints (float16), for the reference's tools. A failure here costs the
  // .pt only: the run's own checkpoint above is complete.
  model::PtSaveInfo info;
  info.names = r.names;
  info.args_yaml = ck.args_yaml;
  info.epoch = c.epoch;
  info.best_fitness = r.best_fitness;
  try {
    model::save_pt(*r.net, ck.ema, c.run_dir + "/weights/last.pt", info);
    if (c.is_best) model::save_pt(*r.net, ck.ema, c.run_dir + "/weights/best.pt", info);
  } catch (const std::exception& e) {
    spdlog::warn("epoch {}/{}: save_pt=true: the .pt was not written: {}", c.epoch + 1, c.epochs, e.what());
  }
}

}  // namespace

const char* event_name(Event e) { return kNames[static_cast<int>(e)]; }

std::optional<Event> parse_event(const std::string& name) {
  for (int i = 0; i < kNumEvents; ++i)
    if (name == kNames[i]) return static_cast<Event>(i);
  return std::nullopt;
}

const std::vector<Event>& all_events() {
  static const std::vector<Event> v = [] {
    std::vector<Event> out;
    for (int i = 0; i < kNumEvents; ++i) out.push_back(static_cast<Event>(i));
    return out;
  }();
  return v;
}

void Callbacks::add(Event e, Callback cb) { cbs_[static_cast<size_t>(e)].push_back(std::move(cb)); }

void Callbacks::add(const std::string& event, Callback cb) {
  const auto e = parse_event(event);
  if (!e) {
    std::string known;
    for (int i = 0; i < kNumEvents; ++i) known += std::string(i ? ", " : "") + kNames[i];
    throw std::invalid_argument("unknown callback event '" + event + "'; known events: " + known);
  }
  add(*e, std::move(cb));
}

void Callbacks::run(Event e, TrainContext& ctx) const {
  for (const auto& cb : cbs_[static_cast<size_t>(e)]) cb(ctx);
}

void add_default_callbacks(Callbacks& cbs) {
  auto console = std::make_shared<ConsoleLogger>();
  cbs.add(Event::on_train_start, [console](TrainContext& c) { console->train_start(c); });
  cbs.add(Event::on_train_epoch_start, [console](TrainContext& c) { console->epoch_start(c); });
  cbs.add(Event::on_train_batch_end, [console](TrainContext& c) { console->batch_end(c); });
  cbs.add(Event::on_train_batch_end, plot_train_batch);
  cbs.add(Event::on_train_epoch_end, [console](TrainContext& c) { console->epoch_end(c); });
  cbs.add(Event::on_fit_epoch_end, save_results);
  cbs.add(Event::on_fit_epoch_end, [console](TrainContext& c) { console->fit_epoch_end(c); });
  cbs.add(Event::on_model_save, save_model);
  cbs.add(Event::on_train_end, [console](TrainContext& c) { console->train_end(c); });
  add_tensorboard_callbacks(cbs);  // tensorboard=true
  add_metrics_callbacks(cbs);      // metrics_port=N
}

}  // namespace yolo11::engine
