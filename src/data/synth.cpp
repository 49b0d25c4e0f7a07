// Synthetic shapes dataset writer (see synth.h).
#include "yolo11/data/synth.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <spdlog/spdlog.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "yolo11/data/augment.h"
#include "yolo11/io/file.h"

namespace yolo11::data {
namespace fs = std::filesystem;

/// Removes what an earlier synth wrote into <dir>/{images,labels}/<split> (files named <split>_NNNNN.*), so that a
/// smaller dataset written into the same folder is not mixed with the older images. Returns how many were removed.
static int64_t remove_previous(const fs::path& dir, const std::string& split) {
  static const std::regex ours(R"((train|val)_\d{5}\.[A-Za-z]+)");
  int64_t removed = 0;
  for (const char* sub : {"images", "labels"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir / sub / split, ec)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file() && std::regex_match(name, ours) && name.rfind(split + "_", 0) == 0) {
        fs::remove(e.path());
        ++removed;
      }
    }
  }
  return removed;
}

static void write_split(const fs::path& dir, const std::string& split, int64_t n, const SynthOptions& o, Rng& rng) {
  fs::create_directories(dir / "images" / split);
  fs::create_directories(dir / "labels" / split);
  if (const int64_t removed = remove_previous(dir, split); removed > 0)
    spdlog::info("synth: removed {} files of an earlier synthetic {} split in {}", removed, split, dir.string());
  for (int64_t i = 0; i < n; ++i) {
    const int H = static_cast<int>(o.imgsz);
    const int W = o.vary_aspect ? static_cast<int>(o.imgsz * rng.uniform(0.75, 1.25)) : H;
    // textured background: smooth gradient + noise + a few faint lines
    cv::Mat img(H, W, CV_8UC3);
    const double g0 = rng.uniform(60, 190), gx = rng.uniform(-0.3, 0.3), gy = rng.uniform(-0.3, 0.3);
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) {
        const double v = g0 + gx * x + gy * y;
        for (int c = 0; c < 3; ++c)
          img.at<cv::Vec3b>(y, x)[c] = cv::saturate_cast<uint8_t>(v + rng.uniform(-18, 18) + 6 * c);
      }
    for (int k = 0; k < 6; ++k)
      cv::line(img, cv::Point(static_cast<int>(rng.uniform(0, W)), static_cast<int>(rng.uniform(0, H))),
               cv::Point(static_cast<int>(rng.uniform(0, W)), static_cast<int>(rng.uniform(0, H))),
               cv::Scalar::all(rng.uniform(40, 220)), 1);
    std::vector<cv::Rect> placed;
    std::ostringstream lab;
    const int nobj = 1 + static_cast<int>(rng.randint(o.max_objects));
    for (int k = 0, tries = 0; k < nobj && tries < 50; ++tries) {
      const int cls = static_cast<int>(rng.randint(3));
      const int bw = static_cast<int>(rng.uniform(0.1, 0.4) * H), bh = static_cast<int>(rng.uniform(0.1, 0.4) * H);
      const int x0 = static_cast<int>(rng.uniform(0, W - bw)), y0 = static_cast<int>(rng.uniform(0, H - bh));
      const cv::Rect r(x0, y0, bw, bh);
      bool overlap = false;
      for (const auto& p : placed) overlap |= (r & cv::Rect(p.x - 2, p.y - 2, p.width + 4, p.height + 4)).area() > 0;
      if (overlap) continue;
      cv::Mat mask(H, W, CV_8UC1, cv::Scalar(0));
      if (cls == 0) {
        cv::rectangle(mask, r, cv::Scalar(255), cv::FILLED);
      } else if (cls == 1) {
        cv::ellipse(mask, cv::Point(x0 + bw / 2, y0 + bh / 2), cv::Size(bw / 2, bh / 2), 0, 0, 360, cv::Scalar(255),
                    cv::FILLED);
      } else {
        std::vector<cv::Point> tri{{x0 + bw / 2, y0}, {x0, y0 + bh - 1}, {x0 + bw - 1, y0 + bh - 1}};
        cv::fillConvexPoly(mask, tri, cv::Scalar(255));
      }
      const cv::Rect bb = cv::boundingRect(mask);
      if (bb.area() == 0) continue;
      const cv::Scalar col(rng.uniform(0, 255), rng.uniform(0, 255), rng.uniform(0, 255));
      img.setTo(col, mask);
      placed.push_back(bb);
      char line[128];
      std::snprintf(line, sizeof line, "%d %.6f %.6f %.6f %.6f\n", cls, (bb.x + bb.width / 2.0) / W,
                    (bb.y + bb.height / 2.0) / H, static_cast<double>(bb.width) / W,
                    static_cast<double>(bb.height) / H);
      lab << line;
      ++k;
    }
    char name[32];
    std::snprintf(name, sizeof name, "%s_%05lld", split.c_str(), static_cast<long long>(i));
    std::vector<uchar> buf;
    if (!cv::imencode(o.ext, img, buf)) throw std::runtime_error("synth: cannot encode " + o.ext);
    io::write_file_atomic((dir / "images" / split / (name + o.ext)).string(),
                          std::string_view(reinterpret_cast<const char*>(buf.data()), buf.size()));
    io::write_file_atomic((dir / "labels" / split / (std::string(name) + ".txt")).string(), lab.str());
  }
}

std::string write_synthetic_dataset(const std::string& dir, const SynthOptions& o) {
  std::string ext = o.ext;
  for (auto& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (ext != ".png" && ext != ".jpg" && ext != ".jpeg" && ext != ".bmp")
    throw std::runtime_error("synth: ext=" + o.ext + " is not an image format it writes; use ext=.png (lossless, "
                             "the default) or ext=.jpg (also .jpeg, .bmp)");
  const fs::path d = fs::absolute(dir).lexically_normal();
  Rng rng(o.seed);
  write_split(d, "train", o.train, o, rng);
  write_split(d, "val", o.val, o, rng);
  const fs::path yaml = d / "data.yaml";
  io::write_file_atomic(yaml.string(), "# synthetic shapes dataset written by yolo11-synth (seed " +
                                           std::to_string(o.seed) + ")\npath: " + d.string() +
                                           "\ntrain: images/train\nval: images/val\n\nnames:\n  0: rect\n  1: "
                                           "ellipse\n  2: triangle\n");
  return yaml.string();
}

}  // namespace yolo11::data
