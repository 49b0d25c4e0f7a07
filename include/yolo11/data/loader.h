#pragma once
// Multi-threaded batch loader: `workers` threads build whole batches (load → mosaic → augment → collate) into a
// bounded, ordered prefetch queue. Every sample's draws come from Rng::for_sample(seed, epoch, dataset index) and
// the order from (seed, epoch), so a run is identical whatever `workers` is. Sharded by rank / world (DDP).
#include <ATen/Tensor.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "yolo11/data/augment.h"
#include "yolo11/data/batch.h"
#include "yolo11/data/dataset.h"
#include "yolo11/data/loader_stats.h"

namespace yolo11::data {

/// What the loader delivers as Batch::images: uint8 [B, 3, H, W] RGB, or the network input float32 [B, 3, H, W] in
/// [0, 1], channels_last, converted in the workers exactly as engine::to_input would (engine/preprocess.h decides
/// which: train_input_format).
enum class InputFormat : std::uint8_t { uint8, float_channels_last };

struct LoaderOptions {
  int64_t batch = 16;
  int workers = 8;         ///< 0 = build batches on the calling thread inside next()
  bool shuffle = true;     ///< ignored (false) for rect datasets
  uint64_t seed = 0;
  int prefetch = 4;        ///< batches built ahead of the consumer (≥ 1)
  int rank = 0, world = 1;
  bool pin_memory = false;  ///< page-locked images (only honoured when torch::cuda::is_available())
  int pin_device = 0;       ///< with pin_memory: the CUDA device each worker makes current (its pinned pool's context)
  bool drop_last = false;
  /// Batch::images' format; float_channels_last not with pin_memory (CUDA converts on the device, from pinned uint8).
  InputFormat input = InputFormat::uint8;
};

class Loader {
 public:
  /// `aug.augment == false` → validation chain (letterbox to imgsz or the dataset's rect batch shapes).
  /// Throws std::runtime_error on invalid options (batch < 1, rank ∉ [0, world)).
  Loader(std::shared_ptr<Dataset> ds, AugmentOptions aug, LoaderOptions opt);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  /// Reseeds and reshuffles (deterministic from seed + epoch); discards anything prefetched.
  void start_epoch(int64_t epoch);
  /// Next batch of the epoch in order; nullopt at the end. Blocks while it is being built. Rethrows a worker's
  /// exception. Calls start_epoch(0) if no epoch was started.
  std::optional<Batch> next();
  int64_t num_batches() const;
  /// Letterbox-only training (mosaic = mixup = cutmix = 0) from now on: immediately if nothing of the current
  /// epoch was consumed yet (prefetched batches are rebuilt), else from the next start_epoch().
  void close_mosaic();
  /// Batches built and waiting (for instrumentation).
  size_t queue_depth() const;
  const Dataset& dataset() const { return *ds_; }
  const AugmentOptions& augment_options() const { return aug_; }
  const LoaderOptions& options() const { return opt_; }
  /// The dataset, to build another loader on it (the trainer's batch halving after an out-of-memory error).
  std::shared_ptr<Dataset> dataset_ptr() const { return ds_; }

  /// Per-transform timing of the workers since the previous call (loader_stats.h); any thread.
  LoaderReport take_stats() { return rec_->take(); }
  /// CPU time the worker threads have used since they started (s, Σ over workers; asleep or blocked does not count).
  /// 0 with workers = 0 (batches are then built on the caller's thread). Any thread.
  double worker_cpu_seconds() const { return rec_->cpu_seconds(); }

  /// Parks the worker threads at their next sample boundary, and keeps idle ones from starting, until resume(): the
  /// trainer's in-run compute calibration (engine/calibration.h) times compute with nothing of the run beside it.
  /// Waits for the busy workers to park, at most `max_wait_s` (a sample takes milliseconds); returns how many had not
  /// parked by then (0 = all). No-op returning 0 with workers = 0. One caller at a time, not nested.
  int pause(double max_wait_s = 1.0);
  /// Lets parked workers go on. No-op when not paused.
  void resume();

  /// Builds batch `b` of the current epoch order synchronously (what workers run). Exposed for benchmarks/tests.
  Batch build_batch(int64_t b, int64_t epoch, const AugmentOptions& aug,
                    const std::vector<int64_t>& order) const;

 private:
  void worker_loop(int worker);
  void pause_point() const;  // between samples in a worker: waits while paused
  void restart_locked(int64_t epoch);

  std::shared_ptr<Dataset> ds_;
  AugmentOptions aug_;
  LoaderOptions opt_;
  bool pin_ = false;

  mutable std::mutex m_;
  std::condition_variable cv_work_, cv_ready_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
  bool started_ = false;
  bool close_pending_ = false;
  int64_t epoch_ = 0;
  uint64_t generation_ = 0;
  std::shared_ptr<const std::vector<int64_t>> order_;
  std::shared_ptr<const AugmentOptions> epoch_aug_;
  int64_t nb_ = 0, next_assign_ = 0, next_deliver_ = 0;
  struct Slot {
    std::optional<Batch> batch;
    std::exception_ptr error;
  };
  std::map<int64_t, Slot> ready_;
  // Recycled (non-pinned) image buffers: reused once the consumer has dropped every reference (storage use
  // count 1), which saves the page faults of a fresh multi-MB allocation per batch.
  at::Tensor acquire_images(int64_t B, int64_t H, int64_t W) const;
  mutable std::mutex pool_m_;
  mutable std::vector<at::Tensor> pool_;
  std::unique_ptr<LoaderRecorder> rec_;
  // pause()/resume(): workers building a batch (building_) and those of them parked at a sample boundary (parked_).
  mutable std::mutex pause_m_;
  mutable std::condition_variable pause_cv_;
  std::atomic<bool> paused_{false};
  mutable int building_ = 0, parked_ = 0;
};

/// (B, C, H, W) uint8 → float32 / 255 in channels_last memory, on the calling thread only (no intra-op pool);
/// bit-equal to `.to(kFloat).div_(255.0).contiguous(ChannelsLast)`. Throws c10::Error for another dtype or layout.
at::Tensor to_float_channels_last(const at::Tensor& u8);

/// Sample order of one epoch for this rank: a permutation of [0, n) from (seed, epoch) when shuffling, padded by
/// wrapping to a multiple of world, then every world-th index starting at rank (torch DistributedSampler layout).
std::vector<int64_t> epoch_order(int64_t n, bool shuffle, uint64_t seed, int64_t epoch, int rank, int world);

}  // namespace yolo11::data
