// TrainConfig's key table (src/config/config_keys.h): parsers, range checks and YAML forms of every key.
#include "config_keys.h"

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace yolo11::config::detail {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

[[noreturn]] void bad_value(const std::string& key, const std::string& where, const Raw& v, const std::string& why) {
  throw std::runtime_error("config: bad value for '" + core::printable(key) + "' (" + where +
                           "): " + core::printable(v.display()) + " " + why);
}

std::optional<bool> parse_bool(const std::string& t) {
  const std::string l = lower(t);
  if (l == "true") return true;
  if (l == "false") return false;
  return std::nullopt;
}

std::optional<int64_t> parse_int(const std::string& t) {
  if (t.empty()) return std::nullopt;
  size_t pos = 0;
  try {
    const long long v = std::stoll(t, &pos, 10);
    if (pos != t.size()) return std::nullopt;
    return static_cast<int64_t>(v);
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<double> parse_float(const std::string& t) {
  if (t.empty()) return std::nullopt;
  size_t pos = 0;
  try {
    const double v = std::stod(t, &pos);
    if (pos != t.size() || !std::isfinite(v)) return std::nullopt;
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

std::string fmt_num(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os.precision(15);
  os << v;
  return os.str();
}

/// "in [lo, hi]" style description of a numeric range (open ends written with < / >).
std::string range_text(double lo, double hi, bool lo_open, bool hi_open) {
  if (std::isinf(lo) && std::isinf(hi)) return "any number";
  if (std::isinf(hi)) return std::string(lo_open ? "> " : ">= ") + fmt_num(lo);
  if (std::isinf(lo)) return std::string(hi_open ? "< " : "<= ") + fmt_num(hi);
  return std::string(lo_open ? "(" : "[") + fmt_num(lo) + ", " + fmt_num(hi) + (hi_open ? ")" : "]");
}

// ---- factories for the common kinds ---------------------------------------------------------------------------

void need_scalar(const std::string& key, const std::string& where, const Raw& v, const std::string& what) {
  if (v.is_list) bad_value(key, where, v, "is a list; expected " + what);
}

/// A double as the shortest decimal that reads back to the same value (0.7, not 0.69999999999999996).
YAML::Node float_node(double x) {
  char buf[32];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  std::string t = buf;
  if (t.find_first_of(".eEn") == std::string::npos) t += ".0";  // stays a float when read back (1 → 1.0)
  return YAML::Node(t);
}

/// The non-negative integers of a list value ([0, 2]) or of one scalar (2); `expect` ends the error for a bad element.
std::vector<int64_t> index_list(const std::string& key, const std::string& where, const Raw& v,
                                const std::string& expect) {
  std::vector<int64_t> out;
  for (const auto& s : v.is_list ? v.list : std::vector<std::string>{v.text}) {
    auto i = parse_int(trim(s));
    if (!i || *i < 0) bad_value(key, where, v, "has a bad element '" + s + "'; " + expect);
    out.push_back(*i);
  }
  return out;
}

/// A list of integers as a flow sequence ([0, 2]); null when empty.
YAML::Node index_list_node(const std::vector<int64_t>& v) {
  if (v.empty()) return YAML::Node(YAML::NodeType::Null);
  YAML::Node n(YAML::NodeType::Sequence);
  for (auto i : v) n.push_back(i);
  n.SetStyle(YAML::EmitterStyle::Flow);
  return n;
}

template <class S>
KeyDef bool_key(const std::string& name, bool S::*m) {
  return {name,
          [name, m](TrainConfig& c, const Raw& v, const std::string& where) {
            need_scalar(name, where, v, "true or false");
            auto b = v.is_null ? std::nullopt : parse_bool(v.text);
            if (!b) bad_value(name, where, v, "is not a bool; expected true or false");
            c.*m = *b;
          },
          [m](const TrainConfig& c) { return YAML::Node(c.*m); }, S::kSection};
}

template <class S>
KeyDef int_key(const std::string& name, int64_t S::*m, double lo = -kInf, double hi = kInf,
               const std::string& hint = "") {
  return {name,
          [=](TrainConfig& c, const Raw& v, const std::string& where) {
            need_scalar(name, where, v, "an integer");
            auto i = v.is_null ? std::nullopt : parse_int(v.text);
            if (!i)
              bad_value(name, where, v,
                        "is not an integer; expected an integer " + range_text(lo, hi, false, false) + hint);
            if (static_cast<double>(*i) < lo || static_cast<double>(*i) > hi)
              bad_value(name, where, v, "is out of range; expected an integer " + range_text(lo, hi, false, false) + hint);
            c.*m = *i;
          },
          [m](const TrainConfig& c) { return YAML::Node(c.*m); }, S::kSection};
}

void check_float(const std::string& name, const std::string& where, const Raw& v, double x, double lo, double hi,
                 bool lo_open, bool hi_open) {
  const bool below = lo_open ? x <= lo : x < lo;
  const bool above = hi_open ? x >= hi : x > hi;
  if (below || above) bad_value(name, where, v, "is out of range; expected a number " + range_text(lo, hi, lo_open, hi_open));
}

template <class S>
KeyDef float_key(const std::string& name, double S::*m, double lo = -kInf, double hi = kInf, bool lo_open = false,
                 bool hi_open = false) {
  return {name,
          [=](TrainConfig& c, const Raw& v, const std::string& where) {
            need_scalar(name, where, v, "a number");
            auto x = v.is_null ? std::nullopt : parse_float(v.text);
            if (!x)
              bad_value(name, where, v, "is not a number; expected a number " + range_text(lo, hi, lo_open, hi_open));
            check_float(name, where, v, *x, lo, hi, lo_open, hi_open);
            c.*m = *x;
          },
          [m](const TrainConfig& c) { return float_node(c.*m); }, S::kSection};
}

template <class S>
KeyDef opt_float_key(const std::string& name, std::optional<double> S::*m, double lo, double hi, bool lo_open = false,
                     bool hi_open = false) {
  return {name,
          [=](TrainConfig& c, const Raw& v, const std::string& where) {
            need_scalar(name, where, v, "a number or null");
            if (v.is_null) {
              c.*m = std::nullopt;
              return;
            }
            auto x = parse_float(v.text);
            if (!x)
              bad_value(name, where, v,
                        "is not a number; expected null or a number " + range_text(lo, hi, lo_open, hi_open));
            check_float(name, where, v, *x, lo, hi, lo_open, hi_open);
            c.*m = *x;
          },
          [m](const TrainConfig& c) { return (c.*m) ? float_node(*(c.*m)) : YAML::Node(YAML::NodeType::Null); },
          S::kSection};
}

template <class S>
KeyDef str_key(const std::string& name, std::string S::*m) {
  return {name,
          [=](TrainConfig& c, const Raw& v, const std::string& where) {
            need_scalar(name, where, v, "a string");
            c.*m = v.is_null ? std::string() : v.text;
          },
          [m](const TrainConfig& c) { return YAML::Node(c.*m); }, S::kSection};
}

/// A string from a fixed set; matching is case-insensitive, the stored value is the canonical spelling.
template <class S>
KeyDef enum_key(const std::string& name, std::string S::*m, std::vector<std::string> choices, bool allow_empty = false,
                const std::string& hint = "") {
  return {name,
          [=](TrainConfig& c, const Raw& v, const std::string& where) {
            need_scalar(name, where, v, "one of " + join(choices, ", "));
            if (v.is_null && allow_empty) {
              c.*m = std::string();
              return;
            }
            for (const auto& ch : choices)
              if (!v.is_null && lower(ch) == lower(v.text)) {
                c.*m = ch;
                return;
              }
            bad_value(name, where, v, "is not allowed; expected one of " + join(choices, ", ") +
                                          (allow_empty ? " (or empty)" : "") + hint);
          },
          [m](const TrainConfig& c) { return YAML::Node(c.*m); }, S::kSection};
}

template <class S>
KeyDef step_range_key(const std::string& name, StepRange S::*m) {
  return {name,
          [=](TrainConfig& c, const Raw& v, const std::string& where) {
            need_scalar(name, where, v, "\"START:STOP\"");
            if (v.is_null || trim(v.text).empty()) {
              c.*m = StepRange{};
              return;
            }
            const auto colon = v.text.find(':');
            std::optional<int64_t> a, b;
            if (colon != std::string::npos) {
              a = parse_int(trim(v.text.substr(0, colon)));
              b = parse_int(trim(v.text.substr(colon + 1)));
            }
            if (!a || !b || *a < 0 || *b <= *a)
              bad_value(name, where, v, "is not a step range; expected \"START:STOP\" with 0 <= START < STOP (e.g. \"20:30\"), or empty");
            c.*m = StepRange{*a, *b};
          },
          [m](const TrainConfig& c) {
            return (c.*m).empty() ? YAML::Node(YAML::NodeType::Null) : YAML::Node((c.*m).str());
          },
          S::kSection};
}

/// A hand-written key of section S (the struct of include/yolo11/config/train_config.h whose field it sets).
template <class S>
KeyDef in(KeyDef k) {
  k.section = S::kSection;
  return k;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}


}  // namespace

bool is_null_text(const std::string& t) {
  const std::string l = lower(t);
  return l.empty() || l == "null" || l == "none" || l == "~";
}

const std::vector<KeyDef>& key_table() {
  static const std::vector<KeyDef> table = [] {
    using C = TrainConfig;
    std::vector<KeyDef> t;
    t.push_back(enum_key("task", &C::task, {"detect"}, false, " (only detection is implemented)"));
    t.push_back(enum_key("mode", &C::mode, {"train", "val", "predict"}));
    t.push_back(str_key("model", &C::model));
    t.push_back(str_key("data", &C::data));
    t.push_back(int_key("epochs", &C::epochs, 1, 1e9));
    t.push_back(opt_float_key("time", &C::time, 0, kInf, true));
    t.push_back(int_key("patience", &C::patience, 0, 1e9));
    // batch: an integer >= 1, or AutoBatch as Ultralytics: -1 (60 % of device memory) or a fraction in (0, 1).
    t.push_back(in<TrainSettings>(
        {"batch",
         [](C& c, const Raw& v, const std::string& where) {
           need_scalar("batch", where, v, "an integer");
           const std::string expect =
               "expected an integer in [1, 1000000], -1 (AutoBatch, 60% of device memory) "
               "or a fraction in (0, 1) (AutoBatch at that fraction)";
           if (v.is_null) bad_value("batch", where, v, "is not an integer; " + expect);
           if (auto i = parse_int(v.text)) {
             if (*i == -1) {
               c.batch = 16, c.batch_fraction = 0.6;  // 16 until resolved: Ultralytics' CPU default
               return;
             }
             if (*i < 1 || *i > 1000000) bad_value("batch", where, v, "is out of range; " + expect);
             c.batch = *i, c.batch_fraction = 0.0;
             return;
           }
           auto x = parse_float(v.text);
           if (!x) bad_value("batch", where, v, "is not an integer; " + expect);
           if (!(*x > 0.0 && *x < 1.0)) bad_value("batch", where, v, "is out of range; " + expect);
           c.batch = 16, c.batch_fraction = *x;
         },
         [](const C& c) { return c.batch_fraction > 0 ? float_node(c.batch_fraction) : YAML::Node(c.batch); }}));
    // imgsz: integer >= 32; rounded up to a multiple of 32 (max stride) with a warning, as Ultralytics does.
    t.push_back(in<TrainSettings>(
        {"imgsz",
         [](C& c, const Raw& v, const std::string& where) {
           need_scalar("imgsz", where, v, "an integer");
           auto i = v.is_null ? std::nullopt : parse_int(v.text);
           if (!i) bad_value("imgsz", where, v, "is not an integer; expected an integer in [32, 8192] (square size)");
           if (*i < 32 || *i > 8192) bad_value("imgsz", where, v, "is out of range; expected an integer in [32, 8192]");
           int64_t r = (*i + 31) / 32 * 32;
           if (r != *i)
             spdlog::warn("config: imgsz={} ({}) is not a multiple of max stride 32, using imgsz={}", *i, where, r);
           c.imgsz = r;
         },
         [](const C& c) { return YAML::Node(c.imgsz); }}));
    t.push_back(bool_key("save", &C::save));
    t.push_back(int_key("save_period", &C::save_period, -1e9, 1e9));
    t.push_back(bool_key("save_pt", &C::save_pt));
    t.push_back(in<TrainSettings>({"cache",
                                   [](C& c, const Raw& v, const std::string& where) {
                                     need_scalar("cache", where, v, "false, true, ram or disk");
                                     const auto m = v.is_null ? core::CacheMode::off : core::parse_cache_mode(v.text);
                                     if (!m)
                                       bad_value("cache", where, v,
                                                 "is not allowed; expected one of false, true, ram, disk");
                                     c.cache = *m;
                                   },
                                   [](const C& c) {
                                     return c.cache == core::CacheMode::off ? YAML::Node(false)
                                                                            : YAML::Node(core::to_string(c.cache));
                                   }}));
    t.push_back(str_key("device", &C::device));
    t.push_back(int_key("workers", &C::workers, 0, 1024));
    t.push_back(str_key("project", &C::project));
    t.push_back(str_key("name", &C::name));
    t.push_back(bool_key("exist_ok", &C::exist_ok));
    t.push_back(in<TrainSettings>({"pretrained",
                                   [](C& c, const Raw& v, const std::string& where) {
                                     need_scalar("pretrained", where, v, "true, false or a weights path");
                                     if (v.is_null)
                                       c.pretrained = "false";
                                     else if (auto b = parse_bool(v.text))
                                       c.pretrained = *b ? "true" : "false";
                                     else
                                       c.pretrained = v.text;
                                   },
                                   [](const C& c) {
                                     return c.pretrained == "true"    ? YAML::Node(true)
                                            : c.pretrained == "false" ? YAML::Node(false)
                                                                      : YAML::Node(c.pretrained);
                                   }}));
    t.push_back(enum_key("optimizer", &C::optimizer, {"SGD", "Adam", "AdamW", "auto"}, false,
                         " (MuSGD, Adamax, NAdam, RAdam, RMSProp are not implemented)"));
    t.push_back(bool_key("verbose", &C::verbose));
    t.push_back(int_key("seed", &C::seed, 0, 4294967295.0));
    t.push_back(bool_key("deterministic", &C::deterministic));
    t.push_back(bool_key("single_cls", &C::single_cls));
    t.push_back(bool_key("rect", &C::rect));
    t.push_back(bool_key("cos_lr", &C::cos_lr));
    t.push_back(int_key("close_mosaic", &C::close_mosaic, 0, 1e9));
    t.push_back(in<TrainSettings>({"resume",
                                   [](C& c, const Raw& v, const std::string& where) {
                                     need_scalar("resume", where, v, "true, false or a path");
                                     if (v.is_null)
                                       c.resume = "false";
                                     else if (auto b = parse_bool(v.text))
                                       c.resume = *b ? "true" : "false";
                                     else
                                       c.resume = v.text;
                                   },
                                   [](const C& c) {
                                     return c.resume == "true"    ? YAML::Node(true)
                                            : c.resume == "false" ? YAML::Node(false)
                                                                  : YAML::Node(c.resume);
                                   }}));
    t.push_back(bool_key("amp", &C::amp));
    t.push_back(float_key("fraction", &C::fraction, 0, 1, true, false));
    t.push_back(bool_key("profile", &C::profile));
    t.push_back(in<TrainSettings>({"freeze",
                                   [](C& c, const Raw& v, const std::string& where) {
                                     c.freeze.clear();
                                     if (v.is_null) return;
                                     const std::string expect =
                                         "expected null, an integer N >= 0 (first N layers) or a list of layer indices";
                                     if (!v.is_list) {
                                       auto n = parse_int(v.text);
                                       if (!n || *n < 0) bad_value("freeze", where, v, "is not allowed; " + expect);
                                       // More than any model's layers (yolo11: 24) freezes the whole model; the cap
                                       // keeps a typo such as freeze=10000000000 from allocating an index per "layer".
                                       if (*n > 1000)
                                         bad_value("freeze", where, v,
                                                   "is more layers than any model has (at most 1000); " + expect);
                                       for (int64_t i = 0; i < *n; ++i) c.freeze.push_back(i);
                                       return;
                                     }
                                     c.freeze = index_list("freeze", where, v, expect);
                                   },
                                   [](const C& c) { return index_list_node(c.freeze); }}));
    t.push_back(in<TrainSettings>({"multi_scale",
                                   [](C& c, const Raw& v, const std::string& where) {
                                     need_scalar("multi_scale", where, v, "a number in [0, 1)");
                                     if (v.is_null) {
                                       c.multi_scale = 0.0;
                                       return;
                                     }
                                     if (auto b = parse_bool(v.text)) {
                                       c.multi_scale = *b ? 0.5 : 0.0;
                                       return;
                                     }
                                     auto x = parse_float(v.text);
                                     if (!x)
                                       bad_value("multi_scale", where, v,
                                                 "is not a number; expected a number in [0, 1) or true/false");
                                     check_float("multi_scale", where, v, *x, 0, 1, false, true);
                                     c.multi_scale = *x;
                                   },
                                   [](const C& c) { return float_node(c.multi_scale); }}));
    t.push_back(bool_key("val", &C::val));
    t.push_back(enum_key("split", &C::split, {"val", "test", "train"}));
    t.push_back(bool_key("save_json", &C::save_json));
    t.push_back(opt_float_key("conf", &C::conf, 0, 1));
    t.push_back(float_key("iou", &C::iou, 0, 1));
    t.push_back(int_key("max_det", &C::max_det, 1, 1e6));
    t.push_back(bool_key("half", &C::half));
    t.push_back(bool_key("plots", &C::plots));
    t.push_back(bool_key("agnostic_nms", &C::agnostic_nms));
    t.push_back(bool_key("augment", &C::augment));
    t.push_back(in<ValSettings>({"classes",
                                 [](C& c, const Raw& v, const std::string& where) {
                                   c.classes.clear();
                                   if (v.is_null) return;
                                   const std::string expect =
                                       "expected null, a class id >= 0 or a list of class ids, e.g. [0, 2]";
                                   c.classes = index_list("classes", where, v, expect);
                                 },
                                 [](const C& c) { return index_list_node(c.classes); }}));
    t.push_back(str_key("source", &C::source));
    t.push_back(int_key("vid_stride", &C::vid_stride, 1, 1e6));
    t.push_back(bool_key("save_txt", &C::save_txt));
    t.push_back(bool_key("save_conf", &C::save_conf));
    t.push_back(int_key("line_width", &C::line_width, 0, 1000));
    t.push_back(float_key("lr0", &C::lr0, 0, 1, true, false));
    t.push_back(float_key("lrf", &C::lrf, 0, 1, true, false));
    t.push_back(float_key("momentum", &C::momentum, 0, 1, false, true));
    t.push_back(float_key("weight_decay", &C::weight_decay, 0, 1));
    t.push_back(float_key("warmup_epochs", &C::warmup_epochs, 0, 1e6));
    t.push_back(float_key("warmup_momentum", &C::warmup_momentum, 0, 1, false, true));
    t.push_back(float_key("warmup_bias_lr", &C::warmup_bias_lr, 0, 1));
    t.push_back(float_key("box", &C::box, 0, 1e6));
    t.push_back(float_key("cls", &C::cls, 0, 1e6));
    t.push_back(float_key("dfl", &C::dfl, 0, 1e6));
    t.push_back(int_key("nbs", &C::nbs, 1, 1e6));
    t.push_back(float_key("hsv_h", &C::hsv_h, 0, 1));
    t.push_back(float_key("hsv_s", &C::hsv_s, 0, 1));
    t.push_back(float_key("hsv_v", &C::hsv_v, 0, 1));
    t.push_back(float_key("degrees", &C::degrees, 0, 180));
    t.push_back(float_key("translate", &C::translate, 0, 1));
    t.push_back(float_key("scale", &C::scale, 0, 1));
    t.push_back(float_key("shear", &C::shear, 0, 180));
    t.push_back(float_key("perspective", &C::perspective, 0, 0.001));
    t.push_back(float_key("flipud", &C::flipud, 0, 1));
    t.push_back(float_key("fliplr", &C::fliplr, 0, 1));
    t.push_back(float_key("bgr", &C::bgr, 0, 1));
    t.push_back(float_key("mosaic", &C::mosaic, 0, 1));
    t.push_back(float_key("mixup", &C::mixup, 0, 1));
    t.push_back(float_key("cutmix", &C::cutmix, 0, 1));
    t.push_back(float_key("copy_paste", &C::copy_paste, 0, 0));
    t.push_back(enum_key("model_scale", &C::model_scale, {"n", "s", "m", "l", "x"}, true,
                         " (empty = take it from the model name, e.g. yolo11s.yaml)"));
    t.push_back(int_key("threads", &C::threads, 0, 4096));
    t.push_back(str_key("datasets_dir", &C::datasets_dir));
    t.push_back(int_key("dist_timeout", &C::dist_timeout, 1, 7 * 24 * 3600));
    t.push_back(bool_key("ddp_overlap", &C::ddp_overlap));
    t.push_back(float_key("bucket_cap_mb", &C::bucket_cap_mb, 0, 65536, false, true));
    t.push_back(bool_key("sync_bn", &C::sync_bn));
    t.push_back(in<InstrumentSettings>({"instrument",
                                        [](C& c, const Raw& v, const std::string& where) {
                                          need_scalar("instrument", where, v, "one of off, basic, full");
                                          const auto l =
                                              v.is_null ? std::nullopt : core::parse_instrument_level(v.text);
                                          if (!l)
                                            bad_value("instrument", where, v,
                                                      "is not allowed; expected one of off, basic, full");
                                          c.instrument = *l;
                                        },
                                        [](const C& c) { return YAML::Node(core::to_string(c.instrument)); }}));
    t.push_back(int_key("log_every", &C::log_every, 1, 1e9));
    t.push_back(int_key("instrument_warmup", &C::instrument_warmup, 0, 1e9));
    t.push_back(step_range_key("trace_steps", &C::trace_steps));
    t.push_back(step_range_key("profile_steps", &C::profile_steps));
    t.push_back(step_range_key("profile_ops", &C::profile_ops));
    t.push_back(bool_key("profile_ops_shapes", &C::profile_ops_shapes));
    t.push_back(bool_key("profile_ops_memory", &C::profile_ops_memory));
    t.push_back(bool_key("calibrate", &C::calibrate));
    t.push_back(bool_key("nvtx_ops", &C::nvtx_ops));
    t.push_back(bool_key("sync", &C::sync));
    t.push_back(bool_key("tensorboard", &C::tensorboard));
    t.push_back(int_key("metrics_port", &C::metrics_port, 0, 65535, " (0 = off)"));
    t.push_back(str_key("metrics_host", &C::metrics_host));
    t.push_back(int_key("max_steps", &C::max_steps, 0, 1e12, " (0 = off)"));
    t.push_back(bool_key("synthetic_data", &C::synthetic_data));
    t.push_back(bool_key("verify_advice", &C::verify_advice));
    for (const auto& k : t)
      if (k.section.empty()) throw std::logic_error("config: key '" + k.name + "' has no section");
    return t;
  }();
  return table;
}

const KeyDef* find_key(const std::string& name) {
  for (const auto& k : key_table())
    if (k.name == name) return &k;
  return nullptr;
}

[[noreturn]] void unknown_key(const std::string& key, const std::string& where) {
  std::vector<std::string> names;
  for (const auto& k : key_table()) names.push_back(k.name);
  const std::string best = closest_name(key, names);
  std::string msg = "config: unknown key '" + core::printable(key) + "' (" + where + ").";
  if (!best.empty()) msg += " Did you mean '" + best + "'?";
  msg += " Valid keys are listed in configs/default.yaml.";
  throw std::runtime_error(msg);
}

void apply(TrainConfig& c, const std::string& key, const Raw& v, const std::string& where) {
  const KeyDef* def = find_key(key);
  if (!def) unknown_key(key, where);
  def->set(c, v, where);
}

}  // namespace yolo11::config::detail

namespace yolo11::config {
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (const auto& c : candidates) {
    const size_t d = detail::edit_distance(detail::lower(word), c);
    if (d < best_d) best_d = d, best = c;
  }
  return best_d <= std::max<size_t>(2, word.size() / 3) ? best : std::string();
}
}  // namespace yolo11::config
