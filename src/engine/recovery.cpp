// Good state of an epoch, non-finite checks and the out-of-memory message (include/yolo11/engine/detail/recovery.h).
#include "yolo11/engine/detail/recovery.h"

#include <c10/util/Exception.h>
#include <spdlog/spdlog.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <new>
#include <type_traits>
#include <utility>

#include "yolo11/core/compat.h"
#include "yolo11/engine/checkpoint.h"
#include "yolo11/engine/detail/run.h"
#include "yolo11/instrument/sampler.h"
#include "yolo11/io/safetensors.h"
#include "yolo11/model/weights.h"

namespace yolo11::engine {
namespace fs = std::filesystem;

namespace {
NamedTensors host_copies(const NamedTensors& ts, int64_t& bytes) {
  NamedTensors out;
  out.reserve(ts.size());
  for (const auto& [name, t] : ts) {
    out.emplace_back(name, t.detach().to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true));
    bytes += static_cast<int64_t>(t.numel() * t.element_size());
  }
  return out;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

at::Tensor copy_to(const at::Tensor& t, const torch::Device& device) {
  return t.defined() ? t.detach().to(torch::TensorOptions().device(device), /*non_blocking=*/false, /*copy=*/true) : t;
}

/// A copy of one parameter's optimizer state with its own tensors on `device` (the optimizers build_optimizer makes).
std::unique_ptr<torch::optim::OptimizerParamState> deep_copy(const torch::optim::OptimizerParamState& s,
                                                             const torch::Device& device, int64_t* bytes) {
  auto copy = [&](const at::Tensor& t) {
    if (bytes != nullptr && t.defined()) *bytes += static_cast<int64_t>(t.numel() * t.element_size());
    return copy_to(t, device);
  };
  if (const auto* p = dynamic_cast<const torch::optim::SGDParamState*>(&s)) {
    auto o = std::make_unique<torch::optim::SGDParamState>(*p);
    o->momentum_buffer(copy(p->momentum_buffer()));
    return o;
  }
  if (const auto* p = dynamic_cast<const torch::optim::AdamWParamState*>(&s)) {
    auto o = std::make_unique<torch::optim::AdamWParamState>(*p);
    o->exp_avg(copy(p->exp_avg())).exp_avg_sq(copy(p->exp_avg_sq())).max_exp_avg_sq(copy(p->max_exp_avg_sq()));
    return o;
  }
  if (const auto* p = dynamic_cast<const torch::optim::AdamParamState*>(&s)) {
    auto o = std::make_unique<torch::optim::AdamParamState>(*p);
    o->exp_avg(copy(p->exp_avg())).exp_avg_sq(copy(p->exp_avg_sq())).max_exp_avg_sq(copy(p->max_exp_avg_sq()));
    return o;
  }
  throw std::runtime_error("keep_good_state: optimizer state of a type other than SGD, Adam or AdamW");
}
}  // namespace

struct OptimizerStateCopy {
  // The state map's key: the parameter's TensorImpl* on LibTorch 2.x, its address as a string on 1.13.
  using StateMap = std::remove_reference_t<decltype(std::declval<torch::optim::Optimizer&>().state())>;
  std::vector<std::pair<StateMap::key_type, std::unique_ptr<torch::optim::OptimizerParamState>>> entries;
};

GoodState keep_good_state(const Run& r) {
  GoodState s;
  s.epoch = r.epoch;
  s.ema = host_copies(r.ema->state(), s.bytes);
  s.ema_updates = r.ema->updates();
  auto opt = std::make_shared<OptimizerStateCopy>();
  for (const auto& [param, state] : r.opt.opt->state())
    opt->entries.emplace_back(param, deep_copy(*state, torch::kCPU, &s.bytes));
  s.optimizer = std::move(opt);
  s.scaler = host_copies(r.scaler.state(), s.bytes);
  s.grads = host_copies(accumulated_gradients(*r.net), s.bytes);
  s.last_step = r.sched->last_step();
  return s;
}

void restore_good_state(Run& r, const GoodState& s) {
  model::copy_state(s.ema, *r.net);  // the model restarts from the EMA weights (and their BN statistics)
  r.ema->load(s.ema, s.ema_updates);  // ModelEMA::load copies into its own tensors on the run's device
  auto& state = r.opt.opt->state();  // keyed by the parameters' TensorImpl, which a recovery keeps
  state.clear();
  for (const auto& [param, saved] : s.optimizer->entries) state[param] = deep_copy(*saved, r.device, nullptr);
  if (!s.scaler.empty()) r.scaler.load(s.scaler);
  r.opt.opt->zero_grad();
  restore_gradients(*r.net, s.grads);
  r.sched->set_last_step(s.last_step);
}

bool all_finite(const NamedTensors& ts) {
  std::map<std::string, std::vector<at::Tensor>> flags;  // per device: one host sync each
  for (const auto& [name, t] : ts)
    if (t.defined() && t.is_floating_point() && t.numel() > 0)
      flags[t.device().str()].push_back(torch::isfinite(t).all().reshape({1}));
  for (const auto& [device, f] : flags)
    if (!torch::cat(f).all().item<bool>()) return false;
  return true;
}

bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return true;
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr) return true;
  if (dynamic_cast<const c10::Error*>(&e) != nullptr) {
    const std::string m = e.what();
    return m.find("can't allocate memory") != std::string::npos || m.find("not enough memory") != std::string::npos;
  }
  return false;
}

const char* run_stage_name(RunStage s) {
  switch (s) {
    case RunStage::build: return "building the run (dataset scan, cache, model)";
    case RunStage::loader: return "loading a training batch (data loader; a worker's error is rethrown here)";
    case RunStage::step: return "the training step (forward, loss, backward, optimizer)";
    case RunStage::validation: return "validation";
    case RunStage::checkpoint: return "saving the checkpoint";
    case RunStage::other: break;
  }
  return "the end of an epoch";
}

std::string out_of_memory_message(const std::exception& e, RunStage stage, const config::TrainConfig& cfg,
                                  const Run* r) {
  const double gib = 1024.0 * 1024.0 * 1024.0;
  const double rss = instrument::process_rss_mb() / 1024.0;
  const double ram = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE)) / gib;
  std::string where = run_stage_name(stage);
  if (r != nullptr && stage != RunStage::build)
    where += fmt::format(" in epoch {}/{}, step {}", r->epoch + 1, cfg.epochs, r->global_step);
  std::string memory = fmt::format("this process holds {:.2f} GiB resident of the machine's {:.1f} GiB RAM", rss, ram);
  if (r != nullptr && r->cuda) {
    const auto mi = compat::memory_info(r->plan.cuda_index());
    memory += fmt::format("; {}: {:.2f} GiB allocated, {:.2f} GiB reserved by this process, {:.2f} GiB free of {:.2f}",
                          r->device.str(), static_cast<double>(compat::memory_allocated(r->plan.cuda_index())) / gib,
                          static_cast<double>(mi.reserved) / gib, static_cast<double>(mi.free) / gib,
                          static_cast<double>(mi.total) / gib);
  }
  const int64_t half = std::max<int64_t>(1, cfg.batch / 2);
  const bool cache_ram = cfg.cache == core::CacheMode::ram;
  std::string lower;
  switch (stage) {
    case RunStage::build:
      lower = cache_ram ? "cache=ram decodes every image into RAM: use cache=disk or cache=false (or a smaller "
                                   "imgsz / fraction)"
                                 : "lower imgsz or fraction, or free memory for the dataset scan and the model";
      break;
    case RunStage::loader:
      lower = fmt::format("lower workers (each builds whole batches ahead), batch (e.g. batch={}) or imgsz{}", half,
                          cache_ram ? ", or use cache=disk instead of cache=ram" : "");
      break;
    case RunStage::step:
      lower = fmt::format("lower batch (e.g. batch={}) or imgsz{}", half,
                          r != nullptr && r->cuda ? "; keep amp=true (half the activation memory)" : "");
      break;
    case RunStage::validation:
      lower = fmt::format("validation runs at batch × 2 = {}: lower batch (e.g. batch={}) or imgsz, or val=false",
                          cfg.batch * 2, half);
      break;
    default:
      lower = fmt::format("free memory, or lower batch (e.g. batch={}) or imgsz", half);
  }
  std::string ckpt = "no checkpoint was written yet: nothing to resume";
  if (r != nullptr && !r->run_dir.empty()) {
    const fs::path last = fs::path(r->run_dir) / "weights" / "last.safetensors";
    std::error_code ec;
    if (fs::exists(last, ec)) {
      std::string epoch = "?";
      try {
        const auto meta = io::read_safetensors_metadata(last.string());
        if (auto it = meta.find("epoch"); it != meta.end()) epoch = std::to_string(std::stoll(it->second) + 1);
      } catch (const std::exception&) {
      }
      ckpt = fmt::format("the last checkpoint {} (after epoch {}) is intact: resume={} continues from it (batch, "
                         "workers and cache may be changed on resume)",
                         last.string(), epoch, r->run_dir);
    }
  }
  return fmt::format(
      "out of memory in {}: {}. Memory: {}. Settings: batch={} imgsz={} cache={} workers={}. What to "
      "do: {}. State: {}",
      where, first_line(e.what()), memory, cfg.batch, cfg.imgsz, core::to_string(cfg.cache), cfg.workers, lower, ckpt);
}

}  // namespace yolo11::engine
