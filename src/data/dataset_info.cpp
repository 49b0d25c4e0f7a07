// Dataset YAML resolution (see dataset_info.h).
#include "yolo11/data/dataset_info.h"

#include "yolo11/build_info.h"

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "yolo11/data/unzip.h"
#include "yolo11/io/file.h"

namespace yolo11::data {
namespace fs = std::filesystem;

std::string default_datasets_dir() {
  if (const char* e = std::getenv("YOLO11_DATASETS_DIR"); e && *e) return e;
  // <repo>/src/data/dataset_info.cpp → <repo>/datasets (the source tree this library was built from).
  return (fs::path(__FILE__).parent_path().parent_path().parent_path() / "datasets").lexically_normal().string();
}

static std::string dump(const YAML::Node& n) {
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

static std::vector<std::string> split_sources(const YAML::Node& n, const fs::path& root, const std::string& key,
                                              const std::string& yaml) {
  std::vector<std::string> out;
  auto add = [&](const YAML::Node& v) {
    if (!v.IsScalar() || v.as<std::string>().empty())
      throw std::runtime_error(yaml + ": `" + key + "` entries must be non-empty paths, got " + dump(v));
    fs::path p(v.as<std::string>());
    if (p.is_relative()) p = root / p;
    out.push_back(p.lexically_normal().string());
  };
  if (!n || n.IsNull()) return out;
  if (n.IsSequence()) {
    for (const auto& v : n) add(v);
  } else {
    add(n);
  }
  return out;
}

/// What to do about a missing dataset folder: tools/get_dataset.sh for the datasets it knows, else where to put it.
static std::string fetch_hint(const std::string& name, const fs::path& where) {
  if (name == "coco8" || name == "coco128" || name == "shapes3") return "run tools/get_dataset.sh " + name;
  return "put the dataset's images/ and labels/ at " + where.string() + ", or set path: in the YAML to where they are "
         "(absolute, or relative to datasets_dir=)";
}

std::string resolve_dataset_yaml(const std::string& path) {
  if (fs::exists(path)) return path;
  // Ultralytics' short names (data=coco8.yaml, data=coco128) name the dataset YAMLs it ships; ours are in
  // configs/datasets/ of the source tree or the installed share/yolo11.
  const fs::path root = build::resource_dir();
  fs::path name = fs::path(path).filename();
  if (!name.has_extension()) name += ".yaml";
  std::vector<fs::path> tried;
  for (const fs::path& c : {root / path, root / "configs" / "datasets" / name}) {
    if (std::find(tried.begin(), tried.end(), c) != tried.end()) continue;
    if (fs::exists(c) && !fs::is_directory(c)) return c.string();
    tried.push_back(c);
  }
  std::string also;
  for (size_t i = 0; i < tried.size(); ++i) also += (i ? " and " : "") + tried[i].string();
  throw std::runtime_error("dataset YAML '" + path + "' not found (also looked at " + also + "); pass a dataset "
                           "YAML path, e.g. data=configs/datasets/coco8.yaml (docs/data.md)");
}

namespace {

/// The folder a zip was unpacked into (unpack_dataset_zip: <datasets_dir>/<top-level dir or zip stem>) that holds
/// `yaml`: the first component of `yaml` below `datasets_dir`.
fs::path unpacked_folder(const fs::path& yaml, const std::string& datasets_dir) {
  const fs::path base = fs::absolute(datasets_dir).lexically_normal();
  const fs::path rel = yaml.lexically_relative(base);
  if (rel.empty() || *rel.begin() == "..") return yaml.parent_path();
  return base / *rel.begin();
}

DatasetInfo load_yaml(const std::string& yaml_arg, const std::string& datasets_dir, bool from_zip);

}  // namespace

DatasetInfo load_dataset_yaml(const std::string& yaml_arg, const std::string& datasets_dir) {
  try {
    return load_yaml(yaml_arg, datasets_dir, false);
  } catch (const YAML::Exception& e) {  // a value read as a type it does not have (a list as `path`, a map as a key)
    throw std::runtime_error("data=" + yaml_arg + ": a value of the dataset YAML has the wrong type (" + e.what() +
                             "); path/train/val/test are strings or lists of strings, names a list or {id: name}");
  } catch (const fs::filesystem_error& e) {  // a path the file system refuses (a name over 255 bytes, ...)
    throw std::runtime_error("data=" + yaml_arg + ": a path of the dataset YAML cannot be used: " + e.what());
  }
}

namespace {

DatasetInfo load_yaml(const std::string& yaml_arg, const std::string& datasets_dir, bool from_zip) {
  if (yaml_arg.empty())
    throw std::runtime_error("no dataset given: set data=path/to/dataset.yaml (e.g. data=configs/datasets/coco8.yaml) "
                             "on the command line or in the run file (cfg=FILE, --cfg FILE)");
  const std::string yaml_path = resolve_dataset_yaml(yaml_arg);
  {
    std::string ext = fs::path(yaml_path).extension().string();
    for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (ext == ".zip") {  // Ultralytics: data=ds.zip is unpacked into datasets_dir, then its YAML is read
      const std::string dir = datasets_dir.empty() ? default_datasets_dir() : datasets_dir;
      return load_yaml(unpack_dataset_zip(yaml_path, dir), dir, true);
    }
    std::ifstream f(yaml_path, std::ios::binary);
    char magic[4] = {};
    f.read(magic, 4);
    if (f.gcount() == 4 && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4)
      throw std::runtime_error("data=" + yaml_path + " is a zip archive without the .zip extension; rename it to "
                               "*.zip (it is then unpacked into datasets_dir) or pass the dataset's .yaml");
  }
  if (fs::is_directory(yaml_path))
    throw std::runtime_error("dataset YAML " + yaml_path + " is a directory; pass the dataset's .yaml file");
  // A NUL is no YAML text, and one inside a key or value would cut every later message short (the file name too).
  const std::string text = io::read_file(yaml_path);
  if (const size_t nul = text.find('\0'); nul != std::string::npos)
    throw std::runtime_error(
        "dataset YAML " + yaml_path + ":" +
        std::to_string(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n') + 1) +
        " holds a NUL byte; a dataset YAML is text");
  YAML::Node y;
  try {
    y = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error("dataset YAML " + yaml_path + " does not parse: " + e.what());
  }
  if (!y.IsMap()) throw std::runtime_error("dataset YAML " + yaml_path + " must be a mapping, got " + dump(y));
  DatasetInfo info;
  const fs::path yp = fs::absolute(yaml_path).lexically_normal();
  info.yaml = yp.string();

  // ---- root -------------------------------------------------------------------------------------------------------
  fs::path root = yp.parent_path();
  if (from_zip) {
    // A zip's dataset is what it unpacked, wherever its YAML's `path` pointed on the machine that zipped it
    // (Ultralytics too roots a zip's dataset at the folder of its YAML). A relative `path` naming a folder inside
    // the unpacked tree, resolved against the YAML's folder, is honoured; anything else (`path: .`, the dataset's own
    // name, ../datasets/x, an absolute path) is the YAML's folder.
    const fs::path top = unpacked_folder(yp, datasets_dir);
    if (y["path"] && !y["path"].IsNull() && !y["path"].as<std::string>().empty()) {
      const fs::path p(y["path"].as<std::string>());
      fs::path c = (yp.parent_path() / p).lexically_normal();
      if (!c.has_filename()) c = c.parent_path();  // "dir/." normalizes to "dir/"
      const fs::path rel = c.lexically_relative(top);
      if (p.is_relative() && !rel.empty() && *rel.begin() != ".." && fs::is_directory(c)) root = c;
    }
  } else if (y["path"] && !y["path"].IsNull()) {
    const fs::path p(y["path"].as<std::string>());
    if (p.is_absolute()) {
      root = p;
    } else {
      std::vector<fs::path> cands;
      cands.push_back(fs::path(datasets_dir.empty() ? default_datasets_dir() : datasets_dir) / p);
      if (const char* m = std::getenv("YOLO11_DATASETS_MIRROR"); m && *m) cands.push_back(fs::path(m) / p);
      cands.push_back(yp.parent_path() / p);
      root.clear();
      for (const auto& c : cands)
        if (fs::exists(c)) {
          root = fs::absolute(c).lexically_normal();
          break;
        }
      if (root.empty()) {
        std::string tried;
        for (const auto& c : cands) tried += "\n  " + c.lexically_normal().string();
        throw std::runtime_error("dataset '" + p.string() + "' of " + info.yaml + " not found; looked in:" + tried +
                                 "\n" + fetch_hint(p.filename().string(), cands.front().lexically_normal()));
      }
    }
    if (!fs::exists(root))
      throw std::runtime_error("dataset path " + root.string() + " (from " + info.yaml + ") does not exist; " +
                               fetch_hint(root.filename().string(), root));
  }
  info.root = root.lexically_normal().string();

  // ---- splits -----------------------------------------------------------------------------------------------------
  // A required split: present, not null, and naming at least one source.
  auto required_split = [&](const char* k) {
    const YAML::Node n = y[k];
    if (!n || n.IsNull()) throw std::runtime_error(info.yaml + ": missing required key `" + k + "`");
    std::vector<std::string> sources = split_sources(n, root, k, info.yaml);
    if (sources.empty())
      throw std::runtime_error(info.yaml + ":" + std::to_string(n.Mark().line + 1) + ": `" + k + "` lists no " +
                               "source (" + dump(n) + "): give an images folder, a list file or an image, or a " +
                               "list of them (as `" + k + ": images/" + k + "`)");
    return sources;
  };
  info.train = required_split("train");
  info.val = required_split("val");
  info.test = split_sources(y["test"], root, "test", info.yaml);

  // ---- names / nc -------------------------------------------------------------------------------------------------
  const YAML::Node names = y["names"];
  if (!names || names.IsNull())
    throw std::runtime_error(info.yaml + ": `names` is missing or null (value: " + (names ? dump(names) : "absent") +
                             "); give a list [a, b] or a mapping {0: a, 1: b}");
  if (names.IsScalar())
    throw std::runtime_error(info.yaml + ": `names` must be a list or a mapping, got the string '" +
                             names.as<std::string>() + "'");
  if (names.IsSequence()) {
    for (const auto& n : names) {
      if (!n.IsScalar()) throw std::runtime_error(info.yaml + ": `names` entry is not a string: " + dump(n));
      info.names.push_back(n.as<std::string>());
    }
  } else {
    std::map<int64_t, std::string> m;
    for (const auto& kv : names) {
      int64_t id;
      try {
        id = kv.first.as<int64_t>();
      } catch (const YAML::Exception&) {
        throw std::runtime_error(info.yaml + ": `names` key '" + dump(kv.first) + "' is not an integer class id");
      }
      if (!kv.second.IsScalar())
        throw std::runtime_error(info.yaml + ": `names` value for id " + std::to_string(id) +
                                 " is not a string: " + dump(kv.second));
      m[id] = kv.second.as<std::string>();
    }
    int64_t expect = 0;
    for (const auto& [id, n] : m) {
      if (id != expect)
        throw std::runtime_error(info.yaml + ": `names` ids must be 0..N-1 without gaps; got " + dump(names) +
                                 " (id " + std::to_string(expect) + " missing)");
      info.names.push_back(n);
      ++expect;
    }
  }
  if (info.names.empty()) throw std::runtime_error(info.yaml + ": `names` is empty (" + dump(names) + ")");
  info.nc = static_cast<int64_t>(info.names.size());
  if (y["nc"] && !y["nc"].IsNull()) {
    int64_t nc = -1;
    try {
      nc = y["nc"].as<int64_t>();
    } catch (const YAML::Exception&) {
      throw std::runtime_error(info.yaml + ": `nc` is not an integer: " + dump(y["nc"]));
    }
    if (nc != info.nc)
      throw std::runtime_error(info.yaml + ": `nc: " + std::to_string(nc) + "` disagrees with the " +
                               std::to_string(info.nc) + " entries of `names` " + dump(names));
  }
  if (const YAML::Node ch = y["channels"]; ch && !ch.IsNull()) {
    int64_t c = -1;
    try {
      c = ch.as<int64_t>();
    } catch (const YAML::Exception&) {
    }
    if (c != 3)
      throw std::runtime_error(info.yaml + ": `channels: " + dump(ch) + "` is not supported: this trainer builds "
                               "3-channel (BGR) models and reads grayscale images as 3 equal channels. Remove "
                               "`channels` to train on the images as 3-channel, or convert a multispectral dataset "
                               "to 3 channels");
  }
  static const std::set<std::string> kKnown{"path", "train", "val", "test", "names", "nc", "channels", "download"};
  std::string unknown;
  for (const auto& kv : y) {
    const std::string k = kv.first.as<std::string>();
    if (!kKnown.count(k)) unknown += (unknown.empty() ? "" : ", ") + k;
  }
  if (!unknown.empty()) {
    info.warnings.push_back(info.yaml + ": keys not used by this trainer (detection): " + unknown +
                            " (known: path, train, val, test, names, nc, channels, download)");
    spdlog::warn("{}", info.warnings.back());
  }
  return info;
}

}  // namespace

}  // namespace yolo11::data
