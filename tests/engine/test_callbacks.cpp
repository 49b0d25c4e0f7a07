// Trainer callbacks (issue 11): every Ultralytics event fires in the documented order (include/yolo11/engine/
// callbacks.h) and the right number of times on a real coco8 run; user callbacks run after the default ones; a
// callback can stop the run; unknown event names are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "golden.h"
#include "process.h"
#include "yolo11/config/train_config.h"
#include "yolo11/engine/callbacks.h"
#include "yolo11/data/loader.h"
#include "yolo11/engine/ema.h"
#include "yolo11/engine/results.h"
#include "yolo11/model/yolo.h"
#include "yolo11/engine/trainer.h"

namespace fs = std::filesystem;
using namespace yolo11;
using engine::Event;

namespace {

struct Seen {
  std::string name;
  int64_t epoch = -1;
  int64_t batch_i = -1;
};

/// Registers a recorder for every event, by its Ultralytics name (the string API users of callbacks know).
std::vector<Seen>* record_all(engine::Trainer& trainer) {
  static std::vector<Seen> seen;
  seen.clear();
  for (Event e : engine::all_events())
    trainer.callbacks().add(engine::event_name(e), [](engine::TrainContext& c) {
      seen.push_back({engine::event_name(c.event), c.epoch, c.batch_i});
    });
  return &seen;
}

/// Ultralytics' accumulation during warmup, written out independently of engine::Scheduler: an optimizer step at
/// batch ni when ni − last ≥ max(1, round(interp(ni, [0, nw], [1, nbs / batch]))), nw = max(round(3 · nb), 100).
std::vector<bool> optimizer_steps(int64_t total_batches, int64_t nb, int64_t batch, int64_t nbs = 64) {
  const double nw = std::max(std::round(3.0 * static_cast<double>(nb)), 100.0);
  const double top = std::max(std::round(static_cast<double>(nbs) / static_cast<double>(batch)), 1.0);
  std::vector<bool> out;
  int64_t last = -1;
  for (int64_t ni = 0; ni < total_batches; ++ni) {
    const double acc = std::max(1.0, std::round(1.0 + (top - 1.0) * static_cast<double>(ni) / nw));
    const bool step = static_cast<double>(ni - last) >= acc;
    if (step) last = ni;
    out.push_back(step);
  }
  return out;
}

config::TrainConfig coco8_config(const std::string& project, int epochs, int batch) {
  return config::TrainConfig::load("", test::coco8_train_args(project, "run", epochs, batch));
}

}  // namespace

TEST(Callbacks, EveryEventFiresInTheDocumentedOrderOnACoco8Run) {
  const std::string project = test::scratch_dir("callbacks_order");
  constexpr int kEpochs = 2, kBatch = 2;
  engine::Trainer trainer(coco8_config(project, kEpochs, kBatch));
  auto* seen = record_all(trainer);

  // What the user callbacks see at the events that carry data, checked while the run is live.
  std::vector<std::string> problems;
  int64_t nb = 0;
  trainer.add_callback(Event::on_pretrain_routine_start, [&](engine::TrainContext& c) {
    if (c.run != nullptr || c.model != nullptr) problems.push_back("on_pretrain_routine_start: the run exists already");
    if (!fs::is_directory(c.run_dir)) problems.push_back("on_pretrain_routine_start: no run dir");
  });
  trainer.add_callback(Event::on_pretrain_routine_end, [&](engine::TrainContext& c) {
    // The run's parts, through the installed TrainContext only (the Run itself is in a header not installed).
    if (c.model == nullptr || c.model->parameters().empty()) problems.push_back("on_pretrain_routine_end: no model");
    if (c.ema == nullptr || c.optimizer == nullptr || c.profiler == nullptr || c.train_loader == nullptr ||
        c.val_loader == nullptr)
      problems.push_back("on_pretrain_routine_end: EMA, optimizer, profiler or a loader missing");
    nb = c.num_batches;
  });
  trainer.add_callback(Event::on_train_batch_end, [&](engine::TrainContext& c) {
    if (c.batch == nullptr || !c.loss_items.defined() || c.loss_items.numel() != 3 || c.input_size != 64)
      problems.push_back("on_train_batch_end: batch, loss_items or input_size missing");
  });
  trainer.add_callback(Event::on_val_end, [&](engine::TrainContext& c) {
    if (c.val == nullptr) problems.push_back("on_val_end: no ValResult");
  });
  trainer.add_callback(Event::on_fit_epoch_end, [&](engine::TrainContext& c) {
    if (c.row == nullptr || c.row->epoch != c.epoch + 1) problems.push_back("on_fit_epoch_end: wrong or no row");
    if (c.best_fitness < 0) problems.push_back("on_fit_epoch_end: no best fitness after a validation");
    // The default results callback ran before this one: the epoch's row is in results.csv.
    if (test::count_rows(fs::path(c.run_dir) / "results.csv") != static_cast<size_t>(c.epoch + 1))
      problems.push_back("on_fit_epoch_end: results.csv lacks the epoch's row (default callbacks run first)");
  });
  trainer.add_callback(Event::on_model_save, [&](engine::TrainContext& c) {
    // The default checkpoint callback ran first.
    if (!fs::exists(fs::path(c.run_dir) / "weights" / "last.safetensors"))
      problems.push_back("on_model_save: weights/last.safetensors not written before the user callback");
  });

  const auto summary = trainer.train();
  ASSERT_EQ(summary.epochs_done, kEpochs);
  ASSERT_EQ(nb, 2) << "coco8 has 4 train images: batch 2 gives 2 batches per epoch";
  EXPECT_TRUE(problems.empty()) << problems.front();

  const auto steps = optimizer_steps(kEpochs * nb, nb, kBatch);
  std::vector<Seen> want{{"on_pretrain_routine_start", -1, -1},
                         {"on_pretrain_routine_end", 0, -1},
                         {"on_train_start", 0, -1}};
  for (int64_t e = 0; e < kEpochs; ++e) {
    want.push_back({"on_train_epoch_start", e, -1});
    for (int64_t i = 0; i < nb; ++i) {
      want.push_back({"on_train_batch_start", e, i});
      if (steps[static_cast<size_t>(e * nb + i)]) want.push_back({"on_before_zero_grad", e, -1});
      want.push_back({"on_train_batch_end", e, i});
    }
    for (const char* n : {"on_train_epoch_end", "on_val_start", "on_val_end", "on_fit_epoch_end", "on_model_save"})
      want.push_back({n, e, -1});
  }
  want.push_back({"on_train_end", kEpochs - 1, -1});
  want.push_back({"teardown", kEpochs - 1, -1});

  auto show = [](const std::vector<Seen>& v) {
    std::string s;
    for (const auto& x : v) s += x.name + "(e" + std::to_string(x.epoch) + ",b" + std::to_string(x.batch_i) + ") ";
    return s;
  };
  ASSERT_EQ(seen->size(), want.size()) << "seen: " << show(*seen) << "\nwant: " << show(want);
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ((*seen)[k].name, want[k].name) << "event " << k << "\nseen: " << show(*seen);
    EXPECT_EQ((*seen)[k].epoch, want[k].epoch) << want[k].name << " (event " << k << ")";
    EXPECT_EQ((*seen)[k].batch_i, want[k].batch_i) << want[k].name << " (event " << k << ")";
  }
  // Counts per event, as the issue states them: every event seen, each the right number of times.
  std::map<std::string, int> count;
  for (const auto& s : *seen) ++count[s.name];
  const int n_steps = static_cast<int>(std::count(steps.begin(), steps.end(), true));
  EXPECT_EQ(n_steps, 3) << "warmup accumulation 1, 1, 2, 2 at batch 2: steps at batches 0, 1 and 3";
  const std::map<std::string, int> want_count{
      {"on_pretrain_routine_start", 1}, {"on_pretrain_routine_end", 1}, {"on_train_start", 1},
      {"on_train_epoch_start", kEpochs}, {"on_train_batch_start", kEpochs * 2}, {"on_before_zero_grad", n_steps},
      {"on_train_batch_end", kEpochs * 2}, {"on_train_epoch_end", kEpochs}, {"on_val_start", kEpochs},
      {"on_val_end", kEpochs}, {"on_fit_epoch_end", kEpochs}, {"on_model_save", kEpochs},
      {"on_train_end", 1}, {"teardown", 1}};
  EXPECT_EQ(count, want_count);
  EXPECT_EQ(want_count.size(), engine::all_events().size());
}

TEST(Callbacks, StopFromOnFitEpochEndEndsTheRunAfterThatEpoch) {
  const std::string project = test::scratch_dir("callbacks_stop");
  engine::Trainer trainer(coco8_config(project, 3, 4));
  auto* seen = record_all(trainer);
  trainer.add_callback(Event::on_fit_epoch_end, [](engine::TrainContext& c) { c.stop = c.epoch == 0; });
  const auto summary = trainer.train();
  EXPECT_EQ(summary.epochs_done, 1);
  EXPECT_EQ(test::count_rows(fs::path(summary.run_dir) / "results.csv"), 1u);
  EXPECT_NE(test::read_text(summary.run_dir + "/train.log").find("a callback at on_fit_epoch_end asked to stop"),
            std::string::npos);
  ASSERT_GE(seen->size(), 3u);
  EXPECT_EQ((*seen)[seen->size() - 2].name, "on_train_end");
  EXPECT_EQ(seen->back().name, "teardown");
  EXPECT_EQ(std::count_if(seen->begin(), seen->end(), [](const Seen& s) { return s.name == "on_train_epoch_start"; }),
            1);
}

TEST(Callbacks, UnknownEventNamesAreRefusedWithTheKnownOnes) {
  engine::Callbacks cbs;
  try {
    cbs.add("on_epoch_end", [](engine::TrainContext&) {});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("on_epoch_end"), std::string::npos) << msg;
    EXPECT_NE(msg.find("on_train_epoch_end"), std::string::npos) << msg;
  }
  for (Event e : engine::all_events()) EXPECT_EQ(engine::parse_event(engine::event_name(e)), e);
  EXPECT_EQ(cbs.size(Event::on_train_epoch_end), 0u);
}
