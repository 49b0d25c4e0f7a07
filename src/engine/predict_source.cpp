// Predict sources and options: resolve_source() (file, folder, glob, .txt list, webcam index; URLs refused) and
// PredictOptions::from_overrides(). The inference itself is in predictor.cpp.
#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "yolo11/config/train_config.h"
#include "yolo11/engine/predictor.h"

namespace fs = std::filesystem;

namespace yolo11::engine {
namespace {

std::string lower_ext(const fs::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e;
}

bool in(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

bool supported(const fs::path& p) {
  const std::string e = lower_ext(p);
  return in(image_extensions(), e) || in(video_extensions(), e);
}

[[noreturn]] void unsupported(const std::string& what, const fs::path& p) {
  throw std::runtime_error(what + ": unsupported file type '" + p.extension().string() + "' (images: " +
                           joined(image_extensions()) + "; videos: " + joined(video_extensions()) + ")");
}

bool hidden(const fs::path& p) {
  const std::string n = p.filename().string();
  return !n.empty() && n[0] == '.';
}

/// The supported files of a folder, sorted; `skipped` counts the rest (hidden entries are ignored silently).
std::vector<std::string> folder_files(const fs::path& dir, int64_t& skipped) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (hidden(e.path()) || !e.is_regular_file()) continue;
    if (supported(e.path())) out.push_back(e.path().string());
    else ++skipped;
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> glob_files(const std::string& pattern, int64_t& skipped) {
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<std::string> out;
  if (rc == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      const fs::path p = g.gl_pathv[i];
      if (fs::is_regular_file(p) && supported(p)) out.push_back(p.string());
      else ++skipped;
    }
  globfree(&g);
  std::sort(out.begin(), out.end());
  return out;
}

bool has_glob(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

/// One path (file, folder or glob) appended to `out`; `what` names it in errors.
void add_path(const std::string& s, const std::string& what, std::vector<std::string>& out) {
  int64_t skipped = 0;
  if (has_glob(s) && !fs::exists(s)) {
    auto v = glob_files(s, skipped);
    if (v.empty())
      throw std::runtime_error(what + ": the glob matches no image or video" +
                               (skipped ? " (" + std::to_string(skipped) + " other files matched)" : std::string()));
    out.insert(out.end(), v.begin(), v.end());
  } else if (fs::is_directory(s)) {
    auto v = folder_files(s, skipped);
    if (v.empty())
      throw std::runtime_error(what + ": the folder has no image or video (" + std::to_string(skipped) +
                               " other files; images: " + joined(image_extensions()) + "; videos: " +
                               joined(video_extensions()) + ")");
    out.insert(out.end(), v.begin(), v.end());
  } else if (fs::is_regular_file(s)) {
    if (!supported(s)) unsupported(what, s);
    out.push_back(s);
  } else {
    throw std::runtime_error(what + " does not exist");
  }
}

}  // namespace

const std::vector<std::string>& image_extensions() {
  static const std::vector<std::string> v = {".bmp", ".jpeg", ".jpg", ".png", ".tif", ".tiff", ".webp", ".pfm"};
  return v;
}

const std::vector<std::string>& video_extensions() {
  static const std::vector<std::string> v = {".asf", ".avi", ".gif", ".m4v", ".mkv", ".mov",
                                             ".mp4", ".mpeg", ".mpg", ".ts", ".wmv", ".webm"};
  return v;
}

Source resolve_source(const std::string& source) {
  Source src;
  const std::string what = "--source " + source;
  if (source.empty()) throw std::runtime_error("--source is empty: give an image, a folder, a glob, a video, a .txt list "
                                               "or a webcam index");
  std::string low = source;
  std::transform(low.begin(), low.end(), low.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* scheme : {"rtsp://", "rtmp://", "http://", "https://", "tcp://", "udp://", "ftp://"})
    if (low.rfind(scheme, 0) == 0)
      throw std::runtime_error(what + ": URLs and streams are not supported by this build (no network access); "
                               "download the file and pass its path");
  if (low == "screen" || low.rfind("screen ", 0) == 0)
    throw std::runtime_error(what + ": screen capture is not supported; give files, a folder, a glob or a webcam index");
  if (source.find_first_not_of("0123456789") == std::string::npos && !fs::exists(source)) {
    src.kind = Source::Kind::Webcam;
    src.webcam = std::stoi(source.substr(0, 6));
    return src;
  }
  if (lower_ext(source) == ".txt" && fs::is_regular_file(source)) {
    std::ifstream f(source);
    if (!f) throw std::runtime_error(what + ": cannot read the list file");
    const fs::path parent = fs::path(source).parent_path();
    std::string line;
    int64_t n = 0;
    while (std::getline(f, line)) {
      ++n;
      if (n == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // UTF-8 BOM
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
      const size_t b = line.find_first_not_of(" \t");
      if (b == std::string::npos || line[b] == '#') continue;
      line = line.substr(b);
      const std::string where = source + ":" + std::to_string(n) + " '" + line + "'";
      std::string path = line;  // relative to the working directory, else to the list's folder (Ultralytics)
      if (!fs::path(line).is_absolute() && !fs::exists(line) && !parent.empty() &&
          (fs::exists(parent / line) || has_glob(line)))
        path = (parent / line).string();
      add_path(path, where, src.files);
    }
    if (src.files.empty()) throw std::runtime_error(what + ": the list names no image or video");
    return src;
  }
  add_path(source, what, src.files);
  return src;
}

PredictOptions PredictOptions::from_overrides(const std::vector<std::string>& kv) {
  // The same key table as training (configs/default.yaml; types, ranges and error messages from
  // src/config/config_keys.cpp). Predict's own defaults first, as Ultralytics' Model.predict sets them (conf 0.25,
  // batch 1), then the user's key=value arguments.
  std::vector<std::string> all{"mode=predict", "conf=0.25", "batch=1"};
  all.insert(all.end(), kv.begin(), kv.end());
  const auto c = config::TrainConfig::load("", all);
  PredictOptions a;
  a.imgsz = c.imgsz;
  a.conf = c.conf.value_or(0.25);
  a.iou = c.iou;
  a.max_det = c.max_det;
  a.batch = c.batch;
  a.vid_stride = c.vid_stride;
  a.line_width = c.line_width > 0 ? c.line_width : 2;
  a.device = c.device.empty() ? "cpu" : c.device;
  a.data = c.data;
  a.save = c.save;
  a.save_txt = c.save_txt;
  a.save_conf = c.save_conf;
  a.save_json = c.save_json;
  a.project = c.project.empty() ? "runs/predict" : c.project;
  a.name = c.name.empty() ? "predict" : c.name;
  a.exist_ok = c.exist_ok;
  a.source = c.source;
  if (a.imgsz % 32 != 0)
    throw std::runtime_error("config: imgsz=" + std::to_string(a.imgsz) + " must be a multiple of 32 for predict");
  if (a.batch < 1) throw std::runtime_error("config: batch=" + std::to_string(a.batch) + " must be >= 1 for predict");
  return a;
}

}  // namespace yolo11::engine
