// The reference's module tree, written from ours (see pt_save.h). Each of our blocks maps to one Ultralytics class
// with the attributes the reference's saved checkpoints carry (tests/model/test_pt_save.cpp compares the whole tree
// with a checkpoint the reference trainer wrote). Modules are pickled as torch 1.13 pickles them (the attribute set
// every later torch completes on load).
#include "yolo11/model/pt_save.h"

#include <ATen/ATen.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/pooling.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <stdexcept>

#include "yolo11/build_info.h"
#include "yolo11/io/pickler.h"
#include "yolo11/io/pt_checkpoint.h"
#include "yolo11/model/modules.h"
#include "yolo11/model/yolo.h"

namespace yolo11::model {

namespace {

namespace fs = std::filesystem;
using io::pickle::Pickler;

constexpr const char* kConv = "ultralytics.nn.modules.conv.Conv";
constexpr const char* kDWConv = "ultralytics.nn.modules.conv.DWConv";
constexpr const char* kConcat = "ultralytics.nn.modules.conv.Concat";
constexpr const char* kBlock = "ultralytics.nn.modules.block.";
constexpr const char* kDetect = "ultralytics.nn.modules.head.Detect";
constexpr const char* kSequential = "torch.nn.modules.container.Sequential";
constexpr const char* kModuleList = "torch.nn.modules.container.ModuleList";
constexpr const char* kUpsample = "torch.nn.modules.upsampling.Upsample";

/// A scalar of a YAML file as PyYAML's safe_load types it (the reference reads its YAML files with it): plain
/// integers and decimals are numbers, True/False/yes/no/on/off booleans, null/~/empty None, anything else (quoted
/// scalars, `None`, `nc`, `nn.Upsample`) a string.
void yaml_scalar(Pickler& p, const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() != "!") {  // "!" marks a quoted scalar
    static const std::regex int_re(R"([-+]?[0-9]+)"), float_re(R"([-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?)");
    if (std::regex_match(s, int_re)) {
      try {
        p.integer(std::stoll(s));
        return;
      } catch (const std::out_of_range&) {
      }
    }
    if (std::regex_match(s, float_re)) return p.real(std::stod(s));
    static const std::map<std::string, bool> bools = {{"true", true},  {"True", true},   {"TRUE", true}, {"yes", true},
                                                      {"Yes", true},   {"on", true},     {"On", true},   {"false", false},
                                                      {"False", false}, {"FALSE", false}, {"no", false},  {"No", false},
                                                      {"off", false},  {"Off", false}};
    if (auto it = bools.find(s); it != bools.end()) return p.boolean(it->second);
    if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return p.none();
  }
  p.str(s);
}

void yaml_value(Pickler& p, const YAML::Node& n) {
  if (n.IsNull()) return p.none();
  if (n.IsScalar()) return yaml_scalar(p, n);
  if (n.IsSequence()) {
    p.begin_list();
    for (const auto& e : n) yaml_value(p, e);
    return p.end_list();
  }
  p.begin_dict();
  for (const auto& kv : n) {
    yaml_scalar(p, kv.first);
    yaml_value(p, kv.second);
  }
  p.end_dict();
}

/// The module tree's writer: one call per module, tensors taken from the state by key and numbered as storages.
class TreeWriter {
 public:
  TreeWriter(Pickler& p, const std::vector<std::pair<std::string, at::Tensor>>& state) : p_(p) {
    for (const auto& [k, t] : state) state_.emplace(k, t);
  }

  std::vector<io::PtStorage> take_storages() { return std::move(storages_); }
  size_t tensors_written() const { return written_; }
  size_t state_size() const { return state_.size(); }

  /// A tensor stored as float16 (floating point, as the reference saves its models, unless `keep_dtype`) or as it is
  /// (integers).
  void tensor(const at::Tensor& value, bool parameter, bool keep_dtype = false) {
    at::Tensor t = value.detach().to(at::kCPU);
    if (at::isFloatingType(t.scalar_type()) && !keep_dtype) t = t.to(at::kHalf);
    t = t.contiguous();
    const std::string key = std::to_string(storages_.size());
    io::PtStorage s{key, std::string(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(t.nbytes()))};
    storages_.push_back(std::move(s));
    p_.tensor(key, t.scalar_type(), t.numel(), t.sizes(), t.strides(), 0, /*requires_grad=*/false, parameter);
  }

  /// Opens a module: its class, the nn.Module bookkeeping, its parameters and buffers (names with an undefined
  /// `expected` tensor are written as None, as a Conv2d without bias), and the children's dict.
  void begin(const std::string& cls, const std::string& prefix, const std::vector<std::pair<std::string, at::Tensor>>& params,
             const std::vector<std::pair<std::string, at::Tensor>>& buffers = {}) {
    p_.begin_object(cls);
    p_.str("training");
    p_.boolean(false);
    auto named = [&](const char* what, const std::vector<std::pair<std::string, at::Tensor>>& ts, bool parameter) {
      p_.str(what);
      p_.begin_ordered_dict();
      for (const auto& [name, expected] : ts) {
        p_.str(name);
        if (!expected.defined()) {
          p_.none();
          continue;
        }
        tensor(lookup(prefix + name, expected), parameter);
      }
      p_.end_ordered_dict();
    };
    named("_parameters", params, true);
    named("_buffers", buffers, false);
    p_.str("_non_persistent_buffers_set");
    p_.empty_set();
    for (const char* hooks : {"_backward_hooks", "_is_full_backward_hook", "_forward_hooks", "_forward_pre_hooks",
                              "_state_dict_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"}) {
      p_.str(hooks);
      if (std::strcmp(hooks, "_is_full_backward_hook") == 0) {
        p_.none();
      } else {
        p_.begin_ordered_dict();
        p_.end_ordered_dict();
      }
    }
    p_.str("_modules");
    p_.begin_ordered_dict();
  }
  /// Closes the children's dict; the class's own attributes follow, then end().
  void end_children() { p_.end_ordered_dict(); }
  void end() { p_.end_object(); }
  /// A module without children or parameters (activations, pooling, Concat, Upsample).
  void leaf(const std::string& cls) {
    begin(cls, "", {});
    end_children();
    end();
  }

  void attr(const char* k, int64_t v) { p_.str(k), p_.integer(v); }
  void attr(const char* k, bool v) { p_.str(k), p_.boolean(v); }
  void attr_real(const char* k, double v) { p_.str(k), p_.real(v); }
  void attr(const char* k, const char* v) { p_.str(k), p_.str(v); }
  void attr_none(const char* k) { p_.str(k), p_.none(); }
  void attr_pair(const char* k, int64_t v) {
    p_.str(k);
    p_.begin_tuple();
    p_.integer(v);
    p_.integer(v);
    p_.end_tuple();
  }
  void child(const std::string& name) { p_.str(name); }

  void conv2d(const torch::nn::Conv2dImpl& c, const std::string& prefix) {
    const auto& w = c.weight;
    const int64_t groups = c.options.groups(), k = w.size(2);
    const int64_t stride = (*c.options.stride())[0];
    const int64_t pad = k / 2;  // every conv here is built with Ultralytics' autopad (k // 2, dilation 1)
    begin("torch.nn.modules.conv.Conv2d", prefix, {{"weight", w}, {"bias", c.options.bias() ? c.bias : at::Tensor()}});
    end_children();
    attr("in_channels", w.size(1) * groups);
    attr("out_channels", w.size(0));
    attr_pair("kernel_size", k);
    attr_pair("stride", stride);
    attr_pair("padding", pad);
    attr_pair("dilation", 1);
    attr("transposed", false);
    attr_pair("output_padding", 0);
    attr("groups", groups);
    attr("padding_mode", "zeros");
    p_.str("_reversed_padding_repeated_twice");
    p_.begin_tuple();
    for (int i = 0; i < 4; ++i) p_.integer(pad);
    p_.end_tuple();
    end();
  }

  void batchnorm(const torch::nn::BatchNorm2dImpl& b, const std::string& prefix) {
    begin("torch.nn.modules.batchnorm.BatchNorm2d", prefix, {{"weight", b.weight}, {"bias", b.bias}},
          {{"running_mean", b.running_mean}, {"running_var", b.running_var}, {"num_batches_tracked", b.num_batches_tracked}});
    end_children();
    attr("num_features", b.options.num_features());
    attr_real("eps", b.options.eps());
    attr_real("momentum", b.options.momentum().value_or(0.1));
    attr("affine", b.options.affine());
    attr("track_running_stats", b.options.track_running_stats());
    end();
  }

  void conv(const ConvImpl& c, const std::string& prefix, const char* cls = kConv) {
    if (c.fused()) throw std::invalid_argument("save_pt: " + prefix + " is fused (write the .pt before fuse())");
    begin(cls, prefix, {});
    child("conv"), conv2d(*c.conv, prefix + "conv.");
    child("bn"), batchnorm(*c.bn, prefix + "bn.");
    child("act");
    if (c.options().act) {
      begin("torch.nn.modules.activation.SiLU", "", {});
      end_children();
      attr("inplace", true);
      end();
    } else {
      leaf("torch.nn.modules.linear.Identity");
    }
    end_children();
  }
  void conv_module(const ConvImpl& c, const std::string& prefix, const char* cls = kConv) {
    conv(c, prefix, cls);
    end();
  }

  void bottleneck(const BottleneckImpl& b, const std::string& prefix) {
    begin(std::string(kBlock) + "Bottleneck", prefix, {});
    child("cv1"), conv_module(*b.cv1, prefix + "cv1.");
    child("cv2"), conv_module(*b.cv2, prefix + "cv2.");
    end_children();
    attr("add", b.add());
    end();
  }

  void c3k(const C3kImpl& c, const std::string& prefix) {
    begin(std::string(kBlock) + "C3k", prefix, {});
    child("cv1"), conv_module(*c.cv1, prefix + "cv1.");
    child("cv2"), conv_module(*c.cv2, prefix + "cv2.");
    child("cv3"), conv_module(*c.cv3, prefix + "cv3.");
    child("m");
    container(kSequential, *c.m, prefix + "m.", [&](const torch::nn::Module& sub, const std::string& pre) {
      bottleneck(as<BottleneckImpl>(sub, pre), pre);
    });
    end_children();
    end();
  }

  void attention(const AttentionImpl& a, const std::string& prefix) {
    begin(std::string(kBlock) + "Attention", prefix, {});
    child("qkv"), conv_module(*a.qkv, prefix + "qkv.");
    child("proj"), conv_module(*a.proj, prefix + "proj.");
    child("pe"), conv_module(*a.pe, prefix + "pe.");
    end_children();
    attr("num_heads", a.num_heads());
    attr("head_dim", a.head_dim());
    attr("key_dim", a.key_dim());
    attr_real("scale", a.scale());
    end();
  }

  void psablock(const PSABlockImpl& b, const std::string& prefix) {
    begin(std::string(kBlock) + "PSABlock", prefix, {});
    child("attn"), attention(*b.attn, prefix + "attn.");
    child("ffn");
    container(kSequential, *b.ffn, prefix + "ffn.", [&](const torch::nn::Module& sub, const std::string& pre) {
      conv_module(as<ConvImpl>(sub, pre), pre);
    });
    end_children();
    attr("add", b.add());
    end();
  }

  /// A Sequential / ModuleList of children "0", "1", ... each written by `each`.
  template <class Each>
  void container(const char* cls, const torch::nn::Module& m, const std::string& prefix, Each each) {
    begin(cls, prefix, {});
    for (const auto& item : m.named_children()) {
      child(item.key());
      each(*item.value(), prefix + item.key() + ".");
    }
    end_children();
    end();
  }

  template <class T>
  static const T& as(const torch::nn::Module& m, const std::string& prefix) {
    const auto* t = dynamic_cast<const T*>(&m);
    if (t == nullptr) throw std::invalid_argument("save_pt: unexpected module at " + prefix + " (" + m.name() + ")");
    return *t;
  }

 private:
  const at::Tensor& lookup(const std::string& key, const at::Tensor& expected) {
    auto it = state_.find(key);
    if (it == state_.end()) throw std::invalid_argument("save_pt: the weights have no '" + key + "'");
    if (it->second.sizes() != expected.sizes())
      throw std::invalid_argument("save_pt: '" + key + "' has shape " + c10::str(it->second.sizes()) + ", the model " +
                                  c10::str(expected.sizes()));
    ++written_;
    return it->second;
  }

  Pickler& p_;
  std::map<std::string, at::Tensor> state_;
  std::vector<io::PtStorage> storages_;
  size_t written_ = 0;
};

/// The reference's "from" of a YAML row: an int or a list of ints, as written.
std::vector<int64_t> raw_from(const YAML::Node& row) {
  std::vector<int64_t> f;
  if (row[0].IsSequence()) {
    for (const auto& x : row[0]) f.push_back(x.as<int64_t>());
  } else {
    f.push_back(row[0].as<int64_t>());
  }
  return f;
}

std::string now_iso() {
  const auto now = std::chrono::system_clock::now();
  const auto t = std::chrono::system_clock::to_time_t(now);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return std::string(buf) + "." + std::to_string(1000000 + us).substr(1);
}

}  // namespace

void save_pt(const YOLOImpl& arch, const std::vector<std::pair<std::string, at::Tensor>>& state,
             const std::string& path, const PtSaveInfo& info) {
  if (arch.is_fused()) throw std::invalid_argument("save_pt: the model is fused (write the .pt before fuse())");
  const ModelOptions& o = arch.options();
  const std::string yaml_path = resolve_model_yaml(o.yaml);
  const YAML::Node root = YAML::LoadFile(yaml_path);
  std::vector<YAML::Node> rows;
  for (const char* section : {"backbone", "head"})
    for (const auto& r : root[section]) rows.push_back(r);
  const auto& layers = arch.layers();
  if (rows.size() != layers.size())
    throw std::invalid_argument("save_pt: " + yaml_path + " has " + std::to_string(rows.size()) + " rows, the model " +
                                std::to_string(layers.size()) + " layers");
  const int64_t nc = arch.nc();
  YAML::Node args = info.args_yaml.empty() ? YAML::Node(YAML::NodeType::Map) : YAML::Load(info.args_yaml);
  if (!args.IsMap()) throw std::invalid_argument("save_pt: the run's settings are not a YAML mapping");

  Pickler p;
  TreeWriter w(p, state);
  p.begin_dict();
  p.str("date"), p.str(info.date.empty() ? now_iso() : info.date);
  p.str("version"), p.str(std::string("yolo11-cpp ") + build::kVersion);
  p.str("epoch"), p.integer(info.epoch);
  p.str("best_fitness");
  if (info.best_fitness) {
    p.real(*info.best_fitness);
  } else {
    p.none();
  }

  // ---- model: ultralytics.nn.tasks.DetectionModel ----
  p.str("model");
  w.begin("ultralytics.nn.tasks.DetectionModel", "", {});
  w.child("model");
  w.begin(kSequential, "", {});
  std::vector<int64_t> save;
  const auto children = arch.model->named_children();
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerInfo& li = layers[i];
    const torch::nn::Module& m = *children[i].value();
    const std::string pre = "model." + std::to_string(i) + ".";
    const auto from = raw_from(rows[i]);
    for (const int64_t f : from)
      if (f != -1) save.push_back(f % static_cast<int64_t>(i));
    w.child(std::to_string(i));
    std::string cls;
    if (li.type == "Conv") {
      cls = kConv;
      w.conv(TreeWriter::as<ConvImpl>(m, pre), pre);
    } else if (li.type == "C3k2") {
      const auto& c = TreeWriter::as<C3k2Impl>(m, pre);
      cls = std::string(kBlock) + "C3k2";
      w.begin(cls, pre, {});
      w.child("cv1"), w.conv_module(*c.cv1, pre + "cv1.");
      w.child("cv2"), w.conv_module(*c.cv2, pre + "cv2.");
      w.child("m");
      w.container(kModuleList, *c.m, pre + "m.", [&](const torch::nn::Module& sub, const std::string& p2) {
        if (const auto* k = dynamic_cast<const C3kImpl*>(&sub)) return w.c3k(*k, p2);
        w.bottleneck(TreeWriter::as<BottleneckImpl>(sub, p2), p2);
      });
      w.end_children();
      w.attr("c", c.hidden());
    } else if (li.type == "SPPF") {
      const auto& s = TreeWriter::as<SPPFImpl>(m, pre);
      cls = std::string(kBlock) + "SPPF";
      w.begin(cls, pre, {});
      w.child("cv1"), w.conv_module(*s.cv1, pre + "cv1.");
      w.child("cv2"), w.conv_module(*s.cv2, pre + "cv2.");
      w.child("m");
      w.begin("torch.nn.modules.pooling.MaxPool2d", "", {});
      w.end_children();
      const int64_t k = (*s.m->options.kernel_size())[0];
      w.attr("kernel_size", k);
      w.attr("stride", int64_t{1});
      w.attr("padding", k / 2);
      w.attr("dilation", int64_t{1});
      w.attr("return_indices", false);
      w.attr("ceil_mode", false);
      w.end();
      w.end_children();
      w.attr("n", int64_t{3});
      w.attr("add", false);
    } else if (li.type == "C2PSA") {
      const auto& c = TreeWriter::as<C2PSAImpl>(m, pre);
      cls = std::string(kBlock) + "C2PSA";
      w.begin(cls, pre, {});
      w.child("cv1"), w.conv_module(*c.cv1, pre + "cv1.");
      w.child("cv2"), w.conv_module(*c.cv2, pre + "cv2.");
      w.child("m");
      w.container(kSequential, *c.m, pre + "m.", [&](const torch::nn::Module& sub, const std::string& p2) {
        w.psablock(TreeWriter::as<PSABlockImpl>(sub, p2), p2);
      });
      w.end_children();
      w.attr("c", c.hidden());
    } else if (li.type == "Upsample") {
      const auto& u = TreeWriter::as<UpsampleImpl>(m, pre);
      cls = kUpsample;
      w.begin(cls, pre, {});
      w.end_children();
      w.attr("name", "Upsample");
      w.attr_none("size");
      w.attr_real("scale_factor", static_cast<double>(u.factor()));
      w.attr("mode", "nearest");
      w.attr_none("align_corners");
      w.attr_none("recompute_scale_factor");
    } else if (li.type == "Concat") {
      cls = kConcat;
      w.begin(cls, pre, {});
      w.end_children();
      w.attr("d", TreeWriter::as<ConcatImpl>(m, pre).dim());
    } else if (li.type == "Detect") {
      const auto& d = TreeWriter::as<DetectImpl>(m, pre);
      cls = kDetect;
      w.begin(cls, pre, {});
      w.child("cv2");
      w.container(kModuleList, *d.cv2, pre + "cv2.", [&](const torch::nn::Module& seq, const std::string& p2) {
        w.container(kSequential, seq, p2, [&](const torch::nn::Module& sub, const std::string& p3) {
          if (const auto* c2d = dynamic_cast<const torch::nn::Conv2dImpl*>(&sub)) return w.conv2d(*c2d, p3);
          w.conv_module(TreeWriter::as<ConvImpl>(sub, p3), p3);
        });
      });
      w.child("cv3");
      w.container(kModuleList, *d.cv3, pre + "cv3.", [&](const torch::nn::Module& seq, const std::string& p2) {
        w.container(kSequential, seq, p2, [&](const torch::nn::Module& sub, const std::string& p3) {
          if (const auto* c2d = dynamic_cast<const torch::nn::Conv2dImpl*>(&sub)) return w.conv2d(*c2d, p3);
          // (DWConv k3, Conv 1x1): the depthwise conv is the reference's DWConv class
          w.container(kSequential, sub, p3, [&](const torch::nn::Module& c, const std::string& p4) {
            const bool first = p4 == p3 + "0.";
            w.conv_module(TreeWriter::as<ConvImpl>(c, p4), p4, first ? kDWConv : kConv);
          });
        });
      });
      w.child("dfl");
      const auto& dfl = *d.dfl;
      w.begin(std::string(kBlock) + "DFL", pre + "dfl.", {});
      w.child("conv"), w.conv2d(*dfl.conv, pre + "dfl.conv.");
      w.end_children();
      w.attr("c1", dfl.c1());
      w.end();
      w.end_children();
      w.attr("nc", d.nc());
      w.attr("nl", static_cast<int64_t>(d.strides().size()));
      w.attr("reg_max", d.reg_max());
      w.attr("no", d.no());
      p.str("stride");
      std::vector<float> s(d.strides().begin(), d.strides().end());
      w.tensor(at::tensor(s, at::kFloat), false);  // float16 like the reference's half() model
    } else {
      throw std::invalid_argument("save_pt: layer " + std::to_string(i) + " is a " + li.type +
                                  ", which has no Ultralytics class mapping here");
    }
    w.attr("np", li.params);
    w.attr("i", static_cast<int64_t>(i));
    p.str("f");
    if (from.size() == 1 && !rows[i][0].IsSequence()) {
      p.integer(from[0]);
    } else {
      p.begin_list();
      for (const int64_t f : from) p.integer(f);
      p.end_list();
    }
    w.attr("type", cls.c_str());
    if (li.type == "Detect") w.attr("inplace", true);
    w.end();
  }
  w.end_children();  // Sequential
  w.end();
  w.end_children();  // DetectionModel's children

  // The model's yaml as the reference keeps it: the file's keys (nc overridden), then scale, yaml_file, channels.
  p.str("yaml");
  p.begin_dict();
  for (const auto& kv : root) {
    yaml_scalar(p, kv.first);
    if (kv.first.Scalar() == "nc") {
      p.integer(nc);
    } else {
      yaml_value(p, kv.second);
    }
  }
  if (!root["nc"]) p.str("nc"), p.integer(nc);
  p.str("scale"), p.str(o.scale);
  const fs::path yp(o.yaml);
  std::string yaml_file = yp.filename().string();
  if (!guess_model_scale(yaml_file)) yaml_file = yp.stem().string() + o.scale + yp.extension().string();
  p.str("yaml_file"), p.str(yaml_file);
  p.str("channels"), p.integer(3);
  p.end_dict();

  std::sort(save.begin(), save.end());
  save.erase(std::unique(save.begin(), save.end()), save.end());
  p.str("save");
  p.begin_list();
  for (const int64_t s : save) p.integer(s);
  p.end_list();
  p.str("names");
  p.begin_dict();
  for (int64_t c = 0; c < nc; ++c) {
    p.integer(c);
    p.str(c < static_cast<int64_t>(info.names.size()) ? info.names[static_cast<size_t>(c)] : std::to_string(c));
  }
  p.end_dict();
  w.attr("inplace", true);
  p.str("stride");
  std::vector<float> strides(arch.strides().begin(), arch.strides().end());
  w.tensor(at::tensor(strides, at::kFloat), false, /*keep_dtype=*/true);  // not a parameter: half() left it float32
  w.attr("nc", nc);
  p.str("args");
  yaml_value(p, args);
  w.attr_none("criterion");
  w.end();

  p.str("ema"), p.none();
  p.str("updates"), p.none();
  p.str("optimizer"), p.none();
  p.str("scaler"), p.none();
  p.str("train_args");
  yaml_value(p, args);
  p.end_dict();
  if (w.tensors_written() != w.state_size())
    throw std::invalid_argument("save_pt: the weights hold " + std::to_string(w.state_size()) + " tensors, the model " +
                                std::to_string(w.tensors_written()));
  io::write_pt_archive(path, fs::path(path).stem().string(), p.finish(), w.take_storages());
}

}  // namespace yolo11::model
