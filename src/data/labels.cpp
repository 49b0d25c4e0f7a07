// Image listing, label parsing/verification, image decoding and the label cache (see labels.h).
#include "yolo11/core/cpus.h"
#include "yolo11/data/labels.h"

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <unistd.h>
#include <tuple>

#include "yolo11/data/opencv_threads.h"
#include "yolo11/io/file.h"
#include "yolo11/core/strings.h"

namespace yolo11::data {
namespace fs = std::filesystem;

using core::lower;

bool is_image_file(const std::string& path) {
  static const std::set<std::string> kExt{"avif", "bmp", "dng", "heic", "jp2", "jpeg", "jpeg2000",
                                          "jpg",  "mpo", "png", "tif",  "tiff", "webp"};
  const std::string name = fs::path(path).filename().string();
  const auto dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  return kExt.count(lower(name.substr(dot + 1))) > 0;
}

static bool hidden_name(const std::string& name) { return !name.empty() && name[0] == '.' && name != "." && name != ".."; }

// One list-file line → the image path it names, or "" with `why` set (the line is then reported, not used).
static std::string list_entry(std::string line, const fs::path& list_dir, std::string& why) {
  const auto b = line.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  line = line.substr(b, line.find_last_not_of(" \t\r\n") - b + 1);
  if (line[0] == '#') return "";  // comment
  std::replace(line.begin(), line.end(), '\\', '/');  // Windows separators
  if (line.size() >= 2 && std::isalpha(static_cast<unsigned char>(line[0])) && line[1] == ':') {
    why = "Windows drive path '" + line + "' cannot be resolved here; make it relative to the list file";
    return "";
  }
  fs::path f(line);
  if (f.is_relative()) f = list_dir / f;
  const std::string path = f.lexically_normal().string();
  std::error_code ec;
  if (!is_image_file(path)) {
    why = "'" + line + "' is not an image file (extension); expected one image path per line";
    return "";
  }
  if (!fs::is_regular_file(path, ec)) {
    why = "listed image " + path + " does not exist";
    return "";
  }
  return path;
}

std::vector<std::string> list_images(const std::string& source, ListReport* report) {
  const fs::path p(source);
  std::vector<std::string> out;
  ListReport local;
  ListReport& rep = report ? *report : local;
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    int64_t hidden = 0;
    std::string example;
    for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::follow_directory_symlink, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      const std::string name = it->path().filename().string();
      const bool hid = hidden_name(name);
      if (hid && it->is_directory(ec)) {  // .ipynb_checkpoints, .git, ...: count its images, do not train on them
        for (auto h = fs::recursive_directory_iterator(it->path(), ec); !ec && h != fs::recursive_directory_iterator();
             h.increment(ec))
          if (h->is_regular_file(ec) && is_image_file(h->path().string())) {
            ++hidden;
            if (example.empty()) example = h->path().string();
          }
        it.disable_recursion_pending();
        ec.clear();
        continue;
      }
      if (it->is_regular_file(ec) && is_image_file(it->path().string())) {
        if (hid) {  // .x.jpg, macOS AppleDouble ._x.jpg
          ++hidden;
          if (example.empty()) example = it->path().string();
          continue;
        }
        out.push_back(it->path().string());
      }
    }
    if (ec) throw std::runtime_error("cannot list image directory " + source + ": " + ec.message());
    if (hidden) {
      rep.hidden += hidden;
      rep.warnings.push_back(source + ": " + std::to_string(hidden) +
                             " image(s) in hidden files or directories skipped (e.g. " + example + ")");
    }
  } else if (fs::is_regular_file(p, ec) && lower(p.extension().string()) == ".txt") {
    std::string text = io::read_file(source);
    if (text.size() >= 3 && text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);  // UTF-8 BOM
    std::istringstream in(text);
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
      ++lineno;
      std::string why;
      std::string f = list_entry(line, p.parent_path(), why);
      if (!f.empty()) {
        out.push_back(std::move(f));
      } else if (!why.empty()) {
        ++rep.unusable_lines;
        rep.warnings.push_back(source + ":" + std::to_string(lineno) + ": " + why + " (line skipped)");
      }
    }
  } else if (fs::is_regular_file(p, ec) && is_image_file(source)) {
    out.push_back(source);
  } else {
    throw std::runtime_error("image source " + source +
                             " does not exist (expected a directory of images, a .txt list of image paths or an "
                             "image); check `path`/`train`/`val` in the dataset YAML");
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string img2label_path(const std::string& img_path) {
  std::string s = img_path;
  const std::string sa = "/images/", sb = "/labels/";
  const auto pos = s.rfind(sa);
  if (pos != std::string::npos) {
    s.replace(pos, sa.size(), sb);
  } else if (s.rfind("images/", 0) == 0) {  // relative path starting with images/
    s.replace(0, 7, "labels/");
  }
  const auto slash = s.rfind('/');
  const auto dot = s.rfind('.');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) s.erase(dot);
  return s + ".txt";
}

// ---- image decoding -------------------------------------------------------------------------------------------------
static bool ends_with_jpeg_eoi(const std::string& b) {
  size_t n = b.size();
  while (n > 0 && (b[n - 1] == '\0' || std::isspace(static_cast<unsigned char>(b[n - 1])))) --n;
  return n >= 2 && static_cast<unsigned char>(b[n - 2]) == 0xFF && static_cast<unsigned char>(b[n - 1]) == 0xD9;
}

cv::Mat read_image(const std::string& path) {
  std::string bytes;
  try {
    bytes = io::read_file(path);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("cannot read image: ") + e.what());
  }
  if (bytes.empty()) throw std::runtime_error("image " + path + " is empty (0 bytes)");
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  const bool jpeg = bytes.size() >= 3 && u[0] == 0xFF && u[1] == 0xD8 && u[2] == 0xFF;
  const bool png = bytes.size() >= 8 && std::string(bytes.data() + 1, 3) == "PNG";
  if (jpeg && !ends_with_jpeg_eoi(bytes))
    throw std::runtime_error("image " + path + " is a truncated JPEG (no end-of-image marker)");
  if (png && bytes.find("IEND", bytes.size() > 32 ? bytes.size() - 32 : 0) == std::string::npos)
    throw std::runtime_error("image " + path + " is a truncated PNG (no IEND chunk)");
  cv::Mat raw;
  try {
    raw = cv::imdecode(cv::Mat(1, static_cast<int>(bytes.size()), CV_8UC1, bytes.data()),
                       cv::IMREAD_COLOR | cv::IMREAD_ANYDEPTH);
  } catch (const cv::Exception& e) {
    throw std::runtime_error("image " + path + " cannot be decoded: " + e.what());
  }
  if (raw.empty()) throw std::runtime_error("image " + path + " cannot be decoded (unknown or corrupt format)");
  cv::Mat img = raw;
  if (raw.depth() == CV_16U) {
    raw.convertTo(img, CV_8U, 255.0 / 65535.0);  // scaled and rounded, not the high byte
  } else if (raw.depth() == CV_32F || raw.depth() == CV_64F) {
    raw.convertTo(img, CV_8U, 255.0);
  } else if (raw.depth() != CV_8U) {
    raw.convertTo(img, CV_8U);
  }
  if (img.channels() == 1) {
    cv::cvtColor(img, img, cv::COLOR_GRAY2BGR);
  } else if (img.channels() == 4) {
    cv::cvtColor(img, img, cv::COLOR_BGRA2BGR);
  }
  return img;
}

// ---- label parsing --------------------------------------------------------------------------------------------------
static bool parse_double(const std::string& t, double& v) {
  if (t.empty()) return false;
  char* end = nullptr;
  errno = 0;
  v = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size() && errno == 0 && std::isfinite(v);
}

LabelParse parse_label_file(const std::string& label_path, int64_t nc) {
  LabelParse r;
  std::error_code ec;
  if (!fs::exists(label_path, ec)) {
    r.missing = true;
    return r;
  }
  std::string text;
  try {
    text = io::read_file(label_path);
  } catch (const std::exception& e) {
    r.ok = false;
    r.error = e.what();
    return r;
  }
  if (text.size() >= 3 && text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);
  constexpr double tol = 1e-3;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  std::set<std::tuple<int64_t, float, float, float, float>> seen;
  int dups = 0, polys = 0, clipped = 0;
  auto fail = [&](int ln, const std::string& why) {
    r.ok = false;
    r.error = label_path + ":" + std::to_string(ln) + ": " + why;
    r.rows.clear();
    return r;
  };
  while (std::getline(in, line)) {
    ++lineno;
    std::istringstream ls(line);  // whitespace split: handles \r, tabs, leading/trailing spaces
    std::vector<std::string> tok;
    for (std::string t; ls >> t;) tok.push_back(t);
    if (tok.empty()) continue;
    const size_t n = tok.size();
    if (!(n == 5 || (n >= 7 && n % 2 == 1)))
      return fail(lineno, "expected 5 columns (class cx cy w h) or a polygon (class x1 y1 x2 y2 x3 y3 ...), got " +
                              std::to_string(n) + ": '" + line + "'");
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i)
      if (!parse_double(tok[i], v[i])) return fail(lineno, "non-numeric field '" + tok[i] + "'");
    if (v[0] != std::floor(v[0]) || v[0] < 0)
      return fail(lineno, "class '" + tok[0] + "' is not a non-negative integer");
    if (v[0] > 2147483647.0)  // no dataset has 2^31 classes; beyond 2^63 the id would not even fit int64_t
      return fail(lineno, "class '" + tok[0] + "' is too large to be a class id (ids are 0 .. nc-1)");
    const auto cls = static_cast<int64_t>(v[0]);
    r.max_cls = std::max(r.max_cls, cls);
    r.has_cls0 = r.has_cls0 || cls == 0;
    if (cls >= nc) {  // read on: the dataset-wide id check needs every id of the file (Dataset)
      if (r.oob_rows++ == 0) r.first_oob_line = lineno;
      continue;
    }
    for (size_t i = 1; i < n; ++i)
      if (v[i] < -tol || v[i] > 1 + tol)
        return fail(lineno, "coordinate " + tok[i] + " outside [0, 1] (labels must be normalized xywh)");
    Box b;
    if (n == 5) {
      if (v[3] < 0 || v[4] < 0) return fail(lineno, "negative box size w " + tok[3] + " h " + tok[4]);
      for (size_t i = 1; i < 5; ++i) {
        const double c = std::clamp(v[i], 0.0, 1.0);
        clipped += c != v[i];
        b[i - 1] = static_cast<float>(c);
      }
    } else {
      ++polys;
      double x1 = 1, y1 = 1, x2 = 0, y2 = 0;
      for (size_t i = 1; i < n; i += 2) {
        const double x = std::clamp(v[i], 0.0, 1.0), y = std::clamp(v[i + 1], 0.0, 1.0);
        clipped += (x != v[i]) + (y != v[i + 1]);
        x1 = std::min(x1, x), x2 = std::max(x2, x), y1 = std::min(y1, y), y2 = std::max(y2, y);
      }
      b = {static_cast<float>((x1 + x2) / 2), static_cast<float>((y1 + y2) / 2), static_cast<float>(x2 - x1),
           static_cast<float>(y2 - y1)};
    }
    if (!seen.insert({cls, b[0], b[1], b[2], b[3]}).second) {
      ++dups;
      r.warnings.push_back(label_path + ":" + std::to_string(lineno) + ": duplicate row removed");
      continue;
    }
    r.rows.push_back({cls, b, lineno});
  }
  if (r.oob_rows)
    return fail(r.first_oob_line, std::to_string(r.oob_rows) + " row(s) with class id >= nc " + std::to_string(nc) +
                                      " (largest " + std::to_string(r.max_cls) +
                                      "; ids index `names` of the dataset YAML, from 0); fix the labels or the YAML");
  if (polys) r.warnings.push_back(label_path + ": " + std::to_string(polys) + " polygon row(s) converted to boxes");
  if (clipped)
    r.warnings.push_back(label_path + ": " + std::to_string(clipped) + " coordinate(s) within 0.001 of [0, 1] clipped");
  return r;
}

// ---- verification + cache --------------------------------------------------------------------------------------------
namespace {
struct FileStamp {
  int64_t size = -1, mtime = 0;
  uint64_t hash = 0;  // labels only
  bool operator==(const FileStamp& o) const { return size == o.size && mtime == o.mtime && hash == o.hash; }
};
FileStamp stamp(const std::string& p, bool with_hash) {
  FileStamp s;
  std::error_code ec;
  const auto sz = fs::file_size(p, ec);
  if (ec) return s;
  s.size = static_cast<int64_t>(sz);
  s.mtime = static_cast<int64_t>(fs::last_write_time(p, ec).time_since_epoch().count());
  if (with_hash) {
    try {
      s.hash = io::fnv1a64(io::read_file(p));
    } catch (const std::exception&) {
      s.hash = 0;
    }
  }
  return s;
}

ImageRecord verify_one(const std::string& im, int64_t nc) {
  ImageRecord rec;
  rec.im_file = im;
  rec.label_file = img2label_path(im);
  try {
    const cv::Mat img = read_image(im);
    if (img.rows < 10 || img.cols < 10)
      throw std::runtime_error("image " + im + " is " + std::to_string(img.cols) + "x" + std::to_string(img.rows) +
                               " px; at least 10x10 required");
    rec.shape = {img.rows, img.cols};
  } catch (const std::exception& e) {
    rec.ok = false;
    rec.warnings.push_back(std::string("skipped corrupt image: ") + e.what());
    return rec;
  }
  LabelParse lp = parse_label_file(rec.label_file, nc);
  rec.warnings = lp.warnings;
  rec.max_cls = lp.max_cls;
  rec.has_cls0 = lp.has_cls0;
  rec.oob_rows = lp.oob_rows;
  rec.first_oob_line = lp.first_oob_line;
  if (!lp.ok) {
    rec.ok = false;
    rec.warnings.push_back("skipped " + im + ": bad label " + lp.error);
    return rec;
  }
  rec.label_missing = lp.missing;
  rec.rows = std::move(lp.rows);
  rec.ok = true;
  return rec;
}

}  // namespace

bool dir_writable(const std::string& dir) {
  std::error_code ec;
  const auto st = fs::status(dir, ec);
  if (ec || !fs::is_directory(st)) return false;
  // Mode bits first: a directory nobody may write to (e.g. the read-only ../shared mirror) is treated as read-only
  // even for root, who would otherwise bypass the permissions and write into it.
  const auto w = fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write;
  if ((st.permissions() & w) == fs::perms::none) return false;
  return ::access(dir.c_str(), W_OK) == 0;
}

namespace {
std::string cache_path_for(const std::vector<std::string>& im_files, bool fallback) {
  const fs::path lab = fs::path(img2label_path(im_files.front())).parent_path();
  if (!fallback) return (lab.parent_path() / (lab.filename().string() + ".yolo11.cache")).string();
  const fs::path base = io::user_cache_dir();
  const std::string key = io::fnv1a64_hex(fs::absolute(lab).string());
  return (base / "labels" / (lab.filename().string() + "-" + key + ".cache")).string();
}

nlohmann::json to_json(const ImageRecord& r, const FileStamp& is, const FileStamp& ls) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows)
    rows.push_back({row.cls, row.xywhn[0], row.xywhn[1], row.xywhn[2], row.xywhn[3], row.line});
  return {{"im", r.im_file},  {"lb", r.label_file},         {"is", is.size},     {"im_mt", is.mtime},
          {"ls", ls.size},    {"lm", ls.mtime},             {"lh", ls.hash},     {"ok", r.ok},
          {"h", r.shape[0]},  {"w", r.shape[1]},            {"rows", rows},      {"warn", r.warnings},
          {"lmiss", r.label_missing}, {"mc", r.max_cls},  {"c0", r.has_cls0},    {"oob", r.oob_rows},
          {"oobl", r.first_oob_line}};
}

bool from_cache(const std::string& path, const std::vector<std::string>& im_files, int64_t nc,
                std::vector<ImageRecord>& out) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return false;
  try {
    const auto j = nlohmann::json::parse(io::read_file(path));
    if (j.at("version").get<int>() != kLabelParserVersion || j.at("nc").get<int64_t>() != nc) return false;
    const auto& files = j.at("files");
    if (files.size() != im_files.size()) return false;
    out.clear();
    out.reserve(files.size());
    for (size_t i = 0; i < files.size(); ++i) {
      const auto& f = files[i];
      if (f.at("im").get<std::string>() != im_files[i]) return false;
      const FileStamp is = stamp(im_files[i], false);
      if (is.size != f.at("is").get<int64_t>() || is.mtime != f.at("im_mt").get<int64_t>()) return false;
      ImageRecord r;
      r.im_file = im_files[i];
      r.label_file = f.at("lb").get<std::string>();
      const FileStamp ls = stamp(r.label_file, true);
      if (ls.size != f.at("ls").get<int64_t>() || ls.mtime != f.at("lm").get<int64_t>() ||
          ls.hash != f.at("lh").get<uint64_t>())
        return false;
      r.ok = f.at("ok").get<bool>();
      r.shape = {f.at("h").get<int64_t>(), f.at("w").get<int64_t>()};
      for (const auto& row : f.at("rows"))
        r.rows.push_back({row[0].get<int64_t>(),
                          {row[1].get<float>(), row[2].get<float>(), row[3].get<float>(), row[4].get<float>()},
                          row[5].get<int>()});
      r.warnings = f.at("warn").get<std::vector<std::string>>();
      r.label_missing = f.at("lmiss").get<bool>();
      r.max_cls = f.at("mc").get<int64_t>();
      r.has_cls0 = f.at("c0").get<bool>();
      r.oob_rows = f.at("oob").get<int64_t>();
      r.first_oob_line = f.at("oobl").get<int>();
      out.push_back(std::move(r));
    }
    return true;
  } catch (const std::exception&) {
    return false;  // unreadable or from another version: rebuild silently
  }
}
}  // namespace

std::vector<ImageRecord> scan_images(const std::vector<std::string>& im_files, int64_t nc, ScanStats& stats,
                                     int threads) {
  stats = ScanStats{};
  stats.images = static_cast<int64_t>(im_files.size());
  std::vector<ImageRecord> recs;
  if (im_files.empty()) return recs;
  const std::string primary = cache_path_for(im_files, false), fallback = cache_path_for(im_files, true);
  for (const auto& p : {primary, fallback})
    if (from_cache(p, im_files, nc, recs)) {
      stats.from_cache = true;
      stats.cache_path = p;
      break;
    }
  if (!stats.from_cache) {
    recs.assign(im_files.size(), ImageRecord{});
    const int nt = std::max(1, threads > 0 ? threads : core::usable_cores().usable);
    std::atomic<size_t> next{0};
    std::vector<std::thread> pool;
    disable_opencv_threads();
    for (int t = 0; t < std::min<int>(nt, static_cast<int>(im_files.size())); ++t)
      pool.emplace_back([&] {
        for (size_t i; (i = next.fetch_add(1)) < im_files.size();) recs[i] = verify_one(im_files[i], nc);
      });
    for (auto& th : pool) th.join();
    nlohmann::json files = nlohmann::json::array();
    for (const auto& r : recs) files.push_back(to_json(r, stamp(r.im_file, false), stamp(r.label_file, true)));
    const std::string bytes = nlohmann::json{{"version", kLabelParserVersion}, {"nc", nc}, {"files", files}}.dump();
    try {
      if (!dir_writable(fs::path(primary).parent_path().string()))
        throw std::runtime_error(fs::path(primary).parent_path().string() +
                                 (fs::is_directory(fs::path(primary).parent_path()) ? " is read-only" : " does not exist"));
      io::write_file_atomic(primary, bytes);
      stats.cache_path = primary;
    } catch (const std::exception& e) {
      try {
        fs::create_directories(fs::path(fallback).parent_path());
        io::write_file_atomic(fallback, bytes);
        stats.cache_path = fallback;
        spdlog::info("label cache: cannot write beside the labels ({}), using {}", e.what(), fallback);
      } catch (const std::exception& e2) {
        spdlog::warn("label cache not saved ({}; {}); labels will be verified again next time", e.what(), e2.what());
      }
    }
  }
  for (const auto& r : recs) {
    stats.max_cls = std::max(stats.max_cls, r.max_cls);
    stats.has_cls0 = stats.has_cls0 || r.has_cls0;
    if (r.oob_rows) {
      if (stats.oob_images++ == 0) stats.first_oob = r.label_file + ":" + std::to_string(r.first_oob_line);
      stats.oob_rows += r.oob_rows;
    }
    if (!r.ok) {
      ++stats.corrupt;
      continue;
    }
    if (r.label_missing) {
      ++stats.missing;
    } else if (r.rows.empty()) {
      ++stats.empty;
    } else {
      ++stats.found;
    }
    stats.instances += static_cast<int64_t>(r.rows.size());
    for (const auto& w : r.warnings)
      if (w.find("duplicate row removed") != std::string::npos) ++stats.duplicates;
  }
  return recs;
}

}  // namespace yolo11::data
