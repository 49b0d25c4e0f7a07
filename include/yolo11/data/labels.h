#pragma once
// Image listing, image → label path mapping, label parsing/verification, image decoding and the label cache.
// Defined outcome per bad input (each one tested in tests/data/test_labels.cpp):
//   image: zero-byte, undecodable, truncated (JPEG without EOI, PNG without IEND), < 10 px → skipped, "corrupt";
//          grayscale / 16-bit / alpha / CMYK → 3-channel 8-bit BGR (16-bit scaled by 255/65535, rounded);
//          EXIF orientation applied.
//   label row: column count not 5 nor an odd count ≥ 7, non-numeric field, non-integer, negative or ≥ 2^31 class,
//          class ≥ nc, coordinate < −tol or > 1 + tol (tol = 0.001), negative w/h → image skipped, "corrupt",
//          warning names file:line; values within tol are clipped to [0, 1].
//          polygon rows (cls x1 y1 x2 y2 x3 y3 ...) → bounding box; duplicate rows → removed (warning);
//          blank lines, CRLF, UTF-8 BOM, surrounding spaces → accepted.
//          degenerate box (w or h == 0, or < 1 px at imgsz) → that box dropped (warning file:line) by Dataset.
//   class id ≥ nc → image skipped ("corrupt"); the dataset then checks the ids of every file together (Dataset):
//          largest id == nc and no id 0 → one error ("class ids are 0-based"), else one summary with file:line.
//   missing / empty label file → background; label without image → never looked at.
// Listing (list_images): hidden files and directories (name starting with '.', e.g. .ipynb_checkpoints, macOS
//   AppleDouble "._x.jpg") are skipped and counted; list-file lines: UTF-8 BOM, CRLF, blank and '#' comment lines
//   accepted, '\' separators read as '/', lines naming a missing file, a non-image or a Windows drive path are
//   reported (file:line) and skipped.
#include <opencv2/core.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "yolo11/data/transforms.h"

namespace yolo11::data {

/// Accepted image extensions (case-insensitive, as Ultralytics IMG_FORMATS): avif bmp dng heic jp2 jpeg jpeg2000
/// jpg mpo png tif tiff webp (decoding needs the matching OpenCV codec; failures count as corrupt).
bool is_image_file(const std::string& path);

/// What list_images left out, for the dataset summary and its warnings.
struct ListReport {
  int64_t hidden = 0;                 ///< image files inside hidden dirs, or hidden themselves (not listed)
  int64_t unusable_lines = 0;         ///< list-file lines naming a missing file, a non-image or a drive path
  std::vector<std::string> warnings;  ///< "list.txt:3: ..." per unusable line; one line about hidden files
};

/// Image files of one source: a directory (recursive, sorted; hidden entries skipped), a .txt list (one path a
/// line; relative paths resolved against the list's directory), or a single image. Throws naming the path if it
/// does not exist. What was left out is added to `report` when given.
std::vector<std::string> list_images(const std::string& source, ListReport* report = nullptr);

/// Label path of an image: the LAST path component named `images` becomes `labels`, the extension after the last
/// dot of the file name becomes `.txt` (appended when there is none). Pure string operation on the path as given
/// (symlinks are not resolved).
std::string img2label_path(const std::string& img_path);

/// Decodes an image file into 3-channel 8-bit BGR with EXIF orientation applied (16-bit scaled, alpha dropped,
/// gray expanded). Throws std::runtime_error naming the file and the defect (empty, truncated, undecodable).
cv::Mat read_image(const std::string& path);

/// One parsed label row (normalized xywh, already clipped to [0, 1]) and its line number in the file.
struct LabelRow {
  int64_t cls = 0;
  Box xywhn{};
  int line = 0;
};

/// Result of parsing one label file.
struct LabelParse {
  bool ok = true;                     ///< false → the image must be skipped (error says why, with file:line)
  bool missing = false;               ///< no label file → background
  std::vector<LabelRow> rows;
  std::vector<std::string> warnings;  ///< non-fatal notes (duplicates removed, polygons converted, clipped values)
  std::string error;
  int64_t max_cls = -1;               ///< largest class id read (rows ≥ nc included), −1 when none
  bool has_cls0 = false;              ///< some row has class id 0
  int64_t oob_rows = 0;               ///< rows with class id ≥ nc (the image is then skipped)
  int first_oob_line = 0;             ///< line of the first such row
};
/// Parses a YOLO label file (see the header comment for each outcome). `nc` bounds the class ids.
LabelParse parse_label_file(const std::string& label_path, int64_t nc);

/// Status of one image after verification.
struct ImageRecord {
  std::string im_file, label_file;
  bool ok = false;                     ///< false → corrupt (skipped)
  std::array<int64_t, 2> shape{0, 0};  ///< (h, w) after EXIF orientation, pixels
  std::vector<LabelRow> rows;
  std::vector<std::string> warnings;   ///< per-file messages (errors included when !ok)
  bool label_missing = false;
  int64_t max_cls = -1;                ///< as LabelParse: largest class id read, rows ≥ nc included
  bool has_cls0 = false;
  int64_t oob_rows = 0;                ///< rows with class id ≥ nc
  int first_oob_line = 0;
};

/// Counts of a scan.
struct ScanStats {
  int64_t images = 0, found = 0, missing = 0, empty = 0, corrupt = 0, duplicates = 0, instances = 0;
  int64_t max_cls = -1;         ///< largest class id in any label file (ids ≥ nc included)
  bool has_cls0 = false;        ///< id 0 occurs somewhere
  int64_t oob_rows = 0, oob_images = 0;  ///< rows with class id ≥ nc, and the images they are in (skipped)
  std::string first_oob;        ///< "labels/x.txt:3" of the first such row (file order)
  int64_t hidden = 0;           ///< hidden image files not listed (Dataset fills it from list_images)
  int64_t shared_labels = 0;    ///< images whose label file another image also uses (a.jpg + a.png → a.txt)
  bool from_cache = false;
  std::string cache_path;
};

/// Verifies every image and label (in parallel on `threads` threads, 0 = hardware concurrency), using and
/// refreshing the label cache. The cache (JSON) lives beside the labels dir (`labels/<split>.yolo11.cache`);
/// when that is not writable, under $YOLO11_CACHE_DIR or ~/.cache/yolo11/labels (logged), and a write failure
/// there too only logs. It is keyed by each image's path, size and mtime, each label file's size, mtime and
/// content hash, the parser version and nc; a stale or unreadable cache is silently rebuilt.
std::vector<ImageRecord> scan_images(const std::vector<std::string>& im_files, int64_t nc, ScanStats& stats,
                                     int threads = 0);

/// True when `dir` is a directory we may write to: some write permission bit set (checked even for root, so a
/// read-only mirror such as ../shared is never written) and access(W_OK) succeeds.
bool dir_writable(const std::string& dir);

/// Scan parser version (bumped whenever the parsing rules change; part of the cache key).
constexpr int kLabelParserVersion = 2;

}  // namespace yolo11::data
