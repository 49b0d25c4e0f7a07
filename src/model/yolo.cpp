#include "yolo11/model/yolo.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <cctype>
#include <iomanip>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "yolo11/build_info.h"

namespace yolo11::model {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& yaml, const std::string& where, const std::string& what) {
  throw std::runtime_error("model YAML " + yaml + ": " + where + ": " + what);
}

int64_t make_divisible(double x, int64_t divisor) {
  return static_cast<int64_t>(std::ceil(x / static_cast<double>(divisor))) * divisor;
}

std::string node_text(const YAML::Node& n) {
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

/// Integer arg `i` of a row, `def` when absent; the string "nc" resolves to nc.
int64_t int_arg(const YAML::Node& args, size_t i, int64_t def, int64_t nc, const std::string& yaml,
                const std::string& where) {
  if (!args.IsSequence() || i >= args.size()) return def;
  const auto& a = args[i];
  if (a.IsScalar() && a.Scalar() == "nc") return nc;
  try {
    return a.as<int64_t>();
  } catch (const YAML::Exception&) {
    fail(yaml, where, "argument " + std::to_string(i) + " = " + node_text(a) + " is not an integer");
  }
}

bool bool_arg(const YAML::Node& args, size_t i, bool def, const std::string& yaml, const std::string& where) {
  if (!args.IsSequence() || i >= args.size()) return def;
  const std::string s = args[i].Scalar();
  if (s == "True" || s == "true") return true;
  if (s == "False" || s == "false") return false;
  fail(yaml, where, "argument " + std::to_string(i) + " = " + node_text(args[i]) + " is not a boolean");
}

double float_arg(const YAML::Node& args, size_t i, double def, const std::string& yaml, const std::string& where) {
  if (!args.IsSequence() || i >= args.size()) return def;
  try {
    return args[i].as<double>();
  } catch (const YAML::Exception&) {
    fail(yaml, where, "argument " + std::to_string(i) + " = " + node_text(args[i]) + " is not a number");
  }
}

int64_t count_params(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

std::string with_commas(int64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

/// thop-style multiply-accumulates of every Conv2d / BatchNorm2d below `m` whose output is h × w.
double conv_macs(const torch::nn::Module& m, int64_t h, int64_t w) {
  double macs = 0;
  for (const auto& sub : m.modules(/*include_self=*/true)) {
    if (const auto* c = dynamic_cast<const torch::nn::Conv2dImpl*>(sub.get())) {
      const auto& ws = c->weight.sizes();  // (c2, c1/g, kh, kw)
      macs += static_cast<double>(h * w) * static_cast<double>(ws[0] * ws[1] * ws[2] * ws[3]);
    }
    // thop (what Ultralytics' get_flops uses) books an affine BatchNorm as 4 "ops" per output element.
    if (const auto* b = dynamic_cast<const torch::nn::BatchNorm2dImpl*>(sub.get()))
      macs += 4.0 * static_cast<double>(h * w * b->options.num_features());
  }
  return macs;
}

}  // namespace

std::string resolve_model_yaml(const std::string& path) {
  if (fs::exists(path)) return path;
  const fs::path root = build::resource_dir();
  const fs::path in_repo = root / path;
  if (fs::exists(in_repo)) return in_repo.string();
  const fs::path in_models = root / "configs" / "models" / fs::path(path).filename();
  if (fs::exists(in_models)) return in_models.string();
  const std::string also = in_repo == in_models ? in_repo.string() : in_repo.string() + " and " + in_models.string();
  throw std::runtime_error("model YAML '" + path + "' not found (also looked at " + also +
                           "); pass model=configs/models/yolo11.yaml");
}

void to_channels_last(torch::nn::Module& m) {
  torch::NoGradGuard no_grad;
  for (auto& p : m.parameters())
    if (p.dim() == 4) p.set_data(p.contiguous(torch::MemoryFormat::ChannelsLast));
  for (auto& b : m.buffers())
    if (b.dim() == 4) b.set_data(b.contiguous(torch::MemoryFormat::ChannelsLast));
}

std::optional<std::string> guess_model_scale(const std::string& path) {
  static const std::regex re(R"(yolo[v]?\d+([nslmx])(?:[-_.].*)?$)", std::regex::icase);
  std::smatch m;
  const std::string name = fs::path(path).filename().string();
  if (std::regex_match(name, m, re)) return std::string(1, static_cast<char>(std::tolower(m[1].str()[0])));
  return std::nullopt;
}

namespace {
/// Ultralytics' model-name convention: "yolo11n.yaml" means yolo11.yaml at scale n (the file with the scale
/// letter usually does not exist). Returns the options with yaml/scale rewritten when that applies.
ModelOptions unify_model_name(ModelOptions o) {
  if (fs::exists(o.yaml)) return o;
  const auto scale = guess_model_scale(o.yaml);
  if (!scale) return o;
  static const std::regex strip(R"((\d+)[nslmx]((?:[-_.].*)?)$)", std::regex::icase);
  const fs::path p(o.yaml);
  const std::string unified = (p.parent_path() / std::regex_replace(p.filename().string(), strip, "$1$2")).string();
  if (*scale != o.scale) spdlog::info("model '{}': using {} with scale '{}' (was '{}')", o.yaml, unified, *scale, o.scale);
  o.yaml = unified;
  o.scale = *scale;
  return o;
}
}  // namespace

YOLOImpl::YOLOImpl(const ModelOptions& opts) : o_(unify_model_name(opts)) {
  const ModelOptions& o = o_;
  const std::string yaml = resolve_model_yaml(o.yaml);
  YAML::Node root;
  try {
    root = YAML::LoadFile(yaml);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error("model YAML " + yaml + ": cannot parse: " + e.what());
  }
  if (!root["scales"] || !root["scales"].IsMap()) fail(yaml, "key 'scales'", "missing or not a mapping");
  const auto scale = root["scales"][o.scale];
  if (!scale || !scale.IsSequence() || scale.size() != 3) {
    std::string have;
    for (const auto& kv : root["scales"]) have += (have.empty() ? "" : ", ") + kv.first.Scalar();
    fail(yaml, "scales", "scale '" + o.scale + "' not defined (available: " + have + ")");
  }
  const double depth = scale[0].as<double>(), width = scale[1].as<double>();
  const auto max_channels = scale[2].as<int64_t>();
  const int64_t nc = o.nc;
  if (nc <= 0) throw std::runtime_error("model: nc must be positive (got " + std::to_string(nc) + ")");

  std::vector<YAML::Node> rows;
  for (const char* section : {"backbone", "head"}) {
    if (!root[section] || !root[section].IsSequence()) fail(yaml, std::string("key '") + section + "'", "missing or not a list");
    for (const auto& r : root[section]) rows.push_back(r);
  }

  model = register_module("model", torch::nn::ModuleList());
  std::vector<int64_t> ch;       // output channels per layer
  std::vector<int64_t> strides;  // output stride per layer
  save_.assign(rows.size(), false);
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    const std::string where = "layer " + std::to_string(i) + " " + node_text(row);
    if (!row.IsSequence() || row.size() != 4) fail(yaml, where, "expected [from, repeats, module, args]");
    std::vector<int64_t> from;
    auto resolve = [&](int64_t f) {
      const int64_t abs = f < 0 ? static_cast<int64_t>(i) + f : f;
      if (abs < 0 || abs >= static_cast<int64_t>(i)) fail(yaml, where, "'from' index " + std::to_string(f) + " out of range");
      return abs;
    };
    try {
      if (row[0].IsSequence()) {
        for (const auto& f : row[0]) from.push_back(resolve(f.as<int64_t>()));
      } else {
        const auto f = row[0].as<int64_t>();
        from.push_back(i == 0 && f == -1 ? -1 : resolve(f));
      }
    } catch (const YAML::Exception&) {
      fail(yaml, where, "'from' must be an integer or a list of integers");
    }
    int64_t n = row[1].as<int64_t>();
    if (n > 1) n = std::max<int64_t>(static_cast<int64_t>(std::nearbyint(static_cast<double>(n) * depth)), 1);
    std::string type = row[2].Scalar();
    if (type.rfind("nn.", 0) == 0) type = type.substr(3);
    const auto& args = row[3];
    const int64_t c1 = from[0] < 0 ? 3 : ch[static_cast<size_t>(from[0])];
    const int64_t s_in = from[0] < 0 ? 1 : strides[static_cast<size_t>(from[0])];
    auto scaled_c2 = [&]() {
      const int64_t c2 = int_arg(args, 0, 0, nc, yaml, where);
      if (c2 <= 0) fail(yaml, where, "output channels must be positive");
      return c2 != nc ? make_divisible(static_cast<double>(std::min(c2, max_channels)) * width, 8) : c2;
    };
    const bool repeat_inside = type == "C3k2" || type == "C2PSA" || type == "C3k";
    if (n > 1 && !repeat_inside)
      fail(yaml, where, "repeats > 1 are only supported for C3k2, C3k and C2PSA");

    LayerInfo info;
    info.index = static_cast<int64_t>(i);
    info.from = from;
    info.type = type;
    info.repeats = n;
    int64_t c2 = c1, stride = s_in;
    std::shared_ptr<torch::nn::Module> mod;
    std::function<torch::Tensor(const std::vector<torch::Tensor>&)> fn;
    if (type == "Conv" || type == "DWConv") {
      c2 = scaled_c2();
      const int64_t k = int_arg(args, 1, 1, nc, yaml, where), s = int_arg(args, 2, 1, nc, yaml, where);
      Conv m = type == "Conv" ? Conv(ConvOptions{c1, c2, k, s}) : DWConv(c1, c2, k, s);
      stride = s_in * s;
      info.args = {c1, c2, k, s};
      mod = m.ptr();
      fn = [m](const std::vector<torch::Tensor>& x) mutable { return m->forward(x[0]); };
    } else if (type == "C3k2") {
      c2 = scaled_c2();
      bool c3k = bool_arg(args, 1, false, yaml, where);
      const double e = float_arg(args, 2, 0.5, yaml, where);
      if (o.scale == "m" || o.scale == "l" || o.scale == "x") c3k = true;  // reference: C3k blocks for M/L/X
      C3k2 m(C3k2Options{c1, c2, n, c3k, e});
      info.args = {c1, c2, n, c3k ? 1 : 0};
      mod = m.ptr();
      fn = [m](const std::vector<torch::Tensor>& x) mutable { return m->forward(x[0]); };
    } else if (type == "C3k") {
      c2 = scaled_c2();
      C3k m(C3kOptions{c1, c2, n});
      info.args = {c1, c2, n};
      mod = m.ptr();
      fn = [m](const std::vector<torch::Tensor>& x) mutable { return m->forward(x[0]); };
    } else if (type == "SPPF") {
      c2 = scaled_c2();
      const int64_t k = int_arg(args, 1, 5, nc, yaml, where);
      SPPF m(SPPFOptions{c1, c2, k, o.sppf_act});
      info.args = {c1, c2, k};
      mod = m.ptr();
      fn = [m](const std::vector<torch::Tensor>& x) mutable { return m->forward(x[0]); };
    } else if (type == "C2PSA") {
      c2 = scaled_c2();
      C2PSA m(C2PSAOptions{c1, c2, n});
      info.args = {c1, c2, n};
      mod = m.ptr();
      fn = [m](const std::vector<torch::Tensor>& x) mutable { return m->forward(x[0]); };
    } else if (type == "Upsample") {
      const int64_t f = int_arg(args, 1, 2, nc, yaml, where);
      if (args.size() > 2 && args[2].Scalar() != "nearest") fail(yaml, where, "only mode 'nearest' is supported");
      if (f <= 0 || s_in % f != 0) fail(yaml, where, "scale factor must divide the input stride");
      Upsample m(f);
      stride = s_in / f;
      info.args = {f};
      mod = m.ptr();
      fn = [m](const std::vector<torch::Tensor>& x) { return m->forward(x[0]); };
    } else if (type == "Concat") {
      const int64_t dim = int_arg(args, 0, 1, nc, yaml, where);
      if (dim != 1) fail(yaml, where, "only channel concatenation (dim 1) is supported");
      c2 = 0;
      for (const auto f : from) {
        c2 += ch[static_cast<size_t>(f)];
        if (strides[static_cast<size_t>(f)] != s_in) fail(yaml, where, "inputs have different strides");
      }
      Concat m(dim);
      info.args = {dim};
      mod = m.ptr();
      fn = [m](const std::vector<torch::Tensor>& x) { return m->forward(x); };
    } else if (type == "Detect") {
      if (i + 1 != rows.size()) fail(yaml, where, "Detect must be the last layer");
      const int64_t dnc = int_arg(args, 0, nc, nc, yaml, where);
      DetectOptions d{dnc, {}, {}, 16};
      for (const auto f : from) {
        d.ch.push_back(ch[static_cast<size_t>(f)]);
        d.strides.push_back(strides[static_cast<size_t>(f)]);
      }
      detect_ = Detect(d);
      c2 = detect_->no();
      stride = d.strides.back();
      info.args = d.ch;
      mod = detect_.ptr();
    } else {
      fail(yaml, where,
           "unknown module '" + row[2].Scalar() +
               "' (supported: Conv, DWConv, C3k2, C3k, SPPF, C2PSA, nn.Upsample, Concat, Detect)");
    }
    model->push_back(mod);  // named "<i>" by position
    info.c2 = c2;
    info.stride = stride;
    info.params = count_params(*mod);
    info_.push_back(info);
    layers_.push_back(Layer{from, std::move(fn)});
    ch.push_back(c2);
    strides.push_back(stride);
    for (const auto f : from)
      if (f >= 0 && f != static_cast<int64_t>(i) - 1) save_[static_cast<size_t>(f)] = true;
  }
  if (!detect_) fail(yaml, "head", "the last layer must be Detect");
  // Detect inputs are gathered by index, so they must be kept even when adjacent.
  for (const auto f : layers_.back().from) save_[static_cast<size_t>(f)] = true;
}

void YOLOImpl::check_input(const torch::Tensor& x) const {
  const int64_t s = strides().back();
  if (x.dim() != 4 || x.size(1) != 3 || x.size(2) % s != 0 || x.size(3) % s != 0) {
    std::ostringstream ss;
    ss << "YOLO forward: input " << x.sizes() << " must be (B, 3, H, W) with H and W multiples of " << s
       << " (letterbox / pad the images to a multiple of the max stride)";
    throw std::invalid_argument(ss.str());
  }
}

std::vector<torch::Tensor> YOLOImpl::forward_feats(const torch::Tensor& x) {
  check_input(x);
  std::vector<torch::Tensor> outs(layers_.size());
  torch::Tensor cur = x;
  for (size_t i = 0; i + 1 < layers_.size(); ++i) {
    const auto& L = layers_[i];
    std::vector<torch::Tensor> in;
    in.reserve(L.from.size());
    for (const auto f : L.from) in.push_back(f < 0 ? x : (f == static_cast<int64_t>(i) - 1 ? cur : outs[static_cast<size_t>(f)]));
    cur = L.fn(in);
    if (save_[i]) outs[i] = cur;
  }
  std::vector<torch::Tensor> det_in;
  for (const auto f : layers_.back().from) det_in.push_back(outs[static_cast<size_t>(f)]);
  return detect_->forward(det_in);
}

std::vector<torch::Tensor> YOLOImpl::forward_layers(const torch::Tensor& x, const std::vector<int64_t>& keep) {
  check_input(x);
  std::vector<torch::Tensor> outs(layers_.size());
  for (size_t i = 0; i + 1 < layers_.size(); ++i) {
    std::vector<torch::Tensor> in;
    for (const auto f : layers_[i].from) in.push_back(f < 0 ? x : outs[static_cast<size_t>(f)]);
    outs[i] = layers_[i].fn(in);
  }
  std::vector<torch::Tensor> det_in;
  for (const auto f : layers_.back().from) det_in.push_back(outs[static_cast<size_t>(f)]);
  std::vector<torch::Tensor> result;
  for (const auto k : keep) {
    if (k < 0 || k >= static_cast<int64_t>(layers_.size()) - 1)
      throw std::out_of_range("forward_layers: layer " + std::to_string(k) + " is not a non-Detect layer index");
    result.push_back(outs[static_cast<size_t>(k)]);
  }
  return result;
}

torch::Tensor YOLOImpl::decode(const std::vector<torch::Tensor>& feats) const { return detect_->decode(feats); }

torch::Tensor YOLOImpl::forward(const torch::Tensor& x) { return decode(forward_feats(x)); }

int64_t YOLOImpl::nc() const { return detect_->nc(); }
int64_t YOLOImpl::reg_max() const { return detect_->reg_max(); }
const std::vector<int64_t>& YOLOImpl::strides() const { return detect_->strides(); }

void YOLOImpl::fuse() {
  if (fused_) return;
  for (const auto& m : modules(/*include_self=*/false))
    if (auto* c = dynamic_cast<ConvImpl*>(m.get())) c->fuse();
  fused_ = true;
  for (size_t i = 0; i < info_.size(); ++i) info_[i].params = count_params(*model->ptr(i));
}

int64_t YOLOImpl::num_params() const { return count_params(*this); }

int64_t YOLOImpl::num_gradients() const {
  int64_t n = 0;
  for (const auto& p : parameters())
    if (p.requires_grad()) n += p.numel();
  return n;
}

int64_t YOLOImpl::num_layers() const {
  // Ultralytics counts leaf modules (named_modules without children, duplicates removed). Our tree mirrors the
  // reference one except for activations: its Conv holds `act`, one SiLU instance shared by every Conv (so
  // counted once) or a fresh nn.Identity per Conv without activation.
  int64_t n = 0;
  bool any_silu = false;
  for (const auto& m : modules(false)) {
    if (m->children().empty()) ++n;
    if (const auto* c = dynamic_cast<const ConvImpl*>(m.get())) {
      if (c->options().act)
        any_silu = true;
      else
        ++n;
    }
  }
  return n + (any_silu ? 1 : 0);
}

double YOLOImpl::gflops(int64_t imgsz) const {
  double macs = 0;
  for (size_t i = 0; i < info_.size(); ++i) {
    const auto& L = info_[i];
    if (L.type == "Detect") {
      for (size_t l = 0; l < detect_->strides().size(); ++l) {
        const int64_t s = detect_->strides()[l];
        const int64_t h = (imgsz + s - 1) / s;
        macs += conv_macs(*detect_->cv2->ptr(l), h, h) + conv_macs(*detect_->cv3->ptr(l), h, h);
      }
    } else {
      const int64_t h = (imgsz + L.stride - 1) / L.stride;
      macs += conv_macs(*model->ptr(i), h, h);
    }
  }
  return 2.0 * macs / 1e9;
}

std::string YOLOImpl::summary(int64_t imgsz) const {
  std::ostringstream ss;
  ss << "YOLO11" << o_.scale << (fused_ ? " summary (fused): " : " summary: ") << num_layers() << " layers, "
     << with_commas(num_params()) << " parameters, " << with_commas(num_gradients()) << " gradients, "
     << std::fixed << std::setprecision(1) << gflops(imgsz) << " GFLOPs";
  return ss.str();
}

std::string YOLOImpl::table() const {
  std::ostringstream ss;
  ss << std::setw(4) << "" << std::setw(20) << "from" << std::setw(4) << "n" << std::setw(11) << "params"
     << "  " << std::left << std::setw(10) << "module" << "arguments\n" << std::right;
  for (const auto& L : info_) {
    std::string from, args;
    for (const auto f : L.from) from += (from.empty() ? "" : ", ") + std::to_string(f);
    if (L.from.size() > 1) from = "[" + from + "]";
    for (const auto a : L.args) args += (args.empty() ? "" : ", ") + std::to_string(a);
    ss << std::setw(4) << L.index << std::setw(20) << from << std::setw(4) << L.repeats << std::setw(11)
       << with_commas(L.params) << "  " << std::left << std::setw(10) << L.type << "[" << args << "]\n" << std::right;
  }
  return ss.str();
}

}  // namespace yolo11::model
