#include "yolo11/plot/text.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <opencv2/imgproc.hpp>
#ifdef YOLO11_HAS_FREETYPE
#include <opencv2/freetype.hpp>
#endif

namespace yolo11::plot {
namespace {

#ifdef YOLO11_HAS_FREETYPE
// FONT_HERSHEY_SIMPLEX at scale s has a cap height of about 22 s px; DejaVu's cap height is 0.73 em, so a TrueType
// pixel height of 30 s draws capitals of the same size.
int ttf_height(double font_scale) { return std::max(8, static_cast<int>(std::lround(30.0 * font_scale))); }

struct Ttf {
  std::mutex mu;  // cv::freetype::FreeType2 is not thread-safe
  cv::Ptr<cv::freetype::FreeType2> ft;
};

Ttf* ttf() {
  static Ttf* t = [] {
    auto* r = new Ttf;
    const std::string& path = utf8_font_path();
    if (path.empty()) return r;
    try {
      r->ft = cv::freetype::createFreeType2();
      r->ft->loadFontData(path, 0);
    } catch (const cv::Exception& e) {
      spdlog::warn("font {} could not be loaded ({}); non-ASCII class names are drawn as class indices", path, e.what());
      r->ft.release();
    }
    return r;
  }();
  return t;
}
#endif

}  // namespace

bool is_ascii(const std::string& s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

const std::string& utf8_font_path() {
  static const std::string path = [] {
#ifdef YOLO11_HAS_FREETYPE
    namespace fs = std::filesystem;
    std::error_code ec;
    if (const char* env = std::getenv("YOLO11_FONT"); env && *env) {
      if (fs::is_regular_file(env, ec)) return std::string(env);
      spdlog::warn("YOLO11_FONT={} is not a file; looking for a system font", env);
    }
    for (const char* p : {"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                          "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
                          "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
                          "/usr/share/fonts/TTF/DejaVuSans.ttf", "/usr/share/fonts/dejavu/DejaVuSans.ttf"})
      if (fs::is_regular_file(p, ec)) return std::string(p);
#endif
    return std::string();
  }();
  return path;
}

bool utf8_text_available() {
#ifdef YOLO11_HAS_FREETYPE
  return !ttf()->ft.empty();
#else
  return false;
#endif
}

std::string display_name(const std::string& name, int64_t cls) {
  if (name.empty() || (!is_ascii(name) && !utf8_text_available())) return std::to_string(cls);
  return name;
}

cv::Size text_size(const std::string& text, double font_scale, int thickness, int* baseline) {
#ifdef YOLO11_HAS_FREETYPE
  if (!is_ascii(text) && utf8_text_available()) {
    Ttf* t = ttf();
    std::lock_guard<std::mutex> lock(t->mu);
    int base = 0;
    const cv::Size s = t->ft->getTextSize(text, ttf_height(font_scale), -1, &base);
    if (baseline) *baseline = base;
    return s;
  }
#endif
  int base = 0;
  const cv::Size s = cv::getTextSize(text, cv::FONT_HERSHEY_SIMPLEX, font_scale, thickness, &base);
  if (baseline) *baseline = base;
  return s;
}

void put_text(cv::Mat& img, const std::string& text, cv::Point org, double font_scale, cv::Scalar color,
              int thickness) {
#ifdef YOLO11_HAS_FREETYPE
  if (!is_ascii(text) && utf8_text_available()) {
    Ttf* t = ttf();
    std::lock_guard<std::mutex> lock(t->mu);
    t->ft->putText(img, text, org, ttf_height(font_scale), color, /*thickness=filled*/ -1, cv::LINE_AA,
                   /*bottomLeftOrigin=*/true);
    return;
  }
#endif
  cv::putText(img, text, org, cv::FONT_HERSHEY_SIMPLEX, font_scale, color, thickness, cv::LINE_AA);
}

}  // namespace yolo11::plot
