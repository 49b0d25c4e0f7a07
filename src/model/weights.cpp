#include "yolo11/model/weights.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <unordered_map>

#include "yolo11/io/pt_checkpoint.h"
#include "yolo11/io/safetensors.h"

namespace yolo11::model {
namespace {

void collect(const torch::nn::Module& m, const std::string& prefix,
             std::vector<std::pair<std::string, at::Tensor>>& out) {
  for (const auto& p : m.named_parameters(/*recurse=*/false))
    if (p.value().defined()) out.emplace_back(prefix + p.key(), p.value());
  for (const auto& b : m.named_buffers(/*recurse=*/false))
    if (b.value().defined()) out.emplace_back(prefix + b.key(), b.value());
  for (const auto& c : m.named_children()) collect(*c.value(), prefix + c.key() + ".", out);
}

std::string shape_str(const at::Tensor& t) {
  std::ostringstream ss;
  ss << t.sizes();
  return ss.str();
}

/// "model.23.cv3.0.2.weight" → "model.23.cv3" (the first three components), the unit reports collapse to.
std::string group_of(const std::string& key) {
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    pos = key.find('.', pos);
    if (pos == std::string::npos) return key;
    ++pos;
  }
  return key.substr(0, pos - 1);
}

/// Layer index of a "model.<i>...." key, −1 otherwise.
int layer_of(const std::string& key) {
  if (key.rfind("model.", 0) != 0) return -1;
  try {
    return std::stoi(key.substr(6));
  } catch (const std::exception&) {
    return -1;
  }
}

std::vector<std::string> explain_mismatch(const std::vector<std::pair<std::string, at::Tensor>>& dst,
                                          const std::unordered_map<std::string, const at::Tensor*>& src) {
  std::vector<std::string> notes;
  int dst_last = -1, src_last = -1;
  for (const auto& [k, t] : dst) dst_last = std::max(dst_last, layer_of(k));
  for (const auto& [k, t] : src) src_last = std::max(src_last, layer_of(k));
  for (const auto& [k, t] : dst) {
    if (k.size() < 12 || k.compare(k.size() - 12, 12, ".conv.weight") != 0 || layer_of(k) != 0) continue;
    const auto it = src.find(k);
    if (it != src.end() && it->second->dim() == 4 && t.dim() == 4 && it->second->size(0) != t.size(0))
      notes.push_back("the source looks like another model scale: its first conv has " +
                      std::to_string(it->second->size(0)) + " output channels, this model's " +
                      std::to_string(t.size(0)) + " (pretrained= expects weights of the same scale, e.g. "
                      "yolo11n weights for a yolo11n model)");
    break;
  }
  if (src_last >= 0 && dst_last >= 0 && src_last != dst_last)
    notes.push_back("the source has " + std::to_string(src_last + 1) + " layers, this model " +
                    std::to_string(dst_last + 1) + ": another architecture or depth");
  if (src_last >= 0) {
    const std::string head = "model." + std::to_string(src_last) + ".";
    for (const auto& [k, t] : src)
      if (k.rfind(head + "proto.", 0) == 0 || k.rfind(head + "cv4.", 0) == 0) {
        notes.push_back("the source's head has " + k.substr(head.size(), k.find('.', head.size()) - head.size()) +
                        " layers: weights of another task (segment / pose / obb); only the backbone and neck transfer");
        break;
      }
  }
  // Class count: the last conv of each cv3 branch has nc outputs.
  for (const auto& [k, t] : dst) {
    if (k.find(".cv3.0.2.weight") == std::string::npos) continue;
    const auto it = src.find(k);
    if (it != src.end() && it->second->dim() >= 1 && t.dim() >= 1 && it->second->size(0) != t.size(0))
      notes.push_back("class count differs (" + std::to_string(it->second->size(0)) + " in the source, " +
                      std::to_string(t.size(0)) + " here): the classification outputs start fresh (expected when "
                      "fine-tuning on another dataset)");
    break;
  }
  return notes;
}

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> state_dict(const torch::nn::Module& m) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  collect(m, "", out);
  return out;
}

std::string TransferReport::str() const {
  std::ostringstream ss;
  ss << "Transferred " << transferred << "/" << total << " items (parameters " << params_transferred << "/"
     << params_total << ", buffers " << buffers_transferred << "/" << buffers_total << ") from " << source;
  if (!skipped.empty()) {
    ss << "; skipped " << skipped.size() << ":";
    // Collapse keys of one group with the same reason kind into "group.*".
    std::vector<std::pair<std::string, std::string>> groups;  // (group, reason kind)
    std::vector<int> counts;
    for (const auto& s : skipped) {
      const auto sp = s.find(' ');
      const std::string key = s.substr(0, sp);
      const std::string reason = sp == std::string::npos ? "" : s.substr(sp + 1);
      const std::string kind = reason.rfind("(missing", 0) == 0 ? "(missing)" : "(shape mismatch)";
      const auto g = std::make_pair(group_of(key), kind);
      if (!groups.empty() && groups.back() == g) {
        ++counts.back();
      } else {
        groups.push_back(g);
        counts.push_back(1);
      }
    }
    size_t shown = 0;
    for (size_t i = 0; i < groups.size() && shown < 12; ++i, ++shown)
      ss << (i ? ", " : " ") << groups[i].first << (counts[i] > 1 ? ".*" : "") << " " << groups[i].second;
    if (groups.size() > shown) ss << ", ... (" << groups.size() - shown << " more groups)";
  }
  if (!unused.empty()) ss << "; " << unused.size() << " source tensors unused";
  for (const auto& n : notes) ss << ". " << n;
  return ss.str();
}

TransferReport transfer_weights(torch::nn::Module& m, const std::vector<std::pair<std::string, at::Tensor>>& src,
                                const std::string& source) {
  TransferReport r;
  r.source = source;
  std::unordered_map<std::string, const at::Tensor*> by_name;
  for (const auto& [k, t] : src) by_name.emplace(k, &t);
  const auto dst = state_dict(m);
  r.total = static_cast<int64_t>(dst.size());
  std::unordered_map<std::string, bool> is_buffer;
  for (const auto& b : m.named_buffers(/*recurse=*/true)) is_buffer[b.key()] = true;
  std::unordered_map<std::string, bool> used;
  torch::NoGradGuard no_grad;
  for (const auto& [k, t] : dst) {
    const auto it = by_name.find(k);
    if (it == by_name.end()) {
      r.skipped.push_back(k + " (missing in source)");
      continue;
    }
    used[k] = true;
    const at::Tensor& s = *it->second;
    if (s.sizes() != t.sizes()) {
      r.skipped.push_back(k + " (shape " + shape_str(s) + " in source, " + shape_str(t) + " in model)");
      continue;
    }
    at::Tensor target = t;  // aliases the module's storage
    target.copy_(s);
    ++r.transferred;
    ++(is_buffer.count(k) ? r.buffers_transferred : r.params_transferred);
  }
  for (const auto& [k, t] : dst) ++(is_buffer.count(k) ? r.buffers_total : r.params_total);
  for (const auto& [k, t] : src)
    if (!used.count(k)) r.unused.push_back(k);
  r.notes = explain_mismatch(dst, by_name);
  return r;
}

TransferReport load_weights(torch::nn::Module& m, const std::string& path) {
  if (!std::filesystem::exists(path))
    throw std::runtime_error("weights file not found: " + path + " (give a .safetensors file written by "
                             "yolo11-train or tools/export_ultralytics_weights.py, or an Ultralytics .pt)");
  // Both readers throw naming the file for truncated / corrupt input.
  const auto tensors =
      io::is_pt_path(path) ? io::read_pt_checkpoint(path).state_dict : io::load_safetensors(path).tensors;
  auto r = transfer_weights(m, tensors, path);
  if (r.complete())
    spdlog::info("{}", r.str());
  else
    spdlog::warn("{}", r.str());
  return r;
}

void save_weights(const torch::nn::Module& m, const std::string& path,
                  const std::map<std::string, std::string>& metadata) {
  auto sd = state_dict(m);
  for (auto& [k, t] : sd) {
    t = t.detach();
    if (t.is_floating_point() && t.scalar_type() != torch::kFloat) t = t.to(torch::kFloat);
  }
  auto meta = metadata;
  meta.emplace("format", "pt");
  io::save_safetensors(path, sd, meta);
}

}  // namespace yolo11::model
