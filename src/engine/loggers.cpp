// TensorBoard and Prometheus loggers (include/yolo11/engine/loggers.h): callbacks that read what the trainer and
// its profiler already measured and write it out; they change nothing in the step.
#include "yolo11/engine/loggers.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "yolo11/engine/detail/run.h"
#include "yolo11/instrument/mfu.h"
#include "yolo11/instrument/sampler.h"
#include "yolo11/io/metrics_server.h"
#include "yolo11/io/tensorboard.h"

namespace yolo11::engine {

namespace {

constexpr const char* kLossNames[3] = {"box", "cls", "dfl"};

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// Watches the profiler for a newly closed window and knows the GPU's name and the model's FLOPs (for MFU).
struct WindowWatch {
  int64_t last_step = -1;
  std::string gpu_name;
  bool gpu_name_known = false;
  std::map<int64_t, double> gflops;  // input size → forward GFLOPs per image

  /// The window closed since the last call, or nullptr.
  const instrument::WindowSummary* take(const Run& r) {
    if (!r.prof || !r.prof->enabled()) return nullptr;
    const auto& w = r.prof->last_window();
    if (w.steps <= 0 || w.last_step == last_step) return nullptr;
    last_step = w.last_step;
    return &w;
  }
  std::optional<double> mfu(const Run& r, int64_t input_size, double img_per_s) {
    if (!r.cuda || input_size <= 0) return std::nullopt;
    if (!gpu_name_known) {
      gpu_name_known = true;
      if (auto nvml = instrument::Nvml::open(r.device.index() < 0 ? 0 : r.device.index())) gpu_name = nvml->device_name();
    }
    if (gpu_name.empty()) return std::nullopt;
    auto it = gflops.find(input_size);
    if (it == gflops.end()) it = gflops.emplace(input_size, r.net->gflops(input_size)).first;
    return model_flops_utilization(gpu_name, it->second, img_per_s);
  }
};

// ---- TensorBoard ------------------------------------------------------------------------------------------------

struct TensorBoardLogger {
  std::unique_ptr<io::EventWriter> w;
  WindowWatch watch;
  struct Pending {
    int64_t step;
    double wall;
    at::Tensor loss;  // [3] on the device
  };
  std::vector<Pending> pending;
  int64_t input_size = 0;

  void start(TrainContext& c) {
    if (!c.cfg->tensorboard || !c.main_rank) return;
    w = std::make_unique<io::EventWriter>(c.run_dir);
    spdlog::info("TensorBoard: writing {}; view with 'tensorboard --logdir {}' at http://localhost:6006/", w->path(),
                 std::filesystem::path(c.run_dir).parent_path().string());
  }
  /// One host read for all buffered steps.
  void flush_losses() {
    if (pending.empty()) return;
    std::vector<at::Tensor> ts;
    for (const auto& p : pending) ts.push_back(p.loss);
    const at::Tensor host = at::stack(ts).to(at::kCPU, at::kDouble).contiguous();
    const double* v = host.data_ptr<double>();
    for (size_t i = 0; i < pending.size(); ++i)
      for (int k = 0; k < 3; ++k)
        w->add_scalar(std::string("step/") + kLossNames[k] + "_loss", v[i * 3 + static_cast<size_t>(k)], pending[i].step,
                      pending[i].wall);
    pending.clear();
  }
  void batch_end(TrainContext& c) {
    if (!w) return;
    const int64_t step = c.epoch * c.num_batches + c.batch_i;
    const double now = unix_now();
    input_size = c.input_size;
    if (c.loss_items.defined()) pending.push_back({step, now, c.loss_items.detach().clone()});
    for (size_t g = 0; g < c.lrs.size(); ++g) w->add_scalar("step/lr_pg" + std::to_string(g), c.lrs[g], step, now);
    const auto* win = watch.take(*c.run);
    if (win == nullptr && pending.size() < 100) return;
    flush_losses();
    if (win != nullptr) write_window(*c.run, *win, now);
    w->flush();
  }
  void write_window(const Run& r, const instrument::WindowSummary& win, double now) {
    const int64_t s = win.last_step;
    w->add_scalar("profiler/step_s", win.step.mean, s, now);
    for (const auto& st : win.stages) {
      w->add_scalar("profiler/" + st.name + "_s", st.mean, s, now);
      w->add_scalar("profiler/" + st.name + "_share", st.share, s, now);
    }
    w->add_scalar("profiler/img_per_s", win.images_per_s, s, now);
    w->add_scalar("profiler/data_wait", win.share(instrument::StepStage::dataloader), s, now);
    if (win.gpu_util >= 0) w->add_scalar("profiler/gpu_util", win.gpu_util, s, now);
    if (win.gpu_mem_mb >= 0) w->add_scalar("profiler/gpu_mem_mb", win.gpu_mem_mb, s, now);
    // The window's own MFU (the console's figure: measured CPU peak or the GPU's data-sheet peak), else from the
    // GPU's name and the model's FLOPs at this window's input size.
    if (win.mfu >= 0) {
      w->add_scalar("profiler/mfu", win.mfu, s, now);
    } else if (auto m = watch.mfu(r, input_size, win.images_per_s)) {
      w->add_scalar("profiler/mfu", *m, s, now);
    }
  }
  void epoch_end(TrainContext&) {
    if (!w) return;
    flush_losses();
    w->flush();
  }
  /// results.csv's columns at step epoch + 1, as Ultralytics' TensorBoard callback logs them.
  void fit_epoch_end(TrainContext& c) {
    if (!w || c.row == nullptr) return;
    const auto& cols = ResultsCsv::columns();
    const auto vals = c.row->values();
    const double now = unix_now();
    for (size_t i = 0; i < cols.size() && i < vals.size(); ++i) {
      const std::string& tag = cols[i];
      if (tag == "epoch" || tag == "time") continue;
      if (c.val == nullptr && (tag.rfind("metrics/", 0) == 0 || tag.rfind("val/", 0) == 0)) continue;
      w->add_scalar(tag, vals[i], c.epoch + 1, now);
    }
    w->flush();
  }
  void end(TrainContext&) {
    if (!w) return;
    flush_losses();
    w->flush();
  }
};

// ---- Prometheus /metrics ----------------------------------------------------------------------------------------

struct MetricsLogger {
  std::shared_ptr<io::MetricsRegistry> reg;
  std::unique_ptr<io::MetricsServer> server;
  std::string rank;  // rank="R"
  WindowWatch watch;

  std::string labels(const std::string& extra = "") const { return extra.empty() ? rank : extra + "," + rank; }

  void start(TrainContext& c) {
    const int64_t base = c.cfg->metrics_port;
    if (base <= 0) return;
    const int local_rank = dist::from_env().local_rank;
    const int port = static_cast<int>(base) + local_rank;
    if (port > 65535)
      throw std::runtime_error("metrics_port=" + std::to_string(base) + " + LOCAL_RANK " + std::to_string(local_rank) +
                               " is past 65535; choose a lower metrics_port");
    rank = "rank=\"" + std::to_string(c.rank) + "\"";
    reg = std::make_shared<io::MetricsRegistry>();
    using T = io::MetricsRegistry::Type;
    const std::vector<std::tuple<const char*, T, const char*>> families = {
        {"yolo11_up", T::gauge, "1 while the trainer runs"},
        {"yolo11_world_size", T::gauge, "DDP processes (WORLD_SIZE)"},
        {"yolo11_epoch", T::gauge, "current epoch, 1-based"},
        {"yolo11_epochs", T::gauge, "epochs of the run"},
        {"yolo11_steps_total", T::counter, "training steps (batches) done by this process"},
        {"yolo11_images_total", T::counter, "training images seen by this process"},
        {"yolo11_step_seconds", T::gauge, "mean wall time per step over the last profiler window"},
        {"yolo11_stage_seconds_total", T::counter, "seconds spent in each timed stage of the step"},
        {"yolo11_stage_share", T::gauge, "share of step time of each stage over the last window (0..1)"},
        {"yolo11_images_per_second", T::gauge, "training throughput over the last window"},
        {"yolo11_data_wait_ratio", T::gauge, "share of step time waiting for the data loader over the last window"},
        {"yolo11_gpu_utilization_percent", T::gauge, "NVML GPU utilisation over the last window"},
        {"yolo11_gpu_memory_used_bytes", T::gauge, "NVML device memory used (all processes), max over the window"},
        {"yolo11_gpu_memory_peak_allocated_bytes", T::gauge, "caching-allocator peak of this process"},
        {"yolo11_mfu_ratio", T::gauge, "model FLOPs utilisation over the last window (0..1)"},
        {"yolo11_train_loss", T::gauge, "mean training loss of the current epoch so far"},
        {"yolo11_val_loss", T::gauge, "validation loss of the last validated epoch"},
        {"yolo11_val_metric", T::gauge, "validation metric of the last validated epoch"},
        {"yolo11_lr", T::gauge, "learning rate per parameter group"},
    };
    for (const auto& [name, type, help] : families) reg->declare(name, type, help);
    server = std::make_unique<io::MetricsServer>(reg, c.cfg->metrics_host, port);
    reg->set("yolo11_up", rank, 1);
    reg->set("yolo11_world_size", rank, c.world);
    reg->set("yolo11_epochs", rank, static_cast<double>(c.epochs));
    spdlog::info("Metrics: Prometheus exposition at http://{}:{}/metrics", c.cfg->metrics_host, port);
  }
  void epoch_start(TrainContext& c) {
    if (!server) return;
    reg->set("yolo11_epoch", rank, static_cast<double>(c.epoch + 1));
    for (size_t g = 0; g < c.lrs.size(); ++g) reg->set("yolo11_lr", labels("group=\"" + std::to_string(g) + "\""), c.lrs[g]);
  }
  void set_losses(const std::string& family, const double* v) {
    for (int k = 0; k < 3; ++k) reg->set(family, labels(std::string("loss=\"") + kLossNames[k] + "\""), v[k]);
  }
  void batch_end(TrainContext& c) {
    if (!server) return;
    Run& r = *c.run;
    reg->add("yolo11_steps_total", rank, 1);
    reg->add("yolo11_images_total", rank, static_cast<double>(c.batch_images));
    for (size_t g = 0; g < c.lrs.size(); ++g) reg->set("yolo11_lr", labels("group=\"" + std::to_string(g) + "\""), c.lrs[g]);
    const auto* w = watch.take(r);
    if (w == nullptr) return;
    reg->set("yolo11_step_seconds", rank, w->step.mean);
    for (const auto& st : w->stages) {
      const std::string l = labels("stage=\"" + st.name + "\"");
      reg->add("yolo11_stage_seconds_total", l, st.total);
      reg->set("yolo11_stage_share", l, st.share);
    }
    reg->set("yolo11_images_per_second", rank, w->images_per_s);
    reg->set("yolo11_data_wait_ratio", rank, w->share(instrument::StepStage::dataloader));
    if (w->gpu_util >= 0) reg->set("yolo11_gpu_utilization_percent", rank, w->gpu_util);
    if (w->gpu_mem_mb >= 0) reg->set("yolo11_gpu_memory_used_bytes", rank, w->gpu_mem_mb * 1024 * 1024);
    if (w->peak_alloc_mb >= 0) reg->set("yolo11_gpu_memory_peak_allocated_bytes", rank, w->peak_alloc_mb * 1024 * 1024);
    if (w->mfu >= 0) {
      reg->set("yolo11_mfu_ratio", rank, w->mfu);
    } else if (auto m = watch.mfu(r, c.input_size, w->images_per_s)) {
      reg->set("yolo11_mfu_ratio", rank, *m);
    }
    if (r.ep.seen_steps > 0 && r.ep.loss_sum.defined()) {  // one host read per window, as the console logger does
      const at::Tensor mean = (r.ep.loss_sum / static_cast<double>(r.ep.seen_steps)).to(at::kCPU, at::kDouble).contiguous();
      set_losses("yolo11_train_loss", mean.data_ptr<double>());
    }
  }
  void epoch_end(TrainContext& c) {
    if (!server) return;
    set_losses("yolo11_train_loss", c.tloss.data());
  }
  void fit_epoch_end(TrainContext& c) {
    if (!server || c.val == nullptr || c.row == nullptr) return;
    const double v[3] = {c.row->val_box_loss, c.row->val_cls_loss, c.row->val_dfl_loss};
    set_losses("yolo11_val_loss", v);
    const std::pair<const char*, double> m[4] = {{"precision", c.row->precision}, {"recall", c.row->recall},
                                                 {"mAP50", c.row->map50}, {"mAP50-95", c.row->map50_95}};
    for (const auto& [name, value] : m) reg->set("yolo11_val_metric", labels(std::string("metric=\"") + name + "\""), value);
  }
  void teardown(TrainContext&) { server.reset(); }
};

}  // namespace

std::optional<double> model_flops_utilization(const std::string& gpu_name, double forward_gflops_per_image,
                                              double images_per_s) {
  // Dense fp16/bf16 tensor-core peaks: the table of instrument::gpu_peak_flops (include/yolo11/instrument/mfu.h).
  const auto peak = instrument::gpu_peak_flops(gpu_name, "bf16");
  if (!peak) return std::nullopt;
  return instrument::mfu(3.0 * forward_gflops_per_image * 1e9, images_per_s, *peak);
}

void add_tensorboard_callbacks(Callbacks& cbs) {
  auto tb = std::make_shared<TensorBoardLogger>();
  cbs.add(Event::on_pretrain_routine_start, [tb](TrainContext& c) { tb->start(c); });
  cbs.add(Event::on_train_batch_end, [tb](TrainContext& c) { tb->batch_end(c); });
  cbs.add(Event::on_train_epoch_end, [tb](TrainContext& c) { tb->epoch_end(c); });
  cbs.add(Event::on_fit_epoch_end, [tb](TrainContext& c) { tb->fit_epoch_end(c); });
  cbs.add(Event::on_train_end, [tb](TrainContext& c) { tb->end(c); });
  cbs.add(Event::teardown, [tb](TrainContext& c) {
    tb->end(c);
    tb->w.reset();
  });
}

void add_metrics_callbacks(Callbacks& cbs) {
  auto m = std::make_shared<MetricsLogger>();
  cbs.add(Event::on_pretrain_routine_start, [m](TrainContext& c) { m->start(c); });
  cbs.add(Event::on_train_epoch_start, [m](TrainContext& c) { m->epoch_start(c); });
  cbs.add(Event::on_train_batch_end, [m](TrainContext& c) { m->batch_end(c); });
  cbs.add(Event::on_train_epoch_end, [m](TrainContext& c) { m->epoch_end(c); });
  cbs.add(Event::on_fit_epoch_end, [m](TrainContext& c) { m->fit_epoch_end(c); });
  cbs.add(Event::teardown, [m](TrainContext& c) { m->teardown(c); });
}

}  // namespace yolo11::engine
