#include "yolo11/model/weights.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <filesystem>
#include <sstream>
#include <unordered_map>

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

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> state_dict(const torch::nn::Module& m) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  collect(m, "", out);
  return out;
}

std::string TransferReport::str() const {
  std::ostringstream ss;
  ss << "Transferred " << transferred << "/" << total << " items from " << source;
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
  }
  for (const auto& [k, t] : src)
    if (!used.count(k)) r.unused.push_back(k);
  return r;
}

TransferReport load_weights(torch::nn::Module& m, const std::string& path) {
  if (!std::filesystem::exists(path))
    throw std::runtime_error("weights file not found: " + path + " (give a .safetensors file written by "
                             "yolo11-train or tools/export_ultralytics_weights.py)");
  const auto file = io::load_safetensors(path);  // throws naming the file for truncated / corrupt input
  auto r = transfer_weights(m, file.tensors, path);
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
