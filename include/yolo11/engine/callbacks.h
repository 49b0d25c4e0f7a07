#pragma once
// Trainer callbacks: Ultralytics' event names (ultralytics/utils/callbacks/base.py), a typed context, and the
// registry the trainer fires them through. The console logger, results.csv/png and checkpointing are callbacks
// themselves (default_callbacks), registered first, and so are the TensorBoard and /metrics loggers
// (engine/loggers.h); a user's callbacks run after them, in registration order.
//
// Order of one run (epochs E, batches per epoch B, validation every epoch):
//   on_pretrain_routine_start, on_pretrain_routine_end, on_train_start,
//   E × [ on_train_epoch_start,
//         B × [ on_train_batch_start, (on_before_zero_grad at each optimizer step), on_train_batch_end ],
//         on_train_epoch_end, on_val_start, on_val_end, on_fit_epoch_end, on_model_save ],
//   on_train_end, teardown.
// Differences from Ultralytics: on_fit_epoch_end runs before on_model_save (the checkpoint carries results.csv,
// which the results callback writes at on_fit_epoch_end); on_val_start/on_val_end run only on epochs that
// validate (val=true or the final epoch) and only on rank 0; on_model_save runs when save=true and on rank 0.
// A stop signal (SIGINT/SIGTERM, engine/interrupt.h) in the middle of an epoch ends it early: on_train_epoch_end
// still runs (the epoch's training part is over), then on_train_end and teardown, with no validation, results row
// or checkpoint for the partial epoch.
#include <ATen/Tensor.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace torch::optim {
class Optimizer;
}
namespace yolo11::config {
struct TrainConfig;
}
namespace yolo11::data {
struct Batch;
class Loader;
}  // namespace yolo11::data
namespace yolo11::model {
class YOLOImpl;
}
namespace yolo11::instrument {
class Profiler;
}

namespace yolo11::engine {

struct Run;  // include/yolo11/engine/detail/run.h: the trainer's own state, not installed
class ModelEMA;
struct ValResult;
struct EpochResult;

enum class Event {
  on_pretrain_routine_start,  ///< run dir and logging exist; nothing else is built yet
  on_pretrain_routine_end,    ///< the Run is built (model, loaders, optimizer, resume applied)
  on_train_start,             ///< before the first epoch
  on_train_epoch_start,       ///< lr schedule set for the epoch, loader started
  on_train_batch_start,       ///< before the batch is fetched
  on_before_zero_grad,        ///< an optimizer step is about to clear the gradients (after step / skip)
  on_train_batch_end,         ///< the step is done (losses accumulated, profiler step ended)
  on_train_epoch_end,         ///< the epoch's train losses are final (DDP: averaged over ranks)
  on_val_start,               ///< before validating the EMA weights (rank 0)
  on_val_end,                 ///< `val` holds the result
  on_fit_epoch_end,           ///< `row` holds the epoch's results.csv row
  on_model_save,              ///< checkpoint due (save=true, rank 0): the checkpoint callback writes it first
  on_train_end,               ///< after the last epoch (also after an early stop)
  teardown,                   ///< last event; the run is about to be released
};
inline constexpr int kNumEvents = static_cast<int>(Event::teardown) + 1;

/// The Ultralytics name of an event ("on_train_start", ...).
const char* event_name(Event e);
/// Inverse of event_name; nullopt for an unknown name.
std::optional<Event> parse_event(const std::string& name);
/// Every event in the order above.
const std::vector<Event>& all_events();

/// What a callback sees (Ultralytics passes the trainer; these are the attributes its callbacks read). Pointers are
/// null and numbers -1 where an event has no such value; the run's parts are null at on_pretrain_routine_start.
struct TrainContext {
  Event event = Event::on_pretrain_routine_start;
  const config::TrainConfig* cfg = nullptr;
  // ---- the run's parts (Ultralytics: trainer.model, .ema, .optimizer, .train_loader, ...) ----
  model::YOLOImpl* model = nullptr;              ///< the network being trained (model/yolo.h; DDP: this rank's replica)
  const ModelEMA* ema = nullptr;                 ///< the EMA weights that are validated and saved (engine/ema.h)
  torch::optim::Optimizer* optimizer = nullptr;  ///< parameter groups 0 weights, 1 norm, 2 bias
  const instrument::Profiler* profiler = nullptr;  ///< stage timers and windows (instrument/profiler.h)
  const data::Loader* train_loader = nullptr;      ///< (data/loader.h)
  const data::Loader* val_loader = nullptr;        ///< rank 0 only
  double best_fitness = -1;  ///< the best fitness so far, this epoch's included from on_fit_epoch_end (-1 before)
  /// The trainer's whole state, for the trainer's own callbacks (src/engine/callbacks.cpp, src/engine/loggers.cpp).
  /// Its header, yolo11/engine/detail/run.h, is not installed: a consumer's callback reads the fields above.
  Run* run = nullptr;
  std::string run_dir;       ///< "" on DDP ranks > 0
  int rank = 0;
  int world = 1;
  bool main_rank = true;     ///< rank 0: the one that writes the run dir
  int64_t epoch = -1;        ///< 0-based epoch
  int64_t epochs = 0;
  int64_t batch_i = -1;      ///< 0-based batch index within the epoch
  int64_t num_batches = 0;   ///< batches per epoch
  int64_t global_step = -1;  ///< batches since the start of the run (epoch · num_batches + batch_i)
  const data::Batch* batch = nullptr;  ///< on_train_batch_end: the batch as the loader gave it (host tensors)
  int64_t batch_images = 0;  ///< on_train_batch_end: images in the batch
  int64_t input_size = 0;    ///< on_train_batch_end: the network input's width in pixels (multi_scale varies it)
  at::Tensor loss_items;     ///< on_train_batch_end: this batch's (box, cls, dfl) losses, [3] float on the device
  std::array<double, 3> tloss{0, 0, 0};  ///< on_train_epoch_end and later: the epoch's mean (box, cls, dfl) losses
  std::vector<double> lrs;   ///< lr per parameter group (0 weights, 1 norm, 2 bias), current
  const ValResult* val = nullptr;    ///< on_val_end, on_fit_epoch_end, on_model_save (null when not validated)
  const EpochResult* row = nullptr;  ///< on_fit_epoch_end, on_model_save
  double fitness = 0;        ///< on_fit_epoch_end, on_model_save
  bool is_best = false;      ///< on_model_save: this epoch improved best_fitness
  bool stop = false;         ///< set by a callback (usually at on_fit_epoch_end): the run ends after this epoch's
                             ///< checkpoint, with on_train_end and teardown (logged; DDP: rank 0's decision rules)
};

using Callback = std::function<void(TrainContext&)>;

/// Event → callbacks, run in registration order. Exceptions propagate out of the trainer.
class Callbacks {
 public:
  void add(Event e, Callback cb);
  /// By Ultralytics name; throws std::invalid_argument naming the unknown event and listing the known ones.
  void add(const std::string& event, Callback cb);
  void run(Event e, TrainContext& ctx) const;
  size_t size(Event e) const { return cbs_[static_cast<size_t>(e)].size(); }

 private:
  std::array<std::vector<Callback>, kNumEvents> cbs_;
};

/// The trainer's own callbacks, registered before any user callback: the console logger (progress line, window
/// and epoch lines), plots of the first train batches, results.csv/png (rank 0), checkpointing (save=true, rank 0),
/// then the TensorBoard (tensorboard=true) and /metrics (metrics_port=N) loggers of engine/loggers.h.
void add_default_callbacks(Callbacks& cbs);

}  // namespace yolo11::engine
