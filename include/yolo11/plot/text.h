#pragma once
// Text in pictures (predict boxes, batch mosaics, confusion matrix): ASCII goes through OpenCV's Hershey font exactly
// as cv::putText draws it; UTF-8 text (class names such as "café", "собака") goes through OpenCV's freetype module with
// a TrueType font when the build has it (YOLO11_HAS_FREETYPE) and a font file is found. Without either, callers draw the
// class index instead (display_name()), never "????".
#include <opencv2/core.hpp>

#include <cstdint>
#include <string>

namespace yolo11::plot {

/// True when every byte of `s` is 7-bit ASCII (Hershey can draw it).
bool is_ascii(const std::string& s);

/// The TrueType font used for non-ASCII text: env YOLO11_FONT when set (and readable), else the first existing of
/// DejaVuSans.ttf (fonts-dejavu-core), Noto Sans CJK, Liberation Sans under /usr/share/fonts. "" when none is found
/// or the build has no freetype module.
const std::string& utf8_font_path();

/// True when non-ASCII UTF-8 text can be drawn (freetype module compiled in and utf8_font_path() loaded).
bool utf8_text_available();

/// The label to draw for class `cls` named `name`: `name` when it is ASCII or utf8_text_available(), else the class
/// index as text ("17"). An empty name also yields the index.
std::string display_name(const std::string& name, int64_t cls);

/// Size in pixels of `text` drawn by put_text() at Hershey `font_scale` (FONT_HERSHEY_SIMPLEX units: the cap height
/// is about 22 * font_scale px) and `thickness`; `baseline` (optional) gets the descent below the origin, as
/// cv::getTextSize. Non-ASCII text without utf8_text_available() is measured as cv::getTextSize would.
cv::Size text_size(const std::string& text, double font_scale, int thickness, int* baseline = nullptr);

/// Draws `text` with its baseline-left corner at `org` (pixels) in BGR `color`, like cv::putText with
/// FONT_HERSHEY_SIMPLEX and LINE_AA; non-ASCII UTF-8 is drawn with the TrueType font at a matching height when
/// utf8_text_available() (else as cv::putText would: "?" per byte — use display_name() first). Thread-safe.
void put_text(cv::Mat& img, const std::string& text, cv::Point org, double font_scale, cv::Scalar color,
              int thickness = 1);

}  // namespace yolo11::plot
