#pragma once
// The key table of TrainConfig, private to src/config: every key of configs/default.yaml with its parser (type and
// range checks, errors naming the file and line) and its YAML form. train_config.cpp loads files and command lines
// through it; config_keys.cpp defines it.
#include <yaml-cpp/yaml.h>

#include <functional>
#include <string>
#include <vector>

#include "yolo11/config/train_config.h"
#include "yolo11/core/strings.h"

namespace yolo11::config::detail {

/// One value as read from a YAML node or a command-line "key=value": a scalar text, null, or a list of scalars.
struct Raw {
  std::string text;
  bool is_null = false;
  bool is_list = false;
  std::vector<std::string> list;
  std::string display() const {
    if (is_null) return "null";
    if (!is_list) return "'" + text + "'";
    std::string s = "[";
    for (size_t i = 0; i < list.size(); ++i) s += (i ? ", " : "") + list[i];
    return s + "]";
  }
};

/// One key: its name, how a raw value is checked and stored (`where` names the file:line or "command line" for
/// errors), and the YAML node written to args.yaml.
struct KeyDef {
  std::string name;
  std::function<void(TrainConfig&, const Raw&, const std::string& where)> set;
  std::function<YAML::Node(const TrainConfig&)> get;
  std::string section;  ///< kSection of the TrainConfig part holding the field (include/yolo11/config/train_config.h)
};

using core::join;
using core::lower;
using core::trim;
/// "", null, None or ~ (any case): YAML's null.
bool is_null_text(const std::string& t);

/// Every key, in configs/default.yaml order.
const std::vector<KeyDef>& key_table();
/// The key named `name`; nullptr when there is none.
const KeyDef* find_key(const std::string& name);
/// Throws std::runtime_error for an unknown key at `where`, suggesting the nearest valid key.
[[noreturn]] void unknown_key(const std::string& key, const std::string& where);
/// Checks and stores `v` into `c`'s `key`; throws std::runtime_error naming key, where and what is expected.
void apply(TrainConfig& c, const std::string& key, const Raw& v, const std::string& where);

}  // namespace yolo11::config::detail
