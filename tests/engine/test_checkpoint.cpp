// Checkpoints: round trip of every field, optimizer state, fallback to last.prev, NaN refusal, and any sequence of
// failed saves (fault injection at every step) leaving the newest complete pair loadable.
#include "yolo11/engine/checkpoint.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <unistd.h>

#include "golden.h"
#include "yolo11/io/safetensors.h"

namespace fs = std::filesystem;
using namespace yolo11;
using engine::Checkpoint;

namespace {

Checkpoint make_ckpt(int64_t epoch, float fill) {
  Checkpoint c;
  c.epoch = epoch;
  c.best_fitness = 0.25 + epoch;
  c.model = {{"model.0.conv.weight", torch::full({4, 3, 3, 3}, fill)},
             {"model.0.bn.running_mean", torch::full({4}, fill + 1)},
             {"model.0.bn.num_batches_tracked", torch::tensor(int64_t{7})}};
  c.ema = {{"model.0.conv.weight", torch::full({4, 3, 3, 3}, fill / 2)},
           {"model.0.bn.running_mean", torch::full({4}, fill)},
           {"model.0.bn.num_batches_tracked", torch::tensor(int64_t{7})}};
  c.ema_updates = 42 + epoch;
  c.optimizer = std::string("opt\0bytes", 9);
  c.scaler = {{"scale", torch::tensor(65536.0f)}, {"growth_tracker", torch::tensor(int64_t{3})}};
  c.args_yaml = "epochs: 3\nlr0: 0.01\n";
  c.results_csv = "epoch,time\n1,2\n";
  c.rng_cpu = engine::capture_rng_state();
  c.rng_cuda = torch::arange(16, torch::kUInt8);  // stands in for a CUDA generator state (any uint8 bytes)
  c.extra = {{"loader_rng", "123 456"}};
  return c;
}

void truncate_file(const std::string& p, size_t keep) {
  std::string s;
  {
    std::ifstream f(p, std::ios::binary);
    s.assign(std::istreambuf_iterator<char>(f), {});
  }
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(s.data(), static_cast<std::streamsize>(std::min(keep, s.size())));
}

}  // namespace

TEST(Checkpoint, RoundTripKeepsEveryField) {
  const auto dir = test::scratch_dir("ckpt_roundtrip");
  const auto c = make_ckpt(2, 0.5f);
  ASSERT_TRUE(engine::save_checkpoint(dir, c, /*is_best=*/true, /*epoch_copy=*/true));
  for (const char* f : {"last.safetensors", "last.state.safetensors", "best.safetensors", "best.state.safetensors",
                        "epoch2.safetensors", "epoch2.state.safetensors"})
    EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
  const auto back = engine::load_checkpoint(dir);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->epoch, 2);
  EXPECT_EQ(back->best_fitness, 2.25);
  EXPECT_EQ(back->ema_updates, 44);
  EXPECT_EQ(back->optimizer, c.optimizer);
  EXPECT_EQ(back->args_yaml, c.args_yaml);
  EXPECT_EQ(back->results_csv, c.results_csv);
  EXPECT_EQ(back->extra, c.extra);
  ASSERT_EQ(back->model.size(), 3u);
  ASSERT_EQ(back->ema.size(), 3u);
  ASSERT_EQ(back->scaler.size(), 2u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back->model[i].first, c.model[i].first);
    EXPECT_TRUE(torch::equal(back->model[i].second, c.model[i].second));
    EXPECT_EQ(back->ema[i].first, c.ema[i].first);
    EXPECT_TRUE(torch::equal(back->ema[i].second, c.ema[i].second));
  }
  EXPECT_TRUE(torch::equal(back->scaler[0].second, c.scaler[0].second));
  EXPECT_TRUE(torch::equal(back->rng_cpu, c.rng_cpu));
  ASSERT_TRUE(back->rng_cuda.defined());
  EXPECT_TRUE(torch::equal(back->rng_cuda, c.rng_cuda));
  // The weights file alone is a plain safetensors state_dict with the reference keys (Python can load it).
  const auto w = io::load_safetensors(dir + "/last.safetensors");
  EXPECT_EQ(w.tensors.size(), 3u);
  EXPECT_EQ(w.tensors[0].first, "model.0.conv.weight");
  EXPECT_EQ(w.metadata.at("format"), "pt");
}

TEST(Checkpoint, CpuRunStoresNoCudaRngState) {
  const auto dir = test::scratch_dir("ckpt_no_cuda_rng");
  auto c = make_ckpt(0, 1.0f);
  c.rng_cuda = at::Tensor();
  c.scaler.clear();  // amp off or bfloat16: no scaler state
  ASSERT_TRUE(engine::save_checkpoint(dir, c, false, false));
  const auto back = engine::load_checkpoint(dir);
  ASSERT_TRUE(back.has_value());
  EXPECT_FALSE(back->rng_cuda.defined());
  EXPECT_TRUE(back->scaler.empty());
  for (const auto& [k, t] : io::load_safetensors(dir + "/last.state.safetensors").tensors)
    EXPECT_TRUE(k != "rng/cuda" && k.rfind("scaler/", 0) != 0) << k;
}

TEST(Checkpoint, TruncatedLastFallsBackToPrevious) {
  const auto dir = test::scratch_dir("ckpt_fallback");
  ASSERT_TRUE(engine::save_checkpoint(dir, make_ckpt(0, 1.0f), false, false));
  ASSERT_TRUE(engine::save_checkpoint(dir, make_ckpt(1, 2.0f), false, false));
  EXPECT_TRUE(fs::exists(dir + "/last.prev.safetensors"));
  EXPECT_EQ(engine::load_checkpoint(dir)->epoch, 1);
  truncate_file(dir + "/last.state.safetensors", 100);
  auto c = engine::load_checkpoint(dir);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->epoch, 0);
  EXPECT_EQ(c->path, dir + "/last.prev.safetensors");
  // An empty last.safetensors is reported too, and the fallback is used.
  truncate_file(dir + "/last.safetensors", 0);
  EXPECT_EQ(engine::load_checkpoint(dir)->epoch, 0);
  try {
    engine::read_checkpoint(dir + "/last.safetensors");
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("last.safetensors' is empty"), std::string::npos) << e.what();
  }
  // Nothing usable at all → nullopt.
  truncate_file(dir + "/last.prev.safetensors", 20);
  EXPECT_FALSE(engine::load_checkpoint(dir).has_value());
  EXPECT_FALSE(engine::load_checkpoint(test::scratch_dir("ckpt_empty_dir")).has_value());
}

TEST(Checkpoint, MismatchedPairIsRejected) {
  const auto dir = test::scratch_dir("ckpt_mismatch");
  ASSERT_TRUE(engine::save_checkpoint(dir, make_ckpt(0, 1.0f), false, false));
  ASSERT_TRUE(engine::save_checkpoint(dir, make_ckpt(1, 2.0f), false, false));
  // Simulate a crash between the two writes: the state file of the previous save beside the new weights.
  fs::copy_file(dir + "/last.prev.state.safetensors", dir + "/last.state.safetensors", fs::copy_options::overwrite_existing);
  EXPECT_THROW(engine::read_checkpoint(dir + "/last.safetensors"), std::runtime_error);
  EXPECT_EQ(engine::load_checkpoint(dir)->epoch, 0);
}

TEST(Checkpoint, KillAtEveryPointOfTheRotationLeavesALoadablePair) {
  // save_checkpoint: (1) last → last.prev, (2) last.state → last.prev.state, (3) write last.state,
  // (4) write last. Rebuild the directory as a SIGKILL after each step leaves it.
  const auto src = test::scratch_dir("ckpt_rotation_src");
  ASSERT_TRUE(engine::save_checkpoint(src, make_ckpt(0, 1.0f), false, false));
  ASSERT_TRUE(engine::save_checkpoint(src, make_ckpt(1, 2.0f), false, false));
  const auto next = test::scratch_dir("ckpt_rotation_next");
  ASSERT_TRUE(engine::save_checkpoint(next, make_ckpt(2, 3.0f), false, false));
  struct Case { int step; int64_t expect_epoch; };
  for (const Case k : {Case{1, 1}, Case{2, 1}, Case{3, 1}, Case{4, 2}}) {
    const auto dir = test::scratch_dir("ckpt_rotation_" + std::to_string(k.step));
    for (const char* f : {"last.safetensors", "last.state.safetensors", "last.prev.safetensors", "last.prev.state.safetensors"})
      fs::copy_file(src + "/" + f, dir + "/" + f, fs::copy_options::overwrite_existing);
    fs::rename(dir + "/last.safetensors", dir + "/last.prev.safetensors");
    if (k.step >= 2) fs::rename(dir + "/last.state.safetensors", dir + "/last.prev.state.safetensors");
    if (k.step >= 3) fs::copy_file(next + "/last.state.safetensors", dir + "/last.state.safetensors");
    if (k.step >= 4) fs::copy_file(next + "/last.safetensors", dir + "/last.safetensors");
    const auto c = engine::load_checkpoint(dir);
    ASSERT_TRUE(c.has_value()) << "kill after step " << k.step;
    EXPECT_EQ(c->epoch, k.expect_epoch) << "kill after step " << k.step;
    EXPECT_EQ(c->optimizer, make_ckpt(0, 0).optimizer);
    EXPECT_FALSE(c->model.empty());
  }
}

namespace {

struct SimulatedKill {};

/// One save of `epoch` that is killed before its step number `fail_at` (0-based; a value past the save's steps lets
/// it finish). A kill during a write leaves that file's half-written temp file, as a SIGKILL or a full disk would.
struct SaveOutcome {
  bool complete = false;  ///< the save got past writing last.safetensors: a new complete pair exists
  bool killed = false;    ///< false: fail_at was past the save's last step
};

SaveOutcome save_killed_at(const std::string& dir, int64_t epoch, int fail_at) {
  int n = 0;
  SaveOutcome out;
  engine::testing::set_checkpoint_fault_hook([&](const std::string& step) {
    out.complete = out.complete || step == "write best.state.safetensors" || step == "done";
    if (n++ == fail_at) {
      out.killed = true;
      if (step.rfind("write ", 0) == 0)
        std::ofstream(dir + "/" + step.substr(6) + ".tmp." + std::to_string(::getpid()), std::ios::binary) << "half";
      throw SimulatedKill{};
    }
  });
  try {
    EXPECT_TRUE(engine::save_checkpoint(dir, make_ckpt(epoch, static_cast<float>(epoch)), epoch % 2 == 0, false));
  } catch (const SimulatedKill&) {
  }
  engine::testing::set_checkpoint_fault_hook({});
  return out;
}

bool has_temp_files(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (engine::is_checkpoint_temp_file(e.path().filename().string())) return true;
  return false;
}

/// Drives `fails.size()` consecutive saves, the k-th killed before its step fails[k], after `good` complete saves;
/// then a clean start (stale temp files removed) must load the newest complete pair, and one more complete save
/// must load as itself with that pair as its fallback. Returns, per failing save, whether the kill happened.
std::vector<bool> check_failed_saves(int good, const std::vector<int>& fails) {
  std::vector<bool> killed;
  std::string tag = "ckpt_fail_" + std::to_string(good);
  for (int f : fails) tag += "_" + std::to_string(f);
  const auto dir = test::scratch_dir(tag);
  int64_t epoch = 0, newest = -1;
  for (int g = 0; g < good; ++g, ++epoch) {
    EXPECT_TRUE(engine::save_checkpoint(dir, make_ckpt(epoch, static_cast<float>(epoch)), epoch % 2 == 0, false));
    newest = epoch;
  }
  for (int f : fails) {
    const SaveOutcome o = save_killed_at(dir, epoch, f);
    killed.push_back(o.killed);
    if (o.complete) newest = epoch;
    ++epoch;
  }
  engine::remove_stale_checkpoint_temps(dir);  // what the next start does
  EXPECT_FALSE(has_temp_files(dir)) << tag;
  auto c = engine::load_checkpoint(dir);
  if (newest < 0) {
    EXPECT_FALSE(c.has_value()) << tag;
  } else if (!c.has_value()) {
    ADD_FAILURE() << tag << ": no loadable pair, expected epoch " << newest;
    return killed;
  } else {
    EXPECT_EQ(c->epoch, newest) << tag;
    EXPECT_EQ(c->optimizer, make_ckpt(0, 0).optimizer) << tag;
    EXPECT_TRUE(torch::equal(c->model[0].second, make_ckpt(newest, static_cast<float>(newest)).model[0].second)) << tag;
  }
  // The run goes on: the next save is complete, and its fallback is the newest pair before it.
  EXPECT_TRUE(engine::save_checkpoint(dir, make_ckpt(epoch, static_cast<float>(epoch)), false, false));
  c = engine::load_checkpoint(dir);
  EXPECT_TRUE(c.has_value() && c->epoch == epoch) << tag;
  if (newest >= 0) {
    truncate_file(dir + "/last.state.safetensors", 100);
    c = engine::load_checkpoint(dir);
    EXPECT_TRUE(c.has_value() && c->epoch == newest) << tag << ": the fallback is not epoch " << newest;
  }
  return killed;
}

}  // namespace

// Every step index of each failing save, until the index runs past the save's steps (then the save completed and
// larger indices repeat the same case).
TEST(Checkpoint, TwoFailedSavesInARowAtEveryStepLeaveTheNewestCompletePair) {
  int cases = 0;
  for (int good = 0; good <= 2; ++good)
    for (int a = 0;; ++a) {
      std::vector<bool> k;
      for (int b = 0;; ++b, ++cases)
        if (k = check_failed_saves(good, {a, b}); !k[1]) break;
      if (!k[0]) break;
    }
  EXPECT_GT(cases, 50);
  std::printf("%d cases\n", cases);
}

TEST(Checkpoint, ThreeFailedSavesInARowAtEveryStepLeaveTheNewestCompletePair) {
  int cases = 0;
  for (int a = 0;; ++a) {
    std::vector<bool> k;
    for (int b = 0;; ++b) {
      for (int c = 0;; ++c, ++cases)
        if (k = check_failed_saves(2, {a, b, c}); !k[2]) break;
      if (!k[1]) break;
    }
    if (!k[0]) break;
  }
  EXPECT_GT(cases, 250);
  std::printf("%d cases\n", cases);
}

TEST(Checkpoint, TheIssueSequenceOrphanStateThenAnotherFailure) {
  // Issue 10: a save cut short after last.state (orphan state, no weights), then the next save cut short too. The
  // old rotation renamed the orphan over last.prev.state and lost the run.
  const auto dir = test::scratch_dir("ckpt_issue_sequence");
  ASSERT_TRUE(engine::save_checkpoint(dir, make_ckpt(0, 0.f), false, false));
  ASSERT_TRUE(engine::save_checkpoint(dir, make_ckpt(1, 1.f), false, false));
  std::vector<std::string> steps;
  engine::testing::set_checkpoint_fault_hook([&](const std::string& s) {
    steps.push_back(s);
    if (s == "write last.safetensors") throw SimulatedKill{};
  });
  EXPECT_THROW(engine::save_checkpoint(dir, make_ckpt(2, 2.f), false, false), SimulatedKill);
  engine::testing::set_checkpoint_fault_hook({});
  EXPECT_TRUE(fs::exists(dir + "/last.state.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/last.safetensors"));
  EXPECT_FALSE(save_killed_at(dir, 2, 2).complete);  // the resumed run's save fails again, after removing the orphan
  const auto c = engine::load_checkpoint(dir);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->epoch, 1);
}

TEST(Checkpoint, StaleTempFilesAreRemovedOnlyWhenOursAndOnlyInTheWeightsDir) {
  const auto dir = test::scratch_dir("ckpt_stale_tmp");
  fs::create_directories(dir + "/sub");
  const std::string me = std::to_string(::getpid());
  const std::string dead = "999999999";  // above any pid_max
  const std::string alive = "1";         // init: a running process that is not us
  for (const std::string& f : std::vector<std::string>{"last.safetensors.tmp." + me, "last.state.safetensors.tmp." + dead, "best.safetensors.tmp." + alive,
                        "results.csv.tmp." + dead, "last.safetensors.tmp.x1", "notes.txt", "sub/last.safetensors.tmp." + dead})
    std::ofstream(dir + "/" + f) << "x";
  EXPECT_EQ(engine::remove_stale_checkpoint_temps(dir), 2);
  EXPECT_FALSE(fs::exists(dir + "/last.safetensors.tmp." + me));
  EXPECT_FALSE(fs::exists(dir + "/last.state.safetensors.tmp." + dead));
  EXPECT_TRUE(fs::exists(dir + "/best.safetensors.tmp." + alive));    // another live process may be writing it
  EXPECT_TRUE(fs::exists(dir + "/results.csv.tmp." + dead));          // not a checkpoint file
  EXPECT_TRUE(fs::exists(dir + "/last.safetensors.tmp.x1"));          // not our pattern
  EXPECT_TRUE(fs::exists(dir + "/notes.txt"));
  EXPECT_TRUE(fs::exists(dir + "/sub/last.safetensors.tmp." + dead));  // not recursive
  EXPECT_EQ(engine::remove_stale_checkpoint_temps(dir + "/missing"), 0);
}

TEST(Checkpoint, AccumulatedGradientsRoundTrip) {
  const auto dir = test::scratch_dir("ckpt_grads");
  auto c = make_ckpt(3, 1.5f);
  c.grads = {{"model.0.conv.weight", torch::randn({4, 3, 3, 3})}};
  ASSERT_TRUE(engine::save_checkpoint(dir, c, false, false));
  const auto back = engine::load_checkpoint(dir);
  ASSERT_TRUE(back.has_value());
  ASSERT_EQ(back->grads.size(), 1u);
  EXPECT_EQ(back->grads[0].first, "model.0.conv.weight");
  EXPECT_TRUE(torch::equal(back->grads[0].second, c.grads[0].second));
  EXPECT_EQ(back->model.size(), 3u);  // grad/* entries are not model entries
}

TEST(Checkpoint, NaNWeightsAreNeverSaved) {
  const auto dir = test::scratch_dir("ckpt_nan");
  ASSERT_TRUE(engine::save_checkpoint(dir, make_ckpt(0, 1.0f), false, false));
  auto bad = make_ckpt(1, 2.0f);
  bad.ema[0].second[0][0][0][0] = std::nanf("");
  EXPECT_FALSE(engine::save_checkpoint(dir, bad, true, false));
  EXPECT_FALSE(fs::exists(dir + "/best.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/last.prev.safetensors"));  // last.* untouched
  EXPECT_EQ(engine::load_checkpoint(dir)->epoch, 0);
}

TEST(Checkpoint, OptimizerStateRoundTrips) {
  torch::manual_seed(0);
  auto make = [] {
    auto w = torch::randn({5, 3}, torch::requires_grad());
    return w;
  };
  auto w1 = make();
  torch::optim::SGD opt1({w1}, torch::optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
  auto step = [](torch::optim::Optimizer& o, torch::Tensor& w) {
    o.zero_grad();
    (w * w).sum().backward();
    o.step();
  };
  step(opt1, w1);
  step(opt1, w1);
  const std::string bytes = engine::save_optimizer_state(opt1);
  auto w2 = w1.detach().clone().set_requires_grad(true);
  auto w3 = w1.detach().clone().set_requires_grad(true);
  torch::optim::SGD opt2({w2}, torch::optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
  torch::optim::SGD fresh({w3}, torch::optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
  engine::load_optimizer_state(opt2, bytes, torch::kCPU);
  step(opt1, w1);
  step(opt2, w2);   // same momentum buffer → same update
  step(fresh, w3);  // no momentum history → a different update
  EXPECT_TRUE(torch::equal(w1, w2));
  EXPECT_FALSE(torch::allclose(w1, w3));
  EXPECT_THROW(engine::load_optimizer_state(opt2, "", torch::kCPU), std::runtime_error);
}

// The optimizer state is loaded onto the run's device, not the one that saved it (a checkpoint of cuda:0 resumed by
// DDP rank 1, on another GPU or on the CPU). The meta device stands in for "another device" on a CPU machine: the
// archive saved here on the CPU comes back with every state tensor on the device asked for.
TEST(Checkpoint, OptimizerStateLoadsOntoTheRunsDevice) {
  auto w = torch::randn({4, 2}, torch::requires_grad());
  torch::optim::SGD opt({w}, torch::optim::SGDOptions(0.1).momentum(0.9));
  (w * w).sum().backward();
  opt.step();
  const std::string bytes = engine::save_optimizer_state(opt);
  torch::serialize::InputArchive ar;
  engine::read_optimizer_archive(ar, bytes, torch::Device(torch::kMeta));
  int tensors = 0;
  std::function<void(torch::serialize::InputArchive&, const std::string&)> walk =
      [&](torch::serialize::InputArchive& a, const std::string& prefix) {
        for (const auto& key : a.keys()) {
          torch::Tensor t;
          torch::serialize::InputArchive sub;
          if (a.try_read(key, t)) {
            EXPECT_EQ(t.device().type(), torch::kMeta) << prefix + key;
            ++tensors;
          } else if (a.try_read(key, sub)) {
            walk(sub, prefix + key + "/");
          }
        }
      };
  walk(ar, "");
  EXPECT_GT(tensors, 0);  // the momentum buffer at least
}

TEST(Checkpoint, RngStateRestores) {
  const auto s = engine::capture_rng_state();
  const auto a = torch::rand({4});
  engine::restore_rng_state(s);
  const auto b = torch::rand({4});
  EXPECT_TRUE(torch::equal(a, b));
}
