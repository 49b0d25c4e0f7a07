// Threaded loader with an ordered, bounded prefetch queue (see loader.h).
#include "yolo11/data/loader.h"

#include <torch/cuda.h>
#include <ATen/EmptyTensor.h>
#include <torch/torch.h>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "yolo11/core/compat.h"
#include "yolo11/data/opencv_threads.h"
#include "yolo11/instrument/range.h"

namespace yolo11::data {

std::vector<int64_t> epoch_order(int64_t n, bool shuffle, uint64_t seed, int64_t epoch, int rank, int world) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  if (shuffle) {
    Rng rng = Rng::for_sample(seed ^ 0x5EED5EED5EED5EEDull, epoch, -1);
    for (int64_t i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng.randint(i + 1)]);
  }
  if (world <= 1) return perm;
  const int64_t per = (n + world - 1) / world, total = per * world;
  std::vector<int64_t> out;
  out.reserve(per);
  for (int64_t k = rank; k < total; k += world) out.push_back(perm[k % n]);
  return out;
}

namespace {
/// An uninitialised CPU tensor without an ATen operator. torch::empty under deterministic=true fills new memory
/// (LibTorch's deterministic fill of uninitialised memory), and that fill is a parallel operator: run from a loader
/// worker it starts an OpenMP team owned by the worker. libgomp then manages more threads than there are cores and
/// stops spinning between parallel regions for every team, the trainer's included: its intra-op threads sleep and
/// wake thousands of times a step (docs/instrument.md, "OpenMP teams started by loader threads").
at::Tensor uninitialized_cpu(at::IntArrayRef sizes, const at::TensorOptions& options) {
  return at::Tensor(at::detail::empty_cpu(sizes, options));
}
}  // namespace

at::Tensor to_float_channels_last(const at::Tensor& u8) {
  // One plain loop on the calling thread: ATen's .to(kFloat).div_(255) from a worker thread would start an OpenMP
  // team of intra-op threads per worker (workers × threads on the cores). Same values: IEEE x / 255.0f, as ATen's
  // division by a scalar.
  TORCH_CHECK(u8.scalar_type() == torch::kUInt8 && u8.dim() == 4 && u8.is_contiguous(),
              "to_float_channels_last: expected a contiguous uint8 (B, C, H, W) tensor");
  const int64_t B = u8.size(0), C = u8.size(1), H = u8.size(2), W = u8.size(3), plane = H * W;
  at::Tensor out = uninitialized_cpu(
      {B, C, H, W}, torch::TensorOptions().dtype(torch::kFloat).memory_format(torch::MemoryFormat::ChannelsLast));
  const uint8_t* src = u8.data_ptr<uint8_t>();
  float* dst = out.data_ptr<float>();  // NHWC in memory
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const uint8_t* s = src + (b * C + c) * plane;
      float* d = dst + b * C * plane + c;
      for (int64_t i = 0; i < plane; ++i) d[i * C] = static_cast<float>(s[i]) / 255.0f;
    }
  return out;
}

Loader::Loader(std::shared_ptr<Dataset> ds, AugmentOptions aug, LoaderOptions opt)
    : ds_(std::move(ds)), aug_(aug), opt_(opt) {
  if (!ds_) throw std::runtime_error("Loader: dataset is null");
  if (opt_.batch < 1) throw std::runtime_error("Loader: batch must be >= 1, got " + std::to_string(opt_.batch));
  if (opt_.world < 1 || opt_.rank < 0 || opt_.rank >= opt_.world)
    throw std::runtime_error("Loader: rank " + std::to_string(opt_.rank) + " not in [0, world " +
                             std::to_string(opt_.world) + ")");
  if (aug_.imgsz != ds_->options().imgsz)
    throw std::runtime_error("Loader: augment imgsz " + std::to_string(aug_.imgsz) + " differs from the dataset's " +
                             std::to_string(ds_->options().imgsz));
  if (ds_->options().rect) {
    if (opt_.world > 1)
      throw std::runtime_error("Loader: rect batches cannot be sharded (world " + std::to_string(opt_.world) +
                               "); validate on one rank as Ultralytics does, or build the dataset with rect=false");
    if (opt_.shuffle) spdlog::warn("Loader: rect=True is incompatible with shuffle; shuffle disabled");
    opt_.shuffle = false;
    if (ds_->options().batch != opt_.batch)
      throw std::runtime_error("Loader: rect dataset was built for batch " + std::to_string(ds_->options().batch) +
                               " but the loader uses " + std::to_string(opt_.batch));
  }
  opt_.prefetch = std::max(1, opt_.prefetch);
  pin_ = opt_.pin_memory && torch::cuda::is_available();
  disable_opencv_threads();  // once, before the workers start (never from them: see opencv_threads.h)
  instrument::prepare_threads();  // NVTX's lazy init, before the workers' first NVTX calls (see range.h)
  rec_ = std::make_unique<LoaderRecorder>(std::max(1, opt_.workers));
  for (int i = 0; i < std::max(0, opt_.workers); ++i) {
    threads_.emplace_back([this, i] {
      instrument::name_this_thread(("loader " + std::to_string(i)).c_str());  // NVTX + trace.json track name
      rec_->register_worker_thread(i);  // worker_cpu_seconds(): the what-if's CPU contention (instrument/whatif.h)
      // CUDA's current device is per thread and starts at 0: without this, every DDP rank's pinned allocations
      // would open a context on GPU 0 (PyTorch's pin-memory thread sets the device the same way).
      if (pin_) compat::set_current_device(opt_.pin_device);
      worker_loop(i);
    });
  }
}

Loader::~Loader() {
  resume();
  {
    std::lock_guard<std::mutex> lk(m_);
    stop_ = true;
  }
  cv_work_.notify_all();
  for (auto& t : threads_) t.join();
}

void Loader::restart_locked(int64_t epoch) {
  if (close_pending_) {
    aug_.mosaic = aug_.mixup = aug_.cutmix = 0;
    close_pending_ = false;
  }
  epoch_ = epoch;
  ++generation_;
  order_ = std::make_shared<const std::vector<int64_t>>(epoch_order(static_cast<int64_t>(ds_->size()), opt_.shuffle,
                                                                     opt_.seed, epoch, opt_.rank, opt_.world));
  epoch_aug_ = std::make_shared<const AugmentOptions>(aug_);
  const int64_t n = static_cast<int64_t>(order_->size());
  nb_ = opt_.drop_last ? n / opt_.batch : (n + opt_.batch - 1) / opt_.batch;
  next_assign_ = next_deliver_ = 0;
  ready_.clear();
  started_ = true;
}

void Loader::start_epoch(int64_t epoch) {
  {
    std::lock_guard<std::mutex> lk(m_);
    restart_locked(epoch);
  }
  cv_work_.notify_all();
}

int64_t Loader::num_batches() const {
  const int64_t n = static_cast<int64_t>(ds_->size());
  const int64_t per = opt_.world > 1 ? (n + opt_.world - 1) / opt_.world : n;
  return opt_.drop_last ? per / opt_.batch : (per + opt_.batch - 1) / opt_.batch;
}

void Loader::close_mosaic() {
  {
    std::lock_guard<std::mutex> lk(m_);
    close_pending_ = true;
    if (started_ && next_deliver_ == 0) restart_locked(epoch_);  // nothing consumed yet: rebuild this epoch
  }
  cv_work_.notify_all();
}

size_t Loader::queue_depth() const {
  std::lock_guard<std::mutex> lk(m_);
  size_t n = 0;
  for (const auto& [b, s] : ready_) n += s.batch.has_value() || s.error;
  return n;
}

at::Tensor Loader::acquire_images(int64_t B, int64_t H, int64_t W) const {
  if (pin_) return uninitialized_cpu({B, 3, H, W}, torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true));
  const std::vector<int64_t> want{B, 3, H, W};
  {
    std::lock_guard<std::mutex> lk(pool_m_);
    for (const auto& t : pool_)
      // free = no other handle to this TensorImpl and no view sharing its storage
      if (t.use_count() == 1 && t.storage().use_count() == 1 && t.sizes() == want) return t;  // copy under the lock
  }
  at::Tensor t = uninitialized_cpu(want, torch::TensorOptions().dtype(torch::kUInt8));
  std::lock_guard<std::mutex> lk(pool_m_);
  if (pool_.size() < static_cast<size_t>(opt_.prefetch + std::max(1, opt_.workers) + 2)) pool_.push_back(t);
  return t;
}

namespace {
/// Test-only slow input: env YOLO11_TEST_LOADER_DELAY_MS sleeps that long per training sample (a slow disk or decoder
/// on purpose, for yolo11-sweep's what-if and --verify checks, docs/sweeps.md). Read once; 0 when unset.
double test_sample_delay_ms() {
  static const double ms = [] {
    const char* e = std::getenv("YOLO11_TEST_LOADER_DELAY_MS");
    return e != nullptr ? std::max(0.0, std::atof(e)) : 0.0;
  }();
  return ms;
}
}  // namespace

Batch Loader::build_batch(int64_t b, int64_t epoch, const AugmentOptions& aug,
                          const std::vector<int64_t>& order) const {
  const int64_t n = static_cast<int64_t>(order.size());
  const int64_t i0 = b * opt_.batch, i1 = std::min(n, i0 + opt_.batch);
  const int64_t B = i1 - i0;
  const Dataset& ds = *ds_;
  std::vector<AugmentedSample> samples(static_cast<size_t>(B));
  const SampleSource src = ds.source();
  for (int64_t k = 0; k < B; ++k) {
    pause_point();
    const int64_t idx = order[static_cast<size_t>(i0 + k)];
    if (aug.augment) {
      Rng rng = Rng::for_sample(opt_.seed, epoch, idx);
      const SampleDraws d = make_draws(rng, aug, static_cast<int64_t>(ds.size()));
      samples[k] = train_transform(idx, src, aug, d);
      if (test_sample_delay_ms() > 0)
        std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(1000 * test_sample_delay_ms())));
    } else {
      LoadedSample s;
      {
        instrument::ScopedRange r(instrument::LoaderStage::load);
        s = ds.load(static_cast<size_t>(idx));
      }
      samples[k] = val_transform(s, ds.batch_shape(static_cast<size_t>(idx)));
    }
  }
  instrument::ScopedRange r(instrument::LoaderStage::collate);
  ScopedPart collate_part(LoaderPart::collate);
  const int64_t H = samples[0].img.rows, W = samples[0].img.cols;
  Batch out;
  out.images = acquire_images(B, H, W);
  int64_t nt = 0;
  for (const auto& s : samples) nt += static_cast<int64_t>(s.cls.size());
  out.batch_idx = uninitialized_cpu({nt}, torch::TensorOptions().dtype(torch::kLong));
  out.cls = uninitialized_cpu({nt}, torch::TensorOptions().dtype(torch::kLong));
  out.bboxes = uninitialized_cpu({nt, 4}, torch::TensorOptions().dtype(torch::kFloat));
  int64_t* bi = out.batch_idx.data_ptr<int64_t>();
  int64_t* ci = out.cls.data_ptr<int64_t>();
  float* bb = out.bboxes.data_ptr<float>();
  uint8_t* img = out.images.data_ptr<uint8_t>();
  int64_t t = 0;
  for (int64_t k = 0; k < B; ++k) {
    const auto& s = samples[k];
    if (s.img.rows != H || s.img.cols != W)
      throw std::runtime_error("collate: image " + ds.im_file(order[i0 + k]) + " is " + std::to_string(s.img.cols) +
                               "x" + std::to_string(s.img.rows) + ", batch is " + std::to_string(W) + "x" +
                               std::to_string(H));
    uint8_t* dst = img + k * 3 * H * W;
    if (s.rgb) {
      hwc_bgr_to_chw_rgb(s.img, dst);
    } else {  // keep BGR: write planes in stored order
      cv::Mat rev;
      cv::cvtColor(s.img, rev, cv::COLOR_BGR2RGB);
      hwc_bgr_to_chw_rgb(rev, dst);
    }
    for (size_t j = 0; j < s.cls.size(); ++j, ++t) {
      bi[t] = k;
      ci[t] = s.cls[j];
      std::memcpy(bb + 4 * t, s.xywhn[j].data(), 4 * sizeof(float));
    }
    const size_t idx = static_cast<size_t>(order[i0 + k]);
    out.im_files.push_back(ds.im_file(idx));
    out.ori_shapes.push_back(ds.ori_shape(idx));
    const auto rs = ds.resized_shape(idx);
    out.resized_shapes.push_back(rs);
    const auto os = ds.ori_shape(idx);
    const double rh = static_cast<double>(rs[0]) / os[0], rw = static_cast<double>(rs[1]) / os[1];
    out.ratio_pad.push_back({rh * s.ratio_pad[0], rw * s.ratio_pad[1], s.ratio_pad[2], s.ratio_pad[3]});
  }
  if (opt_.input == InputFormat::float_channels_last) {  // engine::to_input's conversion (x / 255 in float32,
                                                         // channels_last), in the worker
    instrument::ScopedRange f(instrument::LoaderStage::to_float);
    out.images = to_float_channels_last(out.images);
  }
  return out;
}

void Loader::worker_loop(int worker) {
  for (;;) {
    int64_t b, epoch;
    uint64_t gen;
    std::shared_ptr<const std::vector<int64_t>> order;
    std::shared_ptr<const AugmentOptions> aug;
    {
      std::unique_lock<std::mutex> lk(m_);
      cv_work_.wait(lk, [&] {
        return stop_ || (started_ && next_assign_ < nb_ && next_assign_ < next_deliver_ + opt_.prefetch);
      });
      if (stop_) return;
      b = next_assign_++;
      epoch = epoch_;
      gen = generation_;
      order = order_;
      aug = epoch_aug_;
      ready_[b];  // reserve the slot (empty = in progress)
    }
    Slot slot;
    {
      std::lock_guard<std::mutex> lk(pause_m_);
      ++building_;
    }
    rec_->begin_batch(worker);
    try {
      slot.batch = build_batch(b, epoch, *aug, *order);
    } catch (...) {
      slot.error = std::current_exception();
    }
    rec_->end_batch(worker, slot.batch ? slot.batch->size() : 0);
    bool keep = false;
    {
      std::lock_guard<std::mutex> lk(m_);
      keep = gen == generation_;  // else the epoch restarted meanwhile: discard
      if (keep) ready_[b] = std::move(slot);
    }
    {  // after the batch is delivered: a pause() that returned sees no batch finish later
      std::lock_guard<std::mutex> lk(pause_m_);
      --building_;
    }
    pause_cv_.notify_all();
    if (keep) cv_ready_.notify_all();
  }
}

void Loader::pause_point() const {
  if (!paused_.load(std::memory_order_acquire)) return;
  std::unique_lock<std::mutex> lk(pause_m_);
  if (!paused_) return;
  ++parked_;
  pause_cv_.notify_all();
  pause_cv_.wait(lk, [&] { return !paused_.load(); });
  --parked_;
}

int Loader::pause(double max_wait_s) {
  if (threads_.empty()) return 0;
  std::unique_lock<std::mutex> lk(pause_m_);
  paused_ = true;
  pause_cv_.wait_for(lk, std::chrono::duration<double>(max_wait_s), [&] { return parked_ >= building_; });
  return building_ - parked_;
}

void Loader::resume() {
  {
    std::lock_guard<std::mutex> lk(pause_m_);
    if (!paused_) return;
    paused_ = false;
  }
  pause_cv_.notify_all();
}

std::optional<Batch> Loader::next() {
  std::unique_lock<std::mutex> lk(m_);
  const bool restarted = !started_;
  if (restarted) restart_locked(0);
  if (next_deliver_ >= nb_) return std::nullopt;
  const int64_t b = next_deliver_;
  if (threads_.empty()) {  // synchronous mode
    const auto order = order_;
    const auto aug = epoch_aug_;
    const int64_t epoch = epoch_;
    ++next_deliver_;
    lk.unlock();
    rec_->begin_batch(0);
    std::optional<Batch> out;
    try {
      out = build_batch(b, epoch, *aug, *order);
    } catch (...) {
      rec_->end_batch(0, 0);
      throw;
    }
    rec_->end_batch(0, out->size());
    return out;
  }
  // Wake workers only when there is work for them (one per batch taken, none when all are assigned): each woken
  // worker needs a core, and on a machine whose cores compute it takes one from the trainer's threads.
  if (restarted) cv_work_.notify_all();
  cv_ready_.wait(lk, [&] {
    auto it = ready_.find(b);
    return it != ready_.end() && (it->second.batch.has_value() || it->second.error);
  });
  Slot slot = std::move(ready_[b]);
  ready_.erase(b);
  ++next_deliver_;
  const bool slot_opened = next_assign_ < nb_;  // one more batch may be assigned now
  lk.unlock();
  if (slot_opened) cv_work_.notify_one();
  if (slot.error) std::rethrow_exception(slot.error);
  return std::move(slot.batch);
}

}  // namespace yolo11::data
