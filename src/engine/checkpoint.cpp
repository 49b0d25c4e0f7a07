// Checkpoint save/load with atomic writes, last.prev fallback and NaN refusal (format: docs/recipe.md).
#include "yolo11/engine/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <spdlog/spdlog.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>
#include <torch/torch.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <functional>
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
#include "yolo11/io/file.h"
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

/// Test hook (engine::testing::set_checkpoint_fault_hook): called before each step of a save.
std::function<void(const std::string&)>& fault_hook() {
  static std::function<void(const std::string&)> hook;
  return hook;
}

void step(const std::string& what) {
  if (fault_hook()) fault_hook()(what);
}

void write_file(const fs::path& dir, const std::string& name, const std::string& bytes) {
  step("write " + name);
  io::write_file_atomic((dir / name).string(), bytes);
}

void rename_file(const fs::path& dir, const std::string& from, const std::string& to) {
  step("rename " + from + " -> " + to);
  std::error_code ec;
  fs::rename(dir / from, dir / to, ec);
  if (ec)
    throw std::runtime_error("checkpoint: cannot rename '" + (dir / from).string() + "' to '" + (dir / to).string() +
                             "': " + ec.message());
}

void remove_file(const fs::path& dir, const std::string& name) {
  step("remove " + name);
  std::error_code ec;
  fs::remove(dir / name, ec);
  if (ec) throw std::runtime_error("checkpoint: cannot remove '" + (dir / name).string() + "': " + ec.message());
}

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

/// The checkpoint id of a structurally complete yolo11-cpp checkpoint file; "" when the file is missing, cut short,
/// not a checkpoint or has no id (such a file completes no pair). Reads the header only.
std::string probe_id(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return "";
  try {
    const auto meta = io::read_safetensors_metadata(file.string());
    const auto f = meta.find("yolo11_format"), id = meta.find("checkpoint_id");
    if (f == meta.end() || f->second != kFormat || id == meta.end()) return "";
    return id->second;
  } catch (const std::exception&) {
    return "";
  }
}

/// The rotation's weights stems, in the order the loader prefers them.
const std::vector<std::string> kRotationStems = {"last", "last.prev"};

struct PairFiles {
  std::string weights, state;  // file names inside the weights dir
};

/// Complete id-matched pairs of the last/last.prev rotation in the loader's order of preference: a weights file
/// (last first) with the state file carrying its id (its own stem's first). A kill between the rotation's renames
/// can leave a pair split across the two stems; it is still a pair.
std::vector<PairFiles> rotation_pairs(const fs::path& dir) {
  std::vector<PairFiles> out;
  for (size_t i = 0; i < kRotationStems.size(); ++i) {
    const std::string w = kRotationStems[i] + ".safetensors";
    const std::string id = probe_id(dir / w);
    if (id.empty()) continue;
    for (size_t k = 0; k < kRotationStems.size(); ++k) {
      const std::string st = kRotationStems[(i + k) % kRotationStems.size()] + ".state.safetensors";
      if (probe_id(dir / st) == id) {
        out.push_back({w, st});
        break;
      }
    }
  }
  return out;
}

}  // namespace

namespace testing {
void set_checkpoint_fault_hook(std::function<void(const std::string& step)> hook) { fault_hook() = std::move(hook); }
}  // namespace testing

bool is_checkpoint_temp_file(const std::string& name, long* pid) {
  // <stem>.safetensors.tmp.<digits>: the temp name io::write_file_atomic gives a checkpoint file.
  const std::string mark = ".safetensors.tmp.";
  const auto at = name.rfind(mark);
  if (at == std::string::npos || at == 0) return false;
  const std::string digits = name.substr(at + mark.size());
  if (digits.empty() || digits.size() > 10 ||
      !std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return false;
  if (pid) *pid = std::stol(digits);
  return true;
}

int64_t remove_stale_checkpoint_temps(const std::string& weights_dir) {
  std::error_code ec;
  if (!fs::is_directory(weights_dir, ec)) return 0;
  int64_t removed = 0;
  for (const auto& e : fs::directory_iterator(weights_dir, ec)) {
    long pid = 0;
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file(ec) || !is_checkpoint_temp_file(name, &pid)) continue;
    // A temp file of another live process may be in the middle of its write: leave it. Ours (a failed save of this
    // process, or a reused pid) and those of dead processes are stale.
    const bool other_alive = pid != static_cast<long>(::getpid()) && pid > 0 &&
                             (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
    if (other_alive) continue;
    const auto bytes = e.file_size(ec);
    if (fs::remove(e.path(), ec)) {
      ++removed;
      spdlog::info("checkpoint: removed {} ({} bytes), the temp file of an interrupted save", e.path().string(), bytes);
    }
  }
  return removed;
}

bool save_checkpoint(const std::string& weights_dir, const Checkpoint& c, bool is_best, bool epoch_copy) {
  std::string bad = first_non_finite(c.model, "model");
  if (bad.empty()) bad = first_non_finite(c.ema, "ema");
  if (!bad.empty()) {
    spdlog::warn("checkpoint: epoch {} not saved: {} has NaN/Inf values; keeping the previous checkpoints", c.epoch + 1,
                 bad);  // Checkpoint::epoch counts from 0
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
  for (const auto& [k, v] : c.model_meta) wmeta[k] = v;
  NamedTensors state;
  for (const auto& [k, t] : c.model) state.emplace_back("model/" + k, t);
  for (const auto& [k, t] : c.grads) state.emplace_back("grad/" + k, t);
  for (const auto& [k, t] : c.scaler) state.emplace_back("scaler/" + k, t);
  state.emplace_back("optimizer", bytes_tensor(c.optimizer));
  if (c.rng_cpu.defined()) state.emplace_back("rng/cpu", c.rng_cpu);
  if (c.rng_cuda.defined()) state.emplace_back("rng/cuda", c.rng_cuda.to(torch::kCPU));
  std::map<std::string, std::string> smeta = wmeta;
  smeta["content"] = "training state (model/*, grad/*, optimizer, scaler/*, rng/*)";
  smeta["args_yaml"] = c.args_yaml;
  smeta["results_csv"] = c.results_csv;
  smeta["extra"] = nlohmann::json(c.extra).dump();
  // Encoded once, written as last.*, best.* and epoch<E>.*.
  const std::string wbytes = io::encode_safetensors(c.ema, wmeta);
  const std::string sbytes = io::encode_safetensors(state, smeta);

  const fs::path dir(weights_dir);
  remove_stale_checkpoint_temps(weights_dir);
  // Rotation. Invariant: the newest complete pair is never renamed over, removed or overwritten before the new pair
  // is complete, and a complete pair whose weights file is last.safetensors is always the newest one, so the
  // loader's order (last before last.prev) finds the newest complete pair after a kill or an error at any step of
  // any sequence of saves.
  //   1. keep := the newest complete pair present (possibly split across the two stems by an earlier kill); move it
  //      to last.prev.* (state first, then weights). The older fallback is dropped here.
  //   2. remove what is left of last.* (files of an interrupted save: they complete no pair);
  //   3. write last.state, then last (each atomically: temp file, fsync, rename, fsync of the directory).
  const auto pairs = rotation_pairs(dir);
  if (!pairs.empty()) {
    const PairFiles& keep = pairs.front();
    if (keep.state != "last.prev.state.safetensors") rename_file(dir, keep.state, "last.prev.state.safetensors");
    if (keep.weights != "last.prev.safetensors") rename_file(dir, keep.weights, "last.prev.safetensors");
  }
  for (const char* f : {"last.safetensors", "last.state.safetensors"})
    if (fs::exists(dir / f, ec)) remove_file(dir, f);
  fsync_dir(dir);
  write_file(dir, "last.state.safetensors", sbytes);
  write_file(dir, "last.safetensors", wbytes);
  // best.* and epoch<E>.* have no fallback: state first, weights second, matched by id (the weights file alone, what
  // val/predict read, is always whole).
  auto write_copy = [&](const std::string& stem) {
    write_file(dir, stem + ".state.safetensors", sbytes);
    write_file(dir, stem + ".safetensors", wbytes);
  };
  if (is_best) write_copy("best");
  if (epoch_copy) write_copy("epoch" + std::to_string(c.epoch));
  step("done");
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
    else if (k.rfind("grad/", 0) == 0) c.grads.emplace_back(k.substr(5), t);
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

void read_optimizer_archive(torch::serialize::InputArchive& ar, const std::string& bytes, const torch::Device& device) {
  if (bytes.empty()) throw std::runtime_error("load_optimizer_state: the checkpoint holds no optimizer state");
  std::istringstream is(bytes);
  ar.load_from(is, device);  // map location: the archive remembers the saving device (another GPU, CUDA on a CPU run)
}

void load_optimizer_state(torch::optim::Optimizer& opt, const std::string& bytes, const torch::Device& device) {
  torch::serialize::InputArchive ar;
  read_optimizer_archive(ar, bytes, device);
  opt.load(ar);
}

NamedTensors accumulated_gradients(const torch::nn::Module& model) {
  NamedTensors out;
  for (const auto& p : model.named_parameters())
    if (p.value().grad().defined()) out.emplace_back(p.key(), p.value().grad().detach());
  return out;
}

void restore_gradients(torch::nn::Module& model, const NamedTensors& grads) {
  if (grads.empty()) return;
  auto params = model.named_parameters();
  torch::NoGradGuard ng;
  for (const auto& [name, g] : grads) {
    auto* p = params.find(name);
    if (p == nullptr) throw std::runtime_error("checkpoint: saved gradient '" + name + "' names no model parameter");
    if (p->sizes() != g.sizes())
      throw std::runtime_error("checkpoint: saved gradient '" + name + "' has shape " + c10::str(g.sizes()) +
                               ", the parameter " + c10::str(p->sizes()));
    auto t = torch::empty_like(*p);  // the parameter's layout (channels_last convs) and device
    t.copy_(g);
    p->mutable_grad() = t;
  }
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
