// Predict sources and options: resolve_source() (file, folder, glob, .txt list, webcam index; URLs refused) and
// PredictOptions::from_overrides(). The inference itself is in predictor.cpp.
#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

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

namespace {

bool parse_bool(const std::string& k, const std::string& v) {
  if (v == "true" || v == "True" || v == "1") return true;
  if (v == "false" || v == "False" || v == "0") return false;
  throw std::runtime_error("command line: " + k + "=" + v + " is not a boolean (true/false)");
}

}  // namespace

PredictOptions PredictOptions::from_overrides(const std::vector<std::string>& kv) {
  PredictOptions a;
  for (const auto& s : kv) {
    const auto eq = s.find('=');
    if (eq == std::string::npos) throw std::runtime_error("command line: '" + s + "' is not key=value");
    const std::string k = s.substr(0, eq), v = s.substr(eq + 1);
    try {
      size_t used = 0;
      auto num_i = [&] { const int64_t x = std::stoll(v, &used); if (used != v.size()) throw std::invalid_argument(v); return x; };
      auto num_f = [&] { const double x = std::stod(v, &used); if (used != v.size()) throw std::invalid_argument(v); return x; };
      if (k == "imgsz") a.imgsz = num_i();
      else if (k == "max_det") a.max_det = num_i();
      else if (k == "batch") a.batch = num_i();
      else if (k == "vid_stride") a.vid_stride = num_i();
      else if (k == "line_width") a.line_width = num_i();
      else if (k == "conf") a.conf = num_f();
      else if (k == "iou") a.iou = num_f();
      else if (k == "save") a.save = parse_bool(k, v);
      else if (k == "save_txt") a.save_txt = parse_bool(k, v);
      else if (k == "save_conf") a.save_conf = parse_bool(k, v);
      else if (k == "save_json") a.save_json = parse_bool(k, v);
      else if (k == "exist_ok") a.exist_ok = parse_bool(k, v);
      else if (k == "device") a.device = v;
      else if (k == "project") a.project = v;
      else if (k == "name") a.name = v;
      else if (k == "data") a.data = v;
      else
        throw std::runtime_error("command line: unknown key '" + k +
                                 "' (predict keys: imgsz conf iou max_det batch vid_stride save save_txt save_conf "
                                 "save_json line_width device project name exist_ok data)");
    } catch (const std::invalid_argument&) {
      throw std::runtime_error("command line: " + k + "=" + v + " is not a number");
    } catch (const std::out_of_range&) {
      throw std::runtime_error("command line: " + k + "=" + v + " is out of range");
    }
  }
  if (a.imgsz < 32 || a.imgsz % 32 != 0) throw std::runtime_error("command line: imgsz must be a positive multiple of 32");
  if (!(a.conf >= 0 && a.conf <= 1)) throw std::runtime_error("command line: conf=" + std::to_string(a.conf) + " must be in [0, 1]");
  if (!(a.iou > 0 && a.iou <= 1)) throw std::runtime_error("command line: iou=" + std::to_string(a.iou) + " must be in (0, 1]");
  if (a.max_det < 1) throw std::runtime_error("command line: max_det must be >= 1");
  if (a.batch < 1) throw std::runtime_error("command line: batch must be >= 1");
  if (a.vid_stride < 1) throw std::runtime_error("command line: vid_stride must be >= 1");
  if (a.line_width < 1) throw std::runtime_error("command line: line_width must be >= 1");
  return a;
}

}  // namespace yolo11::engine
