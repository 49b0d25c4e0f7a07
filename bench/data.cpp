// Data pipeline benchmark (not a test): images/s of the full training pipeline (mosaic + perspective + HSV + flip,
// imgsz 640) through the Loader with 1 and 2 workers, and the time per image of each transform.
//   yolo11-bench-data [dataset_root=<shared>/datasets/coco128] [epochs=3]
// Report: docs/data.md.
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "yolo11/data/loader.h"
#include "yolo11/engine/fp_env.h"

using namespace yolo11::data;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

static double cpu_s(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
// CPU time of the calling thread per call, ms (independent of other processes competing for the cores).
template <class F>
static double time_ms(int iters, F&& f) {
  f();  // warm-up
  const double t0 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
  for (int i = 0; i < iters; ++i) f();
  return (cpu_s(CLOCK_THREAD_CPUTIME_ID) - t0) * 1e3 / iters;
}

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  std::printf("%s\n", yolo11::engine::tune_malloc().c_str());  // as in yolo11-train
  std::string root = argc > 1 ? argv[1] : "";
  if (root.empty()) {
    for (const char* c : {"datasets/coco128", "../shared/datasets/coco128", "../../shared/datasets/coco128"})
      if (fs::exists(c)) {
        root = c;
        break;
      }
  }
  if (root.empty() || !fs::exists(root)) {
    std::fprintf(stderr, "coco128 not found; pass its root (tools/get_dataset.sh coco128)\n");
    return 1;
  }
  const int epochs = argc > 2 ? std::atoi(argv[2]) : 3;
  if (!std::getenv("YOLO11_CACHE_DIR")) setenv("YOLO11_CACHE_DIR", "/tmp/yolo11-bench-cache", 1);
  cv::setNumThreads(0);

  DatasetInfo info;
  info.root = root;
  info.nc = 80;
  DatasetOptions dopt;
  dopt.imgsz = 640;
  dopt.batch = 16;
  auto ds = std::make_shared<Dataset>(std::vector<std::string>{root + "/images/train2017"}, info, dopt);
  std::printf("dataset: %s\n", ds->summary().c_str());
  AugmentOptions aug;  // Ultralytics defaults: mosaic 1, scale 0.5, translate 0.1, hsv, fliplr 0.5

  std::printf("\n| workers | epoch | images | wall s | images/s (wall) | process CPU s | images per CPU-second |\n"
              "|---|---|---|---|---|---|---|\n");
  std::string loader_tables;
  for (int w : {1, 2}) {
    Loader l(ds, aug, LoaderOptions{.batch = 16, .workers = w, .seed = 0, .prefetch = 4});
    for (int e = 0; e < epochs; ++e) {
      const auto t0 = Clock::now();
      const double c0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
      l.start_epoch(e);
      int64_t n = 0;
      while (auto b = l.next()) n += b->size();
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      const double c = cpu_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
      std::printf("| %d | %d | %lld | %.3f | %.1f | %.3f | %.1f |\n", w, e, static_cast<long long>(n), s, n / s, c,
                  n / c);
      if (e == 0) (void)l.take_stats();  // decode epoch: not in the steady-state table below
    }
    loader_tables += "\n" + std::to_string(w) + " worker(s), epochs 1+ (loader internals, Loader::take_stats):\n" +
                     l.take_stats().table() + "\n";
  }

  std::printf("%s", loader_tables.c_str());

  // ---- per transform (single thread, one image / sample) -----------------------------------------------------------
  const int N = 40;
  const std::string f0 = ds->im_file(0);
  LoadedSample a = ds->load(0), b = ds->load(1), c = ds->load(2), d = ds->load(3);
  Rng rng(1);
  const SampleDraws dr = make_draws(rng, aug, static_cast<int64_t>(ds->size()));
  MosaicResult mos;
  PerspectiveResult rp;
  Labels lab;
  std::printf("\n| stage | CPU ms / image (one thread) |\n|---|---|\n");
  std::printf("| decode JPEG (read_image, %dx%d) | %.3f |\n", ds->ori_shape(0)[1], ds->ori_shape(0)[0],
              time_ms(N, [&] { (void)read_image(f0); }));
  const cv::Mat raw = read_image(f0);
  std::printf("| load_image resize to long side 640 | %.3f |\n", time_ms(N, [&] { (void)resize_long_side(raw, 640); }));
  std::printf("| mosaic (4 buffered images → 1280²) | %.3f |\n",
              time_ms(N, [&] { mos = mosaic4({&a, &b, &c, &d}, 640, 700, 600); }));
  std::printf("| random perspective (affine 1280² → 640²) | %.3f |\n",
              time_ms(N, [&] { rp = random_perspective(mos.img, mos.labels, dr.pre.persp, false, {-320, -320}); }));
  {
    cv::Mat m(2, 3, CV_32F, const_cast<float*>(rp.M.data())), out;
    std::printf("| random perspective by cv::warpAffine (what the reference calls) | %.3f |\n", time_ms(N, [&] {
                  cv::warpAffine(mos.img, out, m, cv::Size(640, 640), cv::INTER_LINEAR, cv::BORDER_CONSTANT,
                                 cv::Scalar(114, 114, 114));
                }));
  }
  cv::Mat img = rp.img.clone();
  std::printf("| HSV (BGR→HSV, LUT, →BGR), fused kernel%s | %.3f |\n",
              yolo11::data::detail::hsv_kernel_active() ? "" : " (inactive: OpenCV's calls)",
              time_ms(N, [&] { apply_hsv(img, 0.0123, -0.317, 0.2113); }));
  std::printf("| HSV by the reference's three OpenCV calls | %.3f |\n",
              time_ms(N, [&] { (void)yolo11::data::detail::hsv_by_opencv(img, 0.0123, -0.317, 0.2113); }));
  std::vector<Box> xywh(8, Box{100, 100, 50, 50});
  std::printf("| horizontal flip | %.3f |\n", time_ms(N, [&] { flip_lr(img, xywh); }));
  std::vector<uint8_t> chw(3 * 640 * 640);
  std::printf("| Format HWC BGR → CHW RGB | %.3f |\n", time_ms(N, [&] { hwc_bgr_to_chw_rgb(img, chw.data()); }));
  const auto lp = letterbox_params(a.img.rows, a.img.cols, 640, 640, false);
  std::printf("| letterbox (val) | %.3f |\n", time_ms(N, [&] { (void)letterbox_image(a.img, lp); }));
  const SampleSource src = ds->source();
  std::printf("| full train_transform (buffered loads) | %.3f |\n",
              time_ms(N, [&] { (void)train_transform(0, src, aug, dr); }));
  return 0;
}
