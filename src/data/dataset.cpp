// Dataset: scan, filter, image cache, load_image, rect shapes (see dataset.h).
#include "yolo11/core/cpus.h"
#include "yolo11/data/dataset.h"

#include "yolo11/data/loader_stats.h"

#include <opencv2/imgproc.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "yolo11/data/opencv_threads.h"
#include "yolo11/io/file.h"
#include "yolo11/io/npy.h"

namespace yolo11::data {
namespace fs = std::filesystem;

// ---- cache=disk: an HWC uint8 image as a .npy (io/npy.h) ----------------------------------------------------------
static void save_image_npy(const std::string& path, const cv::Mat& img) {
  if (img.type() != CV_8UC3) throw std::runtime_error("cache=disk: expected an 8-bit 3-channel image for " + path);
  const cv::Mat c = img.isContinuous() ? img : img.clone();
  io::write_npy_u8(path, c.data, {c.rows, c.cols, 3});
}

static cv::Mat load_image_npy(const std::string& path) {
  const io::NpyU8 a = io::read_npy_u8(path);
  if (a.shape.size() != 3 || a.shape[2] != 3 || a.shape[0] <= 0 || a.shape[1] <= 0 ||
      a.shape[0] > std::numeric_limits<int>::max() || a.shape[1] > std::numeric_limits<int>::max())
    throw std::runtime_error(path + ": not an image (a .npy of shape (h, w, 3) is expected)");
  cv::Mat m(static_cast<int>(a.shape[0]), static_cast<int>(a.shape[1]), CV_8UC3);
  std::memcpy(m.data, a.data(), a.size());
  return m;
}

static int64_t mem_available_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string k;
  int64_t v;
  std::string unit;
  while (f >> k >> v >> unit)
    if (k == "MemAvailable:") return v * 1024;
  return -1;
}

// ---- Dataset --------------------------------------------------------------------------------------------------------
void check_class_ids(const ScanStats& st, const DatasetInfo& info) {
  if (st.oob_rows == 0 || st.max_cls != info.nc || st.has_cls0) return;
  throw std::runtime_error(
      "class ids are 0-based: the largest class id in the labels is " + std::to_string(st.max_cls) + " = nc " +
      std::to_string(info.nc) + " (" + std::to_string(info.names.size()) + " names in " + info.yaml +
      ") and id 0 never occurs, so the labels look 1-based (first offending row: " + st.first_oob +
      "). Subtract 1 from every class id in the label files (class 1 → 0, ...), or add the missing class to `names`");
}

Dataset::Dataset(const std::vector<std::string>& sources, const DatasetInfo& info, const DatasetOptions& opt)
    : info_(info), opt_(opt) {
  disable_opencv_threads();  // before the scan / cache threads and the loader workers use OpenCV
  std::vector<std::string> files;
  ListReport listed;
  for (const auto& s : sources) {
    auto f = list_images(s, &listed);
    files.insert(files.end(), f.begin(), f.end());
  }
  std::string src_list;
  for (const auto& s : sources) src_list += (src_list.empty() ? "" : ", ") + s;
  if (files.empty())
    throw std::runtime_error("no images found in " + (src_list.empty() ? std::string("(no source given)") : src_list) +
                             " (dataset " + info.yaml + ")");
  if (opt.fraction < 1.0)
    files.resize(std::max<size_t>(1, static_cast<size_t>(std::ceil(files.size() * opt.fraction))));

  std::vector<ImageRecord> recs = scan_images(files, info.nc, stats_, opt.threads);
  stats_.hidden = listed.hidden;
  warnings_ = listed.warnings;
  check_class_ids(stats_, info);
  if (stats_.oob_rows)
    warnings_.push_back(std::to_string(stats_.oob_rows) + " label row(s) in " + std::to_string(stats_.oob_images) +
                        " image(s) have a class id >= nc " + std::to_string(info.nc) + " (largest " +
                        std::to_string(stats_.max_cls) + ", first at " + stats_.first_oob +
                        "); those images are skipped");
  {  // a.jpg and a.png in one folder both read labels/a.txt: say so (Ultralytics does not)
    std::unordered_map<std::string, std::string> owner;
    for (const auto& r : recs) {
      const auto [it, fresh] = owner.emplace(r.label_file, r.im_file);
      if (fresh) continue;
      ++stats_.shared_labels;
      warnings_.push_back(r.im_file + " and " + it->second + " share the label file " + r.label_file +
                          " (same name, other extension): both get its boxes; rename one image and its label");
    }
  }
  for (auto& r : recs) {
    for (auto& w : r.warnings) warnings_.push_back(w);
    if (!r.ok) continue;
    // resized size at imgsz (load_image) for the sub-pixel test
    const double ratio = static_cast<double>(opt.imgsz) / std::max(r.shape[0], r.shape[1]);
    const double rw = r.shape[1] * ratio, rh = r.shape[0] * ratio;
    ImageLabels lab;
    for (const auto& row : r.rows) {
      const double wpx = row.xywhn[2] * rw, hpx = row.xywhn[3] * rh;
      if (row.xywhn[2] <= 0 || row.xywhn[3] <= 0 || wpx < 1.0 || hpx < 1.0) {
        ++dropped_boxes_;
        char buf[96];
        std::snprintf(buf, sizeof buf, "%.2f x %.2f px at imgsz %lld", wpx, hpx, static_cast<long long>(opt.imgsz));
        warnings_.push_back(r.label_file + ":" + std::to_string(row.line) + ": degenerate box dropped (" + buf + ")");
        continue;
      }
      if (!opt.classes.empty() && std::find(opt.classes.begin(), opt.classes.end(), row.cls) == opt.classes.end())
        continue;  // filtered out by `classes` (not counted as dropped)
      lab.xywhn.push_back(row.xywhn);
      lab.cls.push_back(opt.single_cls ? 0 : row.cls);
    }
    if (static_cast<int64_t>(lab.cls.size()) > opt.max_det)
      warnings_.push_back(r.im_file + ": " + std::to_string(lab.cls.size()) + " instances > max_det " +
                          std::to_string(opt.max_det) + " (validation keeps at most max_det predictions per image)");
    im_files_.push_back(r.im_file);
    shapes_.push_back(r.shape);
    labels_.push_back(std::move(lab));
  }
  if (im_files_.empty())
    throw std::runtime_error("no usable images in " + src_list + ": all " + std::to_string(files.size()) +
                             " are corrupt (first: " + (warnings_.empty() ? "" : warnings_.front()) + ")");
  int64_t inst = 0;
  for (const auto& l : labels_) inst += static_cast<int64_t>(l.cls.size());
  if (opt.require_instances && inst == 0)
    throw std::runtime_error("no labels found in " + src_list + ": every image is a background. Expected the label "
                             "of the first image at " + img2label_path(im_files_.front()) +
                             " (YOLO txt: 'class cx cy w h' normalized); images must be under an 'images' dir with "
                             "labels in the parallel 'labels' dir");

  spdlog::debug("dataset {}: {}", src_list, summary());  // the loader factories log it as "train:" / "val:"
  const size_t show = std::min<size_t>(warnings_.size(), 20);
  for (size_t i = 0; i < show; ++i) spdlog::warn("{}", warnings_[i]);
  if (warnings_.size() > show) spdlog::warn("... and {} more warnings", warnings_.size() - show);
  if (!stats_.cache_path.empty()) spdlog::debug("label cache {}", stats_.cache_path);

  // ---- rect: aspect-ratio order and batch shapes ------------------------------------------------------------------
  if (opt.rect) {
    const size_t n = im_files_.size();
    std::vector<double> ar(n);
    for (size_t i = 0; i < n; ++i) ar[i] = static_cast<double>(shapes_[i][0]) / shapes_[i][1];
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ar[a] < ar[b]; });
    auto permute = [&](auto& v) {
      auto c = v;
      for (size_t i = 0; i < n; ++i) v[i] = c[order[i]];
    };
    permute(im_files_);
    permute(shapes_);
    permute(labels_);
    permute(ar);
    const size_t B = static_cast<size_t>(std::max<int64_t>(1, opt.batch));
    const size_t nb = (n + B - 1) / B;
    for (size_t b = 0; b < nb; ++b) {
      const double mini = ar[b * B], maxi = ar[std::min(n, (b + 1) * B) - 1];
      double sh = 1, sw = 1;
      if (maxi < 1) {
        sh = maxi;
      } else if (mini > 1) {
        sw = 1 / mini;
      }
      const double s = static_cast<double>(opt.imgsz) / opt.stride;
      batch_shapes_.push_back({static_cast<int>(std::ceil(sh * s + opt.pad)) * static_cast<int>(opt.stride),
                               static_cast<int>(std::ceil(sw * s + opt.pad)) * static_cast<int>(opt.stride)});
    }
  }

  // ---- image cache ---------------------------------------------------------------------------------------------------
  core::CacheMode mode = opt.cache;
  if (mode == core::CacheMode::ram) {
    const int64_t need = cache_bytes_estimate();
    const int64_t avail = mem_available_bytes();
    if (avail >= 0 && static_cast<double>(need) * 1.5 > static_cast<double>(avail)) {
      spdlog::warn("cache=ram refused: {:.1f} GB needed (+50% margin) but only {:.1f} GB available; not caching "
                   "(use cache=disk or a smaller imgsz/fraction)",
                   need / 1e9, avail / 1e9);
      mode = core::CacheMode::off;
    } else {
      ram_.resize(size());
      std::atomic<size_t> next{0};
      const int nt = std::max(1, opt.threads > 0 ? opt.threads : core::usable_cores().usable);
      std::vector<std::thread> pool;
      for (int t = 0; t < nt; ++t)
        pool.emplace_back([&] {
          for (size_t i; (i = next.fetch_add(1)) < size();) ram_[i] = resize_long_side(read_image(im_files_[i]), opt_.imgsz);
        });
      for (auto& th : pool) th.join();
      spdlog::info("cache=ram: {:.2f} GB of images in memory", need / 1e9);
    }
  } else if (mode == core::CacheMode::disk) {
    npy_files_.resize(size());
    int64_t fallback = 0, written = 0;
    for (size_t i = 0; i < size(); ++i) {
      npy_files_[i] = npy_path(i, false);
      std::error_code ec;
      if (fs::exists(npy_files_[i], ec)) continue;
      if (!fs::exists(npy_path(i, true), ec)) {
        const cv::Mat img = read_image(im_files_[i]);
        try {
          if (!dir_writable(fs::path(npy_files_[i]).parent_path().string()))
            throw std::runtime_error("read-only image dir");
          remove_stale_npy(im_files_[i], npy_files_[i]);
          save_image_npy(npy_files_[i], img);
          ++written;
          continue;
        } catch (const std::exception&) {
          fs::create_directories(fs::path(npy_path(i, true)).parent_path());
          save_image_npy(npy_path(i, true), img);
          ++written;
        }
      }
      npy_files_[i] = npy_path(i, true);
      ++fallback;
    }
    spdlog::info("cache=disk: {} .npy files written, {} reused{}", written, size() - static_cast<size_t>(written),
                 fallback ? " (" + std::to_string(fallback) + " under the user cache dir: image dirs not writable)" : "");
  }
  cache_mode_ = mode;
  if (cache_mode_ != core::CacheMode::ram) {
    const int64_t cap = opt.buffer < 0 ? std::min<int64_t>({static_cast<int64_t>(size()), 8 * std::max<int64_t>(1, opt.batch), 1000})
                                       : opt.buffer;
    buf_cap_ = static_cast<size_t>(std::max<int64_t>(0, cap));
  }
}

namespace {
// Identity of an image file for its .npy: FNV-1a 64 of (full name, size, mtime in ns), so a.jpg and a.png never share
// an entry and a changed image gets a new one.
std::string image_stamp(const std::string& f) {
  std::error_code ec;
  const auto size = fs::file_size(f, ec);
  const auto mt = fs::last_write_time(f, ec).time_since_epoch().count();
  return io::fnv1a64_hex(fs::path(f).filename().string() + "|" + std::to_string(size) + "|" + std::to_string(mt));
}
}  // namespace

// Entries of an image's earlier versions (<name>.<other stamp>.npy beside it) are deleted before a new one is written.
void Dataset::remove_stale_npy(const std::string& im_file, const std::string& keep) {
  const fs::path dir = fs::path(im_file).parent_path();
  const std::string prefix = fs::path(im_file).filename().string() + ".";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.size() == prefix.size() + 20 && n.compare(0, prefix.size(), prefix) == 0 &&
        n.compare(n.size() - 4, 4, ".npy") == 0 && e.path().string() != keep)
      fs::remove(e.path(), ec);
  }
}

std::string Dataset::npy_path(size_t i, bool user_cache) const {
  const std::string& f = im_files_[i];
  const std::string stamp = image_stamp(f);
  if (!user_cache) return f + "." + stamp + ".npy";  // beside the image: a.jpg → a.jpg.<stamp>.npy
  const std::string key = io::fnv1a64_hex(fs::absolute(f).string() + "|" + stamp);
  return (fs::path(io::user_cache_dir()) / "images" / (key + ".npy")).string();
}

std::string Dataset::summary() const {
  std::ostringstream s;
  int64_t inst = 0;
  for (const auto& l : labels_) inst += static_cast<int64_t>(l.cls.size());
  auto n = [](int64_t k, const char* one, const char* many) { return std::to_string(k) + " " + (k == 1 ? one : many); };
  s << n(stats_.images, "image", "images") << ", " << n(stats_.missing + stats_.empty, "background", "backgrounds")
    << ", " << stats_.corrupt << " corrupt, " << n(inst, "instance", "instances") << ", "
    << n(stats_.duplicates, "duplicate", "duplicates") << " removed, "
    << n(dropped_boxes_, "degenerate box", "degenerate boxes") << " dropped";
  if (stats_.hidden) s << ", " << stats_.hidden << " hidden files skipped";
  if (stats_.shared_labels) s << ", " << stats_.shared_labels << " images sharing a label file";
  s << (stats_.from_cache ? " (label cache)" : "");
  return s.str();
}

std::array<int64_t, 2> Dataset::resized_shape(size_t i) const {
  const auto s = shapes_.at(i);
  const double r = static_cast<double>(opt_.imgsz) / std::max(s[0], s[1]);
  if (r == 1.0) return s;
  return {std::min<int64_t>(static_cast<int64_t>(std::ceil(s[0] * r)), opt_.imgsz),
          std::min<int64_t>(static_cast<int64_t>(std::ceil(s[1] * r)), opt_.imgsz)};
}

cv::Mat Dataset::load_uncached(size_t i) const {
  if (!npy_files_.empty()) {
    try {
      return resize_long_side(load_image_npy(npy_files_[i]), opt_.imgsz);
    } catch (const std::exception& e) {
      // an unreadable cache file: the original is decoded instead (said once per process; the run goes on)
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true))
        spdlog::warn(
            "cache=disk: {}; decoding {} instead (delete the .npy files to rebuild them; further unreadable "
            "cache files are not reported)",
            e.what(), im_files_[i]);
    }
  }
  return resize_long_side(read_image(im_files_[i]), opt_.imgsz);
}

LoadedSample Dataset::load(size_t i) const {
  LoadedSample s;
  if (!ram_.empty()) {
    ScopedPart t(LoaderPart::cache);
    s.img = ram_.at(i);
  } else if (buf_cap_ == 0) {
    ScopedPart t(LoaderPart::decode);
    s.img = load_uncached(i);
  } else {
    {
      ScopedPart t(LoaderPart::cache);
      std::lock_guard<std::mutex> lk(buf_m_);
      auto it = buf_.find(i);
      if (it != buf_.end()) s.img = it->second;
    }
    if (s.img.empty()) {
      ScopedPart t(LoaderPart::decode);
      s.img = load_uncached(i);  // decode outside the lock
      std::lock_guard<std::mutex> lk(buf_m_);
      if (buf_.emplace(i, s.img).second) {
        buf_order_.push_back(i);
        while (buf_order_.size() > buf_cap_) {
          buf_.erase(buf_order_.front());
          buf_order_.pop_front();
        }
      }
    }
  }
  s.xywhn = labels_.at(i).xywhn;
  s.cls = labels_.at(i).cls;
  return s;
}

SampleSource Dataset::source() const {
  return [this](int64_t i) { return load(static_cast<size_t>(i)); };
}

std::array<int, 2> Dataset::batch_shape(size_t i) const {
  if (batch_shapes_.empty()) return {static_cast<int>(opt_.imgsz), static_cast<int>(opt_.imgsz)};
  return batch_shapes_.at(i / static_cast<size_t>(std::max<int64_t>(1, opt_.batch)));
}

int64_t Dataset::cache_bytes_estimate() const {
  int64_t b = 0;
  for (size_t i = 0; i < size(); ++i) {
    const auto r = resized_shape(i);
    b += r[0] * r[1] * 3;
  }
  return b;
}

}  // namespace yolo11::data
