#pragma once
// engine::Predictor: YOLO11 detection on images, folders, globs, list files, video files and webcams, as
// `yolo11-predict` / `yolo11 predict` run it (Ultralytics predict mode): letterbox, batched inference, NMS, boxes
// back to the original image, drawing, and txt / json results. Needs no torch header: the model lives behind a pimpl.
//
//   yolo11::engine::PredictOptions o;  o.imgsz = 640;  o.conf = 0.25;
//   yolo11::engine::Predictor p("best.safetensors", o);
//   cv::Mat img = cv::imread("bus.jpg");                 // BGR uint8, any size
//   auto preds = p.predict({img});                       // preds[0].boxes: xyxy in bus.jpg's pixels
//   p.run("clip.mp4", "runs/predict/exp");               // annotated clip.avi + labels/clip_<frame>.txt
#include <opencv2/core.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace yolo11::engine {

/// Predict settings, Ultralytics default.yaml names and defaults.
struct PredictOptions {
  int64_t imgsz = 640;      ///< letterbox size in pixels (long side scaled to it, padded to a multiple of 32)
  double conf = 0.25;       ///< minimum confidence kept, [0, 1]
  double iou = 0.7;         ///< NMS IoU threshold, (0, 1]
  int64_t max_det = 300;    ///< detections kept per image, >= 1
  int64_t batch = 1;        ///< images per forward pass (consecutive images with the same letterboxed shape)
  int64_t vid_stride = 1;   ///< video / webcam: every vid_stride-th frame is predicted and written
  int64_t line_width = 2;   ///< box line width in pixels
  std::string device = "cpu";  ///< "cpu", "0", "cuda", "cuda:N" (select_device())
  std::string data;         ///< optional dataset YAML whose names replace the weights' names (nc must match)
  bool save = true;         ///< write annotated images / videos
  bool save_txt = false;    ///< write labels/<stem>.txt: "cls cx cy w h [conf]", normalized to the original image
  bool save_conf = false;   ///< append the confidence to each txt line
  bool save_json = false;   ///< write predictions.json (every box, in original-image pixels)
  std::string project = "runs/predict", name = "predict";
  bool exist_ok = false;
  std::string source;       ///< the `source` key (the CLI's --source wins when given)

  /// Applies Ultralytics-style "key=value" overrides through the training key table (configs/default.yaml, one
  /// parser for every mode), with predict's defaults conf 0.25 and batch 1 (Ultralytics Model.predict); line_width 0
  /// means 2 px, an empty device "cpu". Throws std::runtime_error naming the key, the bad value and what is allowed
  /// (unknown keys suggest the nearest valid key).
  static PredictOptions from_overrides(const std::vector<std::string>& overrides);
};

/// One detection in original-image pixels.
struct Box {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  ///< xyxy corners, pixels, clipped to [0, width] × [0, height]
  float conf = 0;                        ///< confidence in [0, 1]
  int64_t cls = 0;                       ///< class index in [0, nc)
};

/// The detections of one image or video frame.
struct Prediction {
  std::string path;        ///< the source file ("" for images given as cv::Mat; "webcam:N" for a camera)
  int64_t frame = 0;       ///< video / webcam frame number, 1-based as Ultralytics; 0 for an image
  int height = 0, width = 0;  ///< original image size in pixels
  int input_h = 0, input_w = 0;  ///< letterboxed network input size in pixels
  double ms = 0;           ///< inference + NMS time of its batch divided by the batch size, milliseconds
  std::vector<Box> boxes;  ///< by decreasing confidence, at most max_det
};

/// What a source is, after resolve_source().
struct Source {
  enum class Kind { Files, Webcam } kind = Kind::Files;
  std::vector<std::string> files;  ///< images and videos in order (Kind::Files), each with a supported extension
  int webcam = -1;                 ///< camera index (Kind::Webcam)
};

/// Image / video file extensions predict reads (lower case, with the dot).
const std::vector<std::string>& image_extensions();
const std::vector<std::string>& video_extensions();

/// Resolves a --source string as Ultralytics does: an image or video file, a folder (its images and videos, sorted,
/// hidden entries skipped), a glob ("dir/*.jpg"), a .txt list of such paths (relative to the working directory, else
/// to the list's folder; blank lines and '#' comments skipped), or a webcam index ("0"). Throws std::runtime_error
/// with a clear message for URLs and streams (rtsp/rtmp/http/https/tcp: no network here), a missing path, an
/// unsupported extension, an empty folder, a glob matching nothing and a list naming a missing file.
Source resolve_source(const std::string& source);

/// Counts of one Predictor::run().
struct PredictSummary {
  std::string save_dir;
  int64_t images = 0;      ///< image files predicted
  int64_t videos = 0;      ///< video files / webcams opened
  int64_t frames = 0;      ///< video / webcam frames predicted (and written, when save)
  int64_t detections = 0;  ///< boxes over every image and frame
  std::vector<std::string> outputs;  ///< annotated images and videos written
};

class Predictor {
 public:
  /// Loads `weights` (load_detector(): any YOLO11 scale, names from the file's metadata or options.data), fuses it
  /// and moves it to options.device. Throws std::runtime_error for bad weights, device or a dataset whose nc differs.
  Predictor(const std::string& weights, PredictOptions options, const std::string& model_yaml = "configs/models/yolo11.yaml");
  ~Predictor();
  Predictor(Predictor&&) noexcept;
  Predictor& operator=(Predictor&&) noexcept;

  /// Detects objects in BGR uint8 images (H×W×3, any sizes; grayscale and BGRA are converted). Returns one
  /// Prediction per image, in order, boxes xyxy in that image's pixels. Throws std::runtime_error for an empty image.
  std::vector<Prediction> predict(const std::vector<cv::Mat>& images);

  /// A copy of `image` with `p`'s boxes and "name conf" captions drawn (UTF-8 names via plot/text.h); a caption
  /// that would leave the picture is moved inside it (plot::caption_rect).
  cv::Mat annotate(const cv::Mat& image, const Prediction& p) const;

  /// Predicts every image / frame of `source` (resolve_source()) and writes into `save_dir` (created): annotated
  /// images under their file names, annotated videos as <stem>.avi (MJPG, the source's fps, one frame per predicted
  /// frame), labels/<stem>.txt or labels/<stem>_<frame>.txt with save_txt, predictions.json with save_json.
  /// Throws std::runtime_error when a source is unsupported, an image cannot be read, a video cannot be opened or
  /// decodes 0 frames, or an output cannot be written.
  PredictSummary run(const std::string& source, const std::string& save_dir);

  /// Ultralytics txt lines for `p`: "cls cx cy w h[ conf]\n" per box, normalized by the original width / height.
  static std::string to_txt(const Prediction& p, bool save_conf);

  const std::vector<std::string>& names() const;  ///< class names, nc entries
  const std::string& weights_report() const;      ///< the weight-transfer report line
  const PredictOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace yolo11::engine
