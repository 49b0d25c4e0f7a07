// TrainConfig: loading configs/default.yaml, a --cfg file and key=value overrides through the key table
// (config_keys.h), resume rules, args.yaml.
#include "yolo11/config/train_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <stdexcept>

#include "config_keys.h"
#include "yolo11/build_info.h"
#include "yolo11/io/file.h"

namespace fs = std::filesystem;

namespace yolo11::config {

std::string StepRange::str() const {
  return empty() ? std::string() : std::to_string(start) + ":" + std::to_string(stop);
}

using namespace detail;

namespace {

Raw raw_from_node(const YAML::Node& n, const std::string& key, const std::string& where) {
  Raw r;
  if (!n || n.IsNull()) {
    r.is_null = true;
  } else if (n.IsScalar()) {
    r.text = n.Scalar();
    // An unquoted "null"/"None"/"~" reads as null; quoted strings are kept as written.
    if (n.Tag() != "!" && is_null_text(r.text) && !r.text.empty()) r.is_null = true;
  } else if (n.IsSequence()) {
    r.is_list = true;
    for (const auto& e : n) {
      if (!e.IsScalar())
        throw std::runtime_error("config: bad value for '" + key + "' (" + where + "): nested lists/maps are not allowed");
      r.list.push_back(e.Scalar());
    }
  } else {
    throw std::runtime_error("config: bad value for '" + key + "' (" + where + "): a mapping is not allowed here");
  }
  return r;
}

/// Applies every key of a YAML mapping file; `skip_cfg` ignores a "cfg" key (handled by the caller).
void apply_yaml_file(TrainConfig& c, const std::string& path, const std::set<std::string>* only_keys = nullptr,
                     std::vector<std::string>* seen = nullptr) {
  if (!fs::exists(path))
    throw std::runtime_error("config: file not found: '" + path + "' (check the --cfg / cfg= path)");
  if (fs::is_directory(path))
    throw std::runtime_error("config: '" + path + "' is a directory; pass a YAML file (e.g. --cfg configs/coco128.yaml)");
  const std::string text = io::read_file(path);
  // A NUL is no YAML text, and one inside a key or value would cut every later message short (the file name too).
  if (const size_t nul = text.find('\0'); nul != std::string::npos)
    throw std::runtime_error(
        "config: " + path + ":" +
        std::to_string(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n') + 1) +
        " holds a NUL byte; a config file is YAML text (was it saved by a binary tool?)");
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error("config: cannot parse YAML '" + path + "' at line " + std::to_string(e.mark.line + 1) +
                             ": " + e.msg);
  }
  if (root.IsNull()) return;  // empty file
  if (!root.IsMap())
    throw std::runtime_error("config: '" + path + "' must be a YAML mapping of key: value lines");
  std::set<std::string> done;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string key = it->first.Scalar();
    const std::string where = path + ":" + std::to_string(it->first.Mark().line + 1);
    if (!done.insert(key).second)
      throw std::runtime_error("config: duplicate key '" + core::printable(key) + "' (" + where + ")");
    if (only_keys && !only_keys->count(key)) continue;
    if (key == "cfg") throw std::runtime_error("config: 'cfg' is not allowed inside a config file (" + where + ")");
    apply(c, key, raw_from_node(it->second, key, where), where);
    if (seen) seen->push_back(key);
  }
}

/// Parses "key=value" (value may be empty, null/None, true/false, a number, a string, or a [a,b] list).
std::pair<std::string, Raw> parse_override(const std::string& arg) {
  if (arg.find('\0') != std::string::npos)
    throw std::runtime_error("config: command-line argument '" + core::printable(arg) + "' holds a NUL byte");
  const auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::runtime_error("config: bad command-line argument '" + core::printable(arg) +
                             "': expected key=value (e.g. epochs=10)");
  std::string key = trim(arg.substr(0, eq));
  std::string val = trim(arg.substr(eq + 1));
  Raw r;
  if (val.size() >= 2 && val.front() == '[' && val.back() == ']') {
    r.is_list = true;
    std::string inner = val.substr(1, val.size() - 2), item;
    std::stringstream ss(inner);
    while (std::getline(ss, item, ','))
      if (!trim(item).empty()) r.list.push_back(trim(item));
  } else if (val.size() >= 2 && (val.front() == '"' || val.front() == '\'') && val.back() == val.front()) {
    r.text = val.substr(1, val.size() - 2);
  } else {
    r.text = val;
    r.is_null = is_null_text(val);
  }
  return {key, r};
}

/// Resolves model_scale from the model name (yolo11n.yaml → n) and checks cross-key consistency.
void finalize(TrainConfig& c) {
  const std::string stem = lower(fs::path(c.model).stem().string());
  std::string from_name;
  const auto pos = stem.find("yolo11");
  if (pos != std::string::npos && pos + 6 < stem.size()) {
    const char s = stem[pos + 6];
    if (std::string("nsmlx").find(s) != std::string::npos && (pos + 7 == stem.size() || !std::isalnum(static_cast<unsigned char>(stem[pos + 7]))))
      from_name = std::string(1, s);
  }
  if (!from_name.empty() && !c.model_scale.empty() && from_name != c.model_scale)
    throw std::runtime_error("config: model '" + c.model + "' names scale '" + from_name + "' but model_scale=" +
                             c.model_scale + "; remove one of them");
  if (c.model_scale.empty()) c.model_scale = from_name.empty() ? "n" : from_name;
}

}  // namespace

std::string default_config_path(const std::string& explicit_path) {
  if (!explicit_path.empty()) return explicit_path;
  if (const char* env = std::getenv("YOLO11_DEFAULT_CFG"); env && *env) return env;
  return (fs::path(build::resource_dir()) / "configs" / "default.yaml").string();
}

const std::vector<std::string>& config_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const auto& d : key_table()) k.push_back(d.name);
    return k;
  }();
  return keys;
}

std::string config_section(const std::string& key) {
  const KeyDef* def = find_key(key);
  if (!def) unknown_key(key, "config_section");
  return def->section;
}

std::vector<KeyDoc> default_key_docs(const std::string& default_yaml) {
  const std::string path = default_config_path(default_yaml);
  if (!fs::is_regular_file(path))
    throw std::runtime_error("config: default config not found at '" + path +
                             "'; set YOLO11_DEFAULT_CFG=/path/to/configs/default.yaml");
  std::vector<KeyDoc> docs;
  std::istringstream in(io::read_file(path));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || !(std::isalnum(static_cast<unsigned char>(line[0])) || line[0] == '_')) continue;  // comments,
    const auto colon = line.find(':');                                      // continuation lines, list items
    if (colon == std::string::npos) continue;
    KeyDoc d;
    d.key = trim(line.substr(0, colon));
    // the comment starts at the first " #" outside quotes
    size_t hash = std::string::npos;
    char quote = 0;
    for (size_t i = colon + 1; i < line.size(); ++i) {
      const char ch = line[i];
      if (quote) {
        if (ch == quote) quote = 0;
      } else if (ch == '\'' || ch == '"') {
        quote = ch;
      } else if (ch == '#' && (line[i - 1] == ' ' || line[i - 1] == '\t')) {
        hash = i;
        break;
      }
    }
    d.value = trim(line.substr(colon + 1, hash == std::string::npos ? std::string::npos : hash - colon - 1));
    if (hash != std::string::npos) d.description = trim(line.substr(hash + 1));
    docs.push_back(std::move(d));
  }
  return docs;
}

const std::vector<std::string>& resume_overridable_keys() {
  static const std::vector<std::string> keys = {
      "epochs", "time", "patience", "batch", "save", "save_period", "save_pt", "cache", "device", "workers", "verbose",
      "close_mosaic", "resume", "val", "plots", "threads", "instrument", "log_every", "trace_steps",
      "profile_steps", "profile_ops", "profile_ops_shapes", "profile_ops_memory", "nvtx_ops", "calibrate", "sync",
      "datasets_dir",
      "exist_ok", "dist_timeout", "ddp_overlap", "bucket_cap_mb",
      "tensorboard", "metrics_port", "metrics_host", "verify_advice"};
  return keys;
}

TrainConfig TrainConfig::load(const std::string& cfg_file, const std::vector<std::string>& overrides,
                              const std::string& default_yaml) {
  TrainConfig c;
  const std::string def = default_config_path(default_yaml);
  if (!fs::exists(def))
    throw std::runtime_error("config: default config not found at '" + def +
                             "'; pass its path or set YOLO11_DEFAULT_CFG=/path/to/configs/default.yaml");
  apply_yaml_file(c, def);
  // "cfg=FILE" on the command line is the Ultralytics spelling of --cfg.
  std::string cfg = cfg_file;
  std::vector<std::pair<std::string, Raw>> parsed;
  for (const auto& o : overrides) {
    auto kv = parse_override(o);
    if (kv.first == "cfg") {
      if (!cfg.empty() && cfg != kv.second.text)
        throw std::runtime_error("config: two config files given ('" + cfg + "' and cfg=" + kv.second.text +
                                 " on the command line); use one");
      cfg = kv.second.text;
      continue;
    }
    parsed.push_back(std::move(kv));
  }
  if (!cfg.empty()) apply_yaml_file(c, cfg);
  for (const auto& [k, v] : parsed) apply(c, k, v, "command line");
  finalize(c);
  return c;
}

TrainConfig TrainConfig::load_for_resume(const std::string& args_yaml, const std::vector<std::string>& overrides,
                                         const std::string& default_yaml) {
  const auto& allowed = resume_overridable_keys();
  const TrainConfig saved = load(args_yaml, {}, default_yaml);
  std::vector<std::string> keep;  // overrides that take effect (run-control keys)
  for (const auto& o : overrides) {
    const std::string key = parse_override(o).first;
    if (!find_key(key)) unknown_key(key, "command line");
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) {
      keep.push_back(o);
      continue;
    }
    // Repeating the original command line with resume= appended is fine: a value equal to the saved one is no change.
    const TrainConfig requested = load(args_yaml, {o}, default_yaml);
    if (requested.get(key) != saved.get(key))
      throw std::runtime_error("config: '" + key + "' cannot be changed when resuming (command line: " + o +
                               ", the run has " + key + "=" + saved.get(key) + "); only " + join(allowed, ", ") +
                               " may be overridden. Start a new run (resume=false) to change it.");
  }
  return load(args_yaml, keep, default_yaml);
}

std::vector<std::string> resume_differences(const TrainConfig& saved, const TrainConfig& requested) {
  const auto& allowed = resume_overridable_keys();
  std::vector<std::string> diff;
  for (const auto& k : key_table()) {
    if (std::find(allowed.begin(), allowed.end(), k.name) != allowed.end()) continue;
    const std::string a = YAML::Dump(k.get(saved)), b = YAML::Dump(k.get(requested));
    if (a != b) diff.push_back(k.name + " (saved " + a + ", requested " + b + ")");
  }
  return diff;
}

void check_resume_compatible(const TrainConfig& saved, const TrainConfig& requested) {
  const auto bad = resume_differences(saved, requested);
  if (!bad.empty())
    throw std::runtime_error("config: cannot resume, these keys differ from the checkpoint's args and may not change: " +
                             join(bad, "; ") + ". Only " + join(resume_overridable_keys(), ", ") +
                             " may be overridden on resume.");
}

std::string TrainConfig::get(const std::string& key) const {
  const KeyDef* def = find_key(key);
  if (!def) unknown_key(key, "TrainConfig::get");
  return YAML::Dump(def->get(*this));
}

std::string TrainConfig::to_yaml() const {
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const auto& k : key_table()) out << YAML::Key << k.name << YAML::Value << k.get(*this);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

void TrainConfig::save_args(const std::string& run_dir) const {
  io::write_file_atomic((fs::path(run_dir) / "args.yaml").string(), to_yaml());
}

}  // namespace yolo11::config
