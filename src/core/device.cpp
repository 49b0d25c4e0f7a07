// core::resolve_device / plan_device (include/yolo11/core/device.h).
#include "yolo11/core/device.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "yolo11/core/compat.h"
#include "yolo11/core/strings.h"

namespace yolo11::core {

namespace {

const char* const kForms = "use device=cpu, device=0 (first GPU), device=cuda:N, or device=0,1 under DDP";


/// "3" → 3; nullopt for anything that is not a small non-negative integer.
std::optional<int> index_of(const std::string& s) {
  if (s.empty() || s.size() > 3 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoi(s);
}

std::string visible_note(const DeviceFacts& f) {
  if (!f.cuda_visible_devices) return "";
  return " (CUDA_VISIBLE_DEVICES='" + *f.cuda_visible_devices + "')";
}

/// Throws unless CUDA index `i` is usable; `what` names the value for the message.
void require_cuda(const std::string& what, int i, const DeviceFacts& f) {
  if (!f.built_with_cuda)
    throw std::runtime_error("device=" + what + " asks for a CUDA device, but this build's LibTorch has no CUDA "
                             "(build summary 'CUDA OFF'); use device=cpu, or rebuild against a CUDA LibTorch");
  if (f.cuda_count == 0)
    throw std::runtime_error("device=" + what + " asks for a CUDA device, but none is visible to this process" +
                             visible_note(f) + "; check nvidia-smi and CUDA_VISIBLE_DEVICES, or use device=cpu");
  if (i >= f.cuda_count)
    throw std::runtime_error("device=" + what + ": CUDA device " + std::to_string(i) + " does not exist, " +
                             std::to_string(f.cuda_count) + " visible" + visible_note(f) + " (indices 0.." +
                             std::to_string(f.cuda_count - 1) + ")");
}

c10::Device cuda(int i) { return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(i)); }

}  // namespace

DevicePlan resolve_device(const std::string& device_in, const DeviceFacts& f) {
  std::string device = trim(device_in);
  std::transform(device.begin(), device.end(), device.begin(), [](unsigned char c) { return std::tolower(c); });
  const bool ddp = f.world > 1;
  const std::string rank_note =
      ddp ? " (DDP: LOCAL_RANK=" + std::to_string(f.local_rank) + ", one GPU per process)" : "";
  DevicePlan p;
  if (device == "cpu") {
    p.reason = "device=cpu";
    return p;
  }
  if (device.empty()) {
    if (!f.built_with_cuda || f.cuda_count == 0) {
      p.reason = std::string("device='' and ") + (f.built_with_cuda ? "no CUDA device visible" + visible_note(f)
                                                                     : "this build has no CUDA") + ": cpu";
      return p;
    }
    const int i = ddp ? f.local_rank : 0;
    require_cuda("'' (DDP rank with LOCAL_RANK=" + std::to_string(f.local_rank) + ")", i, f);
    p.device = cuda(i);
    p.reason =
        "device='' and " + std::to_string(f.cuda_count) + " CUDA device(s) visible: " + p.device.str() + rank_note;
    return p;
  }
  if (device == "mps")
    throw std::runtime_error("device=mps (Apple GPUs) is not supported by this trainer; " + std::string(kForms));
  // one index: "0", "cuda", "cuda:N"
  std::optional<int> one;
  if (device == "cuda") one = 0;
  else if (device.rfind("cuda:", 0) == 0) one = index_of(device.substr(5));
  else if (device.find(',') == std::string::npos) one = index_of(device);
  if (one) {
    const int i = ddp ? f.local_rank : *one;
    require_cuda(device_in + rank_note, i, f);
    p.device = cuda(i);
    p.reason = "device=" + device_in + ": " + p.device.str() + rank_note;
    return p;
  }
  if (device.find(',') == std::string::npos)
    throw std::runtime_error("device=" + device_in + " is not a device: " + kForms);
  // a list: "0,1,2"
  std::vector<int> list;
  size_t a = 0;
  while (a <= device.size()) {
    const size_t b = std::min(device.find(',', a), device.size());
    const auto i = index_of(trim(device.substr(a, b - a)));
    if (!i) throw std::runtime_error("device=" + device_in + " is not a list of CUDA indices: " + kForms);
    if (std::find(list.begin(), list.end(), *i) != list.end())
      throw std::runtime_error("device=" + device_in + " names CUDA device " + std::to_string(*i) + " twice");
    list.push_back(*i);
    a = b + 1;
  }
  if (!ddp)
    throw std::runtime_error("device=" + device_in + " trains on " + std::to_string(list.size()) +
                             " GPUs with DDP, which this trainer does not spawn itself: launch one process per GPU, "
                             "e.g. tools/launch_dist.sh " + std::to_string(list.size()) + " build/yolo11-train device=" +
                             device_in + " ... (docs/dist.md), or pass device=" + std::to_string(list.front()) +
                             " for one GPU");
  if (f.local_rank >= static_cast<int>(list.size()))
    throw std::runtime_error("device=" + device_in + " lists " + std::to_string(list.size()) +
                             " GPUs but this process has LOCAL_RANK=" + std::to_string(f.local_rank) +
                             ": list one GPU per process on this machine");
  const int i = list[static_cast<size_t>(f.local_rank)];
  require_cuda(device_in, i, f);
  p.device = cuda(i);
  p.reason = "device=" + device_in + ": " + p.device.str() + " (DDP: entry LOCAL_RANK=" +
             std::to_string(f.local_rank) + " of the list)";
  return p;
}

DeviceFacts probe_device_facts(int world, int local_rank) {
  DeviceFacts f;
  f.built_with_cuda = compat::built_with_cuda();
  f.cuda_count = compat::cuda_available() ? compat::cuda_device_count() : 0;
  f.world = world;
  f.local_rank = local_rank;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) f.cuda_visible_devices = v;
  return f;
}

DevicePlan plan_device(const std::string& device, int world, int local_rank) {
  DevicePlan p = resolve_device(device, probe_device_facts(world, local_rank));
  if (p.cuda()) compat::set_current_device(p.cuda_index());
  return p;
}

}  // namespace yolo11::core
