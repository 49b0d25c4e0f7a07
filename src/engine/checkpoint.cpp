// Checkpoint save/load with atomic writes, last.prev fallback and NaN refusal (format: docs/recipe.md).
#include "yolo11/engine/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <spdlog/spdlog.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <algorithm>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>

#include "yolo11/build_info.h"
#include "yolo11/io/safetensors.h"

namespace fs = std::filesystem;

namespace yolo11::engine {

namespace {

constexpr const char* kFormat = "yolo11-cpp-checkpoint-1";

std::string state_path_of(const std::string& weights_file) {
  const fs::path p(weights_file);
  return (p.parent_path() / (p.stem().string() + ".state.safetensors")).string();
}

/// Name of the first non-finite floating-point tensor, or "" when all are finite.
std::string first_non_finite(const NamedTensors& ts, const std::string& what) {
  for (const auto& [name, t] : ts)
    if (t.defined() && t.is_floating_point() && t.numel() > 0 && !torch::isfinite(t).all().item<bool>())
      return what + " '" + name + "'";
  return "";
}

at::Tensor bytes_tensor(const std::string& s) {
  auto t = torch::empty({static_cast<int64_t>(s.size())}, torch::kUInt8);
  if (!s.empty()) std::memcpy(t.data_ptr<uint8_t>(), s.data(), s.size());
  return t;
}

std::string tensor_bytes(const at::Tensor& t) {
  const auto c = t.contiguous().to(torch::kUInt8);
  return std::string(reinterpret_cast<const char*>(c.data_ptr<uint8_t>()), static_cast<size_t>(c.numel()));
}

std::string new_id(int64_t epoch) {
  std::random_device rd;
  const auto now = std::chrono::system_clock::now().time_since_epoch().count();
  std::ostringstream os;
  os << "e" << epoch << "-" << std::hex << now << "-" << rd();
  return os.str();
}

void write_pair(const std::string& weights_file, const NamedTensors& weights, const NamedTensors& state,
                std::map<std::string, std::string> wmeta, std::map<std::string, std::string> smeta) {
  // State first, then weights: a reader checks that both carry the same id.
  io::save_safetensors(state_path_of(weights_file), state, smeta);
  io::save_safetensors(weights_file, weights, wmeta);
}

void rename_if_exists(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  if (!fs::exists(from)) return;
  fs::rename(from, to, ec);
  if (ec) throw std::runtime_error("checkpoint: cannot rename '" + from.string() + "' to '" + to.string() + "': " + ec.message());
}

}  // namespace

bool save_checkpoint(const std::string& weights_dir, const Checkpoint& c, bool is_best, bool epoch_copy) {
  std::string bad = first_non_finite(c.model, "model");
  if (bad.empty()) bad = first_non_finite(c.ema, "ema");
  if (!bad.empty()) {
    spdlog::warn("checkpoint: epoch {} not saved: {} has NaN/Inf values; keeping the previous checkpoints", c.epoch, bad);
    return false;
  }
  std::error_code ec;
  fs::create_directories(weights_dir, ec);
  if (ec) throw std::runtime_error("checkpoint: cannot create '" + weights_dir + "': " + ec.message());

  const std::string id = new_id(c.epoch);
  std::map<std::string, std::string> wmeta = {{"format", "pt"},  // safetensors' convention for PyTorch tensors
                                              {"yolo11_format", kFormat},
                                              {"checkpoint_id", id},
                                              {"epoch", std::to_string(c.epoch)},
                                              {"best_fitness", nlohmann::json(c.best_fitness).dump()},
                                              {"ema_updates", std::to_string(c.ema_updates)},
                                              {"version", build::kVersion},
                                              {"content", "EMA weights (state_dict keys)"}};
  NamedTensors state;
  for (const auto& [k, t] : c.model) state.emplace_back("model/" + k, t);
  for (const auto& [k, t] : c.scaler) state.emplace_back("scaler/" + k, t);
  state.emplace_back("optimizer", bytes_tensor(c.optimizer));
  if (c.rng_cpu.defined()) state.emplace_back("rng/cpu", c.rng_cpu);
  if (c.rng_cuda.defined()) state.emplace_back("rng/cuda", c.rng_cuda.to(torch::kCPU));
  std::map<std::string, std::string> smeta = wmeta;
  smeta["content"] = "training state (model/*, optimizer, scaler/*, rng/*)";
  smeta["args_yaml"] = c.args_yaml;
  smeta["results_csv"] = c.results_csv;
  smeta["extra"] = nlohmann::json(c.extra).dump();

  const fs::path dir(weights_dir);
  // Keep the previous last.* as the fallback.
  rename_if_exists(dir / "last.safetensors", dir / "last.prev.safetensors");
  rename_if_exists(dir / "last.state.safetensors", dir / "last.prev.state.safetensors");
  write_pair((dir / "last.safetensors").string(), c.ema, state, wmeta, smeta);
  if (is_best) write_pair((dir / "best.safetensors").string(), c.ema, state, wmeta, smeta);
  if (epoch_copy)
    write_pair((dir / ("epoch" + std::to_string(c.epoch) + ".safetensors")).string(), c.ema, state, wmeta, smeta);
  return true;
}

namespace {

/// Reads `weights_file` and, unless `weights_only`, the first of `state_files` that exists and carries
/// the same checkpoint id. Throws naming the files and the defect.
Checkpoint read_pair(const std::string& weights_file, bool weights_only, const std::vector<std::string>& state_files) {
  if (!fs::exists(weights_file)) throw std::runtime_error("checkpoint: '" + weights_file + "' does not exist");
  if (fs::file_size(weights_file) == 0) throw std::runtime_error("checkpoint: '" + weights_file + "' is empty");
  const io::TensorFile w = io::load_safetensors(weights_file);
  auto meta = [&](const io::TensorFile& f, const std::string& k) -> std::string {
    auto it = f.metadata.find(k);
    if (it == f.metadata.end())
      throw std::runtime_error("checkpoint: '" + f.path + "' has no metadata '" + k + "' (not a yolo11-cpp checkpoint?)");
    return it->second;
  };
  if (meta(w, "yolo11_format") != kFormat)
    throw std::runtime_error("checkpoint: '" + weights_file + "' has format '" + meta(w, "yolo11_format") + "', expected " + kFormat);
  Checkpoint c;
  c.path = weights_file;
  c.epoch = std::stoll(meta(w, "epoch"));
  c.best_fitness = nlohmann::json::parse(meta(w, "best_fitness")).get<double>();
  c.ema_updates = std::stoll(meta(w, "ema_updates"));
  c.ema = w.tensors;
  if (auto bad = first_non_finite(c.ema, "ema"); !bad.empty())
    throw std::runtime_error("checkpoint: '" + weights_file + "' holds NaN/Inf weights (" + bad + ")");
  if (weights_only) return c;

  const std::string id = meta(w, "checkpoint_id");
  std::string why;  // what was wrong with each candidate, for the error message
  std::optional<io::TensorFile> s;
  for (const auto& sp : state_files) {
    try {
      if (!fs::exists(sp)) throw std::runtime_error("state file '" + sp + "' does not exist");
      if (fs::file_size(sp) == 0) throw std::runtime_error("state file '" + sp + "' is empty");
      io::TensorFile f = io::load_safetensors(sp);
      if (meta(f, "checkpoint_id") != id)
        throw std::runtime_error("'" + sp + "' (id " + meta(f, "checkpoint_id") + ") does not belong to '" + weights_file +
                                 "' (id " + id + "); an interrupted save?");
      s = std::move(f);
      break;
    } catch (const std::exception& e) {
      why += (why.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  if (!s) throw std::runtime_error("checkpoint: no training state for '" + weights_file + "': " + why);
  for (const auto& [k, t] : s->tensors) {
    if (k.rfind("model/", 0) == 0) c.model.emplace_back(k.substr(6), t);
    else if (k.rfind("scaler/", 0) == 0) c.scaler.emplace_back(k.substr(7), t);
    else if (k == "optimizer") c.optimizer = tensor_bytes(t);
    else if (k == "rng/cpu") c.rng_cpu = t;
    else if (k == "rng/cuda") c.rng_cuda = t;
  }
  if (auto bad = first_non_finite(c.model, "model"); !bad.empty())
    throw std::runtime_error("checkpoint: '" + s->path + "' holds NaN/Inf weights (" + bad + ")");
  c.args_yaml = meta(*s, "args_yaml");
  c.results_csv = meta(*s, "results_csv");
  c.extra = nlohmann::json::parse(meta(*s, "extra")).get<std::map<std::string, std::string>>();
  return c;
}

}  // namespace

Checkpoint read_checkpoint(const std::string& weights_file, bool weights_only) {
  return read_pair(weights_file, weights_only, {state_path_of(weights_file)});
}

std::optional<Checkpoint> load_checkpoint(const std::string& weights_dir, const std::string& stem) {
  std::vector<std::string> stems = {stem};
  if (stem == "last") stems.push_back("last.prev");
  // The rotation last.* → last.prev.* renames two files; a kill between the renames leaves a weights
  // file beside the other stem's state file. State files are matched by checkpoint id, so any state
  // file of the rotation may complete any weights file of it.
  std::vector<std::string> states;
  for (const auto& s : stems) states.push_back((fs::path(weights_dir) / (s + ".state.safetensors")).string());
  for (size_t i = 0; i < stems.size(); ++i) {
    const std::string f = (fs::path(weights_dir) / (stems[i] + ".safetensors")).string();
    std::vector<std::string> order = states;
    std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(i), order.end());  // own state first
    try {
      Checkpoint c = read_pair(f, false, order);
      if (i > 0) spdlog::warn("checkpoint: using the fallback '{}' (saved after epoch {})", f, c.epoch + 1);
      return c;
    } catch (const std::exception& e) {
      spdlog::warn("checkpoint: '{}' is unusable: {}{}", f, e.what(),
                   i + 1 < stems.size() ? "; trying " + stems[i + 1] + ".*" : "");
    }
  }
  return std::nullopt;
}

std::string save_optimizer_state(const torch::optim::Optimizer& opt) {
  torch::serialize::OutputArchive ar;
  opt.save(ar);
  std::ostringstream os;
  ar.save_to(os);
  return os.str();
}

void load_optimizer_state(torch::optim::Optimizer& opt, const std::string& bytes) {
  if (bytes.empty()) throw std::runtime_error("load_optimizer_state: the checkpoint holds no optimizer state");
  torch::serialize::InputArchive ar;
  std::istringstream is(bytes);
  ar.load_from(is);
  opt.load(ar);
}

at::Tensor capture_rng_state() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void restore_rng_state(const at::Tensor& state) {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

}  // namespace yolo11::engine
