// yolo11-sweep (include/yolo11/bench/sweep.h, verify.h): grid and arguments, the CSV schema, the recommendation rule
// on fixed numbers, failure classification, point isolation (a crashing / hanging / out-of-memory child does not end
// the sweep), resume, the advice parser and the A/B verdict. Children are a fake yolo11-train (a shell script writing
// a canned breakdown.csv) except in RealTrainerPointIsMeasured. Nothing here is timed.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>

#include <filesystem>
#include <fstream>

#include "golden.h"
#include "process.h"
#include "yolo11/bench/sweep.h"
#include "yolo11/bench/verify.h"
#include "yolo11/instrument/advice_check.h"
#include "yolo11_test_config.h"

namespace fs = std::filesystem;
using namespace yolo11::bench;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("yolo11_test_sweep_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

PointResult ok_point(int64_t batch, int64_t workers, double img_s, double compute = 0.96, double data = 0.02) {
  PointResult r;
  r.point.batch = batch, r.point.workers = workers, r.point.imgsz = 320;
  r.status = Status::ok;
  r.img_s = img_s, r.img_s_lo = img_s * 0.98, r.img_s_hi = img_s * 1.02;
  r.shares = {{"dataloader", data}, {"forward", compute * 0.3}, {"loss", compute * 0.1}, {"backward", compute * 0.6}};
  r.data_wait = data;
  r.steps = 30, r.images = 30 * batch;
  return r;
}

/// A fake yolo11-train: batch=2 hangs, batch=4 dies of SIGSEGV, batch=8 reports std::bad_alloc and exits 1, any other
/// batch writes a breakdown.csv of 3 measured steps of 0.1 s × batch / 8 (img/s = 80 for every batch) into
/// <project>/<name>. Each start appends its batch (16 when none is given) to <dir>/starts.
std::string fake_trainer(const fs::path& dir) {
  const fs::path p = dir / "fake-train.sh";
  std::ofstream f(p);
  f << R"(#!/bin/bash
for a in "$@"; do case "$a" in batch=*) B=${a#batch=};; project=*) P=${a#project=};; name=*) N=${a#name=};; esac; done
B=${B:-16}  # --verify's A arm gives no batch= (its --cfg args.yaml has it)
echo "$B" >> ")" << (dir / "starts").string() << R"("
case "$B" in
  2) sleep 30; exit 0;;
  4) exec sh -c 'kill -SEGV $$';;
  8) echo "terminate called after throwing an instance of 'std::bad_alloc'"; exit 1;;
esac
D="$P/$N"; mkdir -p "$D"; C="$D/breakdown.csv"
echo "kind,epoch,first_step,last_step,steps,images,stage,count,mean_s,p50_s,p95_s,max_s,share,images_per_s,gpu_util,cpu_percent,rss_mb,gpu_mem_mb,diagnosis" > "$C"
T=$(awk "BEGIN{print 0.1*$B/8}"); DL=$(awk "BEGIN{print 0.01*$B/8}"); FW=$(awk "BEGIN{print 0.09*$B/8}")
echo "warmup,0,0,0,1,$B,step,1,1,1,1,1,1,1,-1,100,10,-1," >> "$C"
for s in 1 2 3; do
  echo "window,0,$s,$s,1,$B,dataloader,1,$DL,$DL,$DL,$DL,0.1,0,-1,150,10,-1," >> "$C"
  echo "window,0,$s,$s,1,$B,forward,1,$FW,$FW,$FW,$FW,0.9,0,-1,150,10,-1," >> "$C"
  echo "window,0,$s,$s,1,$B,step,1,$T,$T,$T,$T,1,80,-1,150,10,-1,balanced" >> "$C"
done
echo "fake run done"
)";
  f.close();
  fs::permissions(p, fs::perms::owner_all);
  return p.string();
}

int count_lines(const fs::path& p) {
  std::ifstream in(p);
  std::string l;
  int n = 0;
  while (std::getline(in, l)) ++n;
  return n;
}

}  // namespace

TEST(SweepArgs, ParsesTheGridAndPassesOtherKeysToTheChildren) {
  const auto o = parse_sweep_args({"batch=16,8,16", "workers=0,2", "imgsz=320", "amp=true,false", "cache=false,true",
                                   "steps=5", "warmup=2", "point_timeout=60", "data=synthetic", "name=x",
                                   "model_scale=n", "threads=1"});
  EXPECT_EQ(o.grid.batch, (std::vector<int64_t>{8, 16}));  // sorted, de-duplicated
  EXPECT_EQ(o.grid.workers, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(o.grid.cache, (std::vector<std::string>{"false", "ram"}));
  EXPECT_EQ(o.steps, 5);
  EXPECT_EQ(o.warmup, 2);
  EXPECT_DOUBLE_EQ(o.point_timeout, 60);
  EXPECT_TRUE(o.synthetic);
  EXPECT_EQ(o.passthrough, (std::vector<std::string>{"model_scale=n", "threads=1"}));
  EXPECT_THROW(parse_sweep_args({"batch=8,x"}), std::runtime_error);
  EXPECT_THROW(parse_sweep_args({"max_steps=3"}), std::runtime_error);  // the sweep owns it
  EXPECT_THROW(parse_sweep_args({"steps=1"}), std::runtime_error);
  const auto d = parse_sweep_args({});
  EXPECT_EQ(d.grid.batch, (std::vector<int64_t>{16}));
  EXPECT_EQ(d.grid.imgsz, (std::vector<int64_t>{640}));
}

TEST(SweepGrid, ExpandsWithBatchInnermostAndChildArgsCarryTheBenchKeys) {
  Grid g;
  g.batch = {8, 16}, g.workers = {0, 2}, g.imgsz = {320, 640};
  const auto pts = expand_grid(g);
  ASSERT_EQ(pts.size(), 8u);
  EXPECT_EQ(pts[0].id(), "b8_w0_s320");
  EXPECT_EQ(pts[1].id(), "b16_w0_s320");
  EXPECT_EQ(pts[2].id(), "b8_w2_s320");
  EXPECT_EQ(pts[7].id(), "b16_w2_s640");
  SweepOptions o;
  o.cfg_file = "configs/coco128.yaml";
  o.steps = 30, o.warmup = 10;
  o.passthrough = {"threads=2"};
  const auto a = child_args(o, pts[3], "/tmp/s/points", false);
  auto has = [&](const std::string& s) { return std::find(a.begin(), a.end(), s) != a.end(); };
  EXPECT_EQ(a[0], "--cfg");
  for (const char* s : {"threads=2", "batch=16", "workers=2", "imgsz=320", "max_steps=40", "instrument_warmup=10",
                        "log_every=1", "val=false", "save=false", "plots=false", "project=/tmp/s/points",
                        "name=b16_w2_s320", "exist_ok=true", "epochs=100"})
    EXPECT_TRUE(has(s)) << s;
  EXPECT_FALSE(has("synthetic_data=true"));
  const auto s = child_args(o, pts[3], "/tmp/s/points", true);
  EXPECT_NE(std::find(s.begin(), s.end(), "synthetic_data=true"), s.end());
  EXPECT_NE(std::find(s.begin(), s.end(), "name=b16_w2_s320_synthetic"), s.end());
}

TEST(SweepCsv, HeaderIsPinnedAndRowsRoundTrip) {
  std::string header;
  for (const auto& c : sweep_columns()) header += (header.empty() ? "" : ",") + c;
  EXPECT_EQ(header,
            "id,status,reason,exit_code,batch,workers,imgsz,amp,cache,synthetic,steps,images,img_s,img_s_lo95,"
            "img_s_hi95,step_ms_mean,step_ms_p50,step_ms_p95,share_dataloader,share_h2d,share_forward,share_loss,"
            "share_backward,share_optimizer,share_ema,data_wait,cpu_percent,rss_mb,gpu_mem_mb,peak_alloc_mb,gpu_util,"
            "sm_activity,mfu,whatif_no_data_ms,wall_s");
  std::vector<PointResult> rows = {ok_point(8, 2, 19.5), ok_point(16, 4, 20.5)};
  rows[1].point.amp = "false";
  rows[1].point.cache = "ram";
  rows[1].synthetic = true;
  PointResult f;
  f.point.batch = 32, f.point.workers = 0, f.point.imgsz = 640;
  f.status = Status::crash;
  f.reason = "Segmentation fault (signal 11), \"quoted\"";
  f.exit_code = 139;
  rows.push_back(f);
  const fs::path d = fresh_dir("csv");
  write_sweep_csv((d / "sweep.csv").string(), rows);
  EXPECT_EQ(count_lines(d / "sweep.csv"), 4);
  const auto back = read_sweep_csv((d / "sweep.csv").string());
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0].point.id(), "b8_w2_s320");
  EXPECT_NEAR(back[0].img_s, 19.5, 1e-3);
  EXPECT_NEAR(back[0].shares.at("backward"), 0.96 * 0.6, 1e-4);
  EXPECT_EQ(back[0].shares.count("h2d"), 0u);
  EXPECT_EQ(back[1].point.id(), "b16_w4_s320_ampF_cram");
  EXPECT_TRUE(back[1].synthetic);
  EXPECT_EQ(back[2].status, Status::crash);
  EXPECT_EQ(back[2].reason, f.reason);
  EXPECT_EQ(back[2].exit_code, 139);
  EXPECT_EQ(to_csv_row(back[2]), to_csv_row(rows[2]));
  std::ofstream(d / "bad.csv") << "id,status\nx,ok\n";
  EXPECT_THROW(read_sweep_csv((d / "bad.csv").string()), std::runtime_error);
}

TEST(Recommend, FastestAndCheapestWithinFivePercentOnFixedNumbers) {
  std::vector<PointResult> r = {ok_point(8, 0, 10.0, 0.5, 0.45), ok_point(8, 2, 19.5), ok_point(8, 4, 20.0),
                                ok_point(16, 2, 19.2), ok_point(16, 4, 20.5)};
  PointResult failed = ok_point(32, 4, 99.0);  // a failed point's numbers never count
  failed.status = Status::oom;
  r.push_back(failed);
  const auto rec = recommend(r);
  ASSERT_TRUE(rec.found);
  EXPECT_EQ(rec.best, 4u);      // 20.5 img/s
  EXPECT_EQ(rec.cheapest, 1u);  // 19.5 ≥ 0.95 × 20.5 = 19.475 with the fewest workers (2), then the smaller batch
  EXPECT_NE(rec.sentence.find("workers beyond 2 add nothing"), std::string::npos) << rec.sentence;
  EXPECT_NE(rec.sentence.find("batch beyond 8 adds nothing"), std::string::npos) << rec.sentence;
  EXPECT_NE(rec.sentence.find("compute-bound at 96 %"), std::string::npos) << rec.sentence;
  // b16 w2 at 19.2 is outside 5 %: with it alone below the best, the best is its own cheapest.
  const auto alone = recommend({ok_point(16, 2, 19.2), ok_point(16, 4, 20.5, 0.5, 0.45)});
  EXPECT_EQ(alone.best, 1u);
  EXPECT_EQ(alone.cheapest, 1u);
  EXPECT_NE(alone.sentence.find("data-bound at 45 % data wait"), std::string::npos) << alone.sentence;
  EXPECT_FALSE(recommend({failed}).found);
}

TEST(Classify, FailuresAreNamed) {
  ChildOutcome c;
  c.started = true;
  c.exit_code = 0;
  EXPECT_EQ(classify(c, "", 0).first, Status::ok);
  c.timed_out = true, c.signal = SIGKILL, c.exit_code = 137;
  EXPECT_EQ(classify(c, "", 5).first, Status::timeout);
  c.timed_out = false;
  EXPECT_EQ(classify(c, "", 0).first, Status::oom);  // SIGKILL not from us: the OOM killer
  c.signal = SIGSEGV, c.exit_code = 139;
  const auto crash = classify(c, "", 0);
  EXPECT_EQ(crash.first, Status::crash);
  EXPECT_NE(crash.second.find("signal 11"), std::string::npos) << crash.second;
  c.signal = 0, c.exit_code = 1;
  EXPECT_EQ(classify(c, "what():  std::bad_alloc\n", 0).first, Status::oom);
  EXPECT_EQ(classify(c, "[error] CUDA out of memory. Tried to allocate\n", 0).first, Status::oom);
  const auto err = classify(c, "info\n[error] config: bad value for 'imgsz'\nmore\n", 0);
  EXPECT_EQ(err.first, Status::error);
  EXPECT_NE(err.second.find("bad value for 'imgsz'"), std::string::npos) << err.second;
  const auto plain = classify(c, "info\nconfig: bad value for 'imgsz'\n", 0);  // the plain error line, printed last
  EXPECT_NE(plain.second.find("bad value for 'imgsz'"), std::string::npos) << plain.second;
  ChildOutcome never;
  never.error = "cannot start x";
  EXPECT_EQ(classify(never, "", 0).first, Status::error);
}

TEST(Sweep, FailingChildrenAreRecordedAndTheSweepGoesOn) {
  const fs::path d = fresh_dir("isolation");
  SweepOptions o = parse_sweep_args({"batch=1,2,4,8,16", "workers=0", "imgsz=64", "steps=3", "warmup=1",
                                     "point_timeout=1", "project=" + d.string(), "name=s"});
  o.train_exe = fake_trainer(d);
  o.cfg_file = "";
  const auto rep = run_sweep(o);
  ASSERT_EQ(rep.results.size(), 6u);  // 5 points + the what-if re-run of the best (b1) with data=synthetic
  EXPECT_EQ(rep.results[0].status, Status::ok);
  EXPECT_EQ(rep.results[1].status, Status::timeout);
  EXPECT_EQ(rep.results[2].status, Status::crash);
  EXPECT_EQ(rep.results[3].status, Status::oom);
  EXPECT_EQ(rep.results[4].status, Status::skipped);  // larger than a batch that ran out of memory
  EXPECT_NE(rep.results[4].reason.find("batch=8 ran out of memory"), std::string::npos) << rep.results[4].reason;
  EXPECT_TRUE(rep.results[5].synthetic);
  EXPECT_EQ(rep.results[5].status, Status::ok);
  const PointResult& ok = rep.results[0];
  EXPECT_EQ(ok.steps, 3);
  EXPECT_NEAR(ok.img_s, 80.0, 1e-6);
  EXPECT_NEAR(ok.data_wait, 0.1, 1e-6);
  EXPECT_NEAR(ok.step_ms_p50, 12.5, 1e-6);
  EXPECT_NEAR(ok.whatif_no_data_ms, 12.5 - 1.25, 1e-6);  // workers=0: the wait is the loading itself
  EXPECT_NEAR(ok.cpu_percent, 150, 1e-6);
  const fs::path s = d / "s";
  const auto csv = read_sweep_csv((s / "sweep.csv").string());
  EXPECT_EQ(csv.size(), 6u);
  const std::string md = yolo11::test::read_text((s / "sweep.md").string());
  for (const char* id : {"batch=1 ", "batch=2 ", "batch=4 ", "batch=8 ", "batch=16 "})
    EXPECT_NE(md.find(id), std::string::npos) << id;
  EXPECT_NE(md.find("What-if check"), std::string::npos);
  EXPECT_TRUE(fs::file_size(s / "sweep.png") > 1000);
  EXPECT_TRUE(fs::exists(s / "points/b4_w0_s64/console.log"));
  EXPECT_TRUE(fs::exists(s / "points/b1_w0_s64/breakdown.csv"));
}

TEST(Sweep, ResumeRunsOnlyThePointsNotOnRecord) {
  const fs::path d = fresh_dir("resume");
  const std::string exe = fake_trainer(d);
  SweepOptions o = parse_sweep_args({"batch=1,16", "workers=0", "imgsz=64", "steps=3", "warmup=1",
                                     "check_whatif=false", "project=" + d.string(), "name=s"});
  o.train_exe = exe;
  run_sweep(o);
  EXPECT_EQ(count_lines(d / "starts"), 2);
  // Without resume=true or exist_ok=true a taken name is incremented, as training runs are: s → s2, nothing re-read.
  const auto again = run_sweep(o);
  EXPECT_EQ(fs::path(again.dir).filename(), "s2");
  EXPECT_EQ(count_lines(d / "starts"), 4);
  SweepOptions r = parse_sweep_args({"batch=1,16,24", "workers=0", "imgsz=64", "steps=3", "warmup=1",
                                     "check_whatif=false", "resume=true", "project=" + d.string(), "name=s"});
  r.train_exe = exe;
  const auto rep = run_sweep(r);
  EXPECT_EQ(count_lines(d / "starts"), 5);  // only batch 24 ran
  ASSERT_EQ(rep.results.size(), 3u);
  for (const auto& x : rep.results) EXPECT_EQ(x.status, Status::ok) << x.point.id();
  EXPECT_EQ(read_sweep_csv((d / "s/sweep.csv").string()).size(), 3u);
}

TEST(Sweep, RealTrainerPointIsMeasured) {
  const fs::path d = fresh_dir("real");
  const std::string src = YOLO11_TEST_SOURCE_DIR;
  const std::string datasets = fs::path(yolo11::test::dataset_dir("coco8")).parent_path().string();
  SweepOptions o = parse_sweep_args({"batch=2", "workers=0", "imgsz=64", "steps=3", "warmup=1", "check_whatif=false",
                                     "model=" + src + "/configs/models/yolo11.yaml",
                                     "data=" + src + "/configs/datasets/coco8.yaml", "datasets_dir=" + datasets,
                                     "threads=1", "project=" + d.string(), "name=s"});
  o.train_exe = yolo11::test::exe("yolo11-train");
  const auto rep = run_sweep(o);
  ASSERT_EQ(rep.results.size(), 1u);
  const PointResult& r = rep.results[0];
  ASSERT_EQ(r.status, Status::ok) << r.reason << "\n" << yolo11::test::read_text((d / "s/points/b2_w0_s64/console.log").string());
  EXPECT_EQ(r.steps, 3);  // max_steps = warm-up + measured: exactly the measured steps are in the windows
  EXPECT_EQ(r.images, 6);
  EXPECT_GT(r.img_s, 0);
  EXPECT_LE(r.img_s_lo, r.img_s);
  EXPECT_GE(r.img_s_hi, r.img_s);
  EXPECT_GT(r.rss_mb, 0);
  EXPECT_GT(r.whatif_no_data_ms, 0);
  const std::string log = yolo11::test::read_text((d / "s/points/b2_w0_s64/train.log").string());
  EXPECT_NE(log.find("max_steps=4 reached"), std::string::npos);
  EXPECT_NE(log.find("what-if"), std::string::npos);
  EXPECT_FALSE(fs::exists(d / "s/points/b2_w0_s64/weights/last.safetensors"));  // no checkpoint
}

TEST(VerifyAdvice, ParsesTheConcreteChangesOfAnAdvice) {
  using KV = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(parse_advice("workers=2 on 16 cores, cache=False → try workers=8, cache=ram, imgsz=640 → 480 (fewer "
                         "pixels to decode/augment)"),
            (KV{{"workers", "8"}, {"cache", "ram"}, {"imgsz", "480"}}));
  EXPECT_EQ(parse_advice("device=cpu at batch=16 is compute-limited → try imgsz=640 → 480 (about 44% fewer FLOPs, "
                         "costs some mAP), a CUDA device (device=0)"),
            (KV{{"imgsz", "480"}}));
  EXPECT_EQ(parse_advice("the model saturates the GPU → try amp=False → amp=True (tensor cores, about 2x), keep batch=16 "
                         "(larger batches do not raise img/s on a busy GPU)"),
            (KV{{"amp", "True"}}));
  EXPECT_EQ(parse_advice("try pinned, non_blocking host→device copies (h2d 12%), batch=16 → 32 (amortises)"),
            (KV{{"batch", "32"}}));
  EXPECT_TRUE(parse_advice("").empty());
}

TEST(VerifyAdvice, VerdictNeedsTheIntervalToClearZero) {
  const std::vector<double> a = {10.0, 10.4, 9.6, 10.2, 9.8};
  const auto up = compare_arms(a, {15.0, 15.3, 14.7, 15.2, 14.8});
  EXPECT_TRUE(up.verified) << up.text;
  EXPECT_NEAR(up.delta, 5.0, 1e-9);
  EXPECT_GT(up.lo, 0);
  EXPECT_NE(up.text.find("verified"), std::string::npos);
  const auto noise = compare_arms(a, {10.1, 10.5, 9.5, 10.3, 9.9});  // +0.1 inside the noise
  EXPECT_FALSE(noise.verified) << noise.text;
  EXPECT_LT(noise.lo, 0);
  EXPECT_NE(noise.text.find("does not beat noise"), std::string::npos) << noise.text;
  EXPECT_FALSE(compare_arms({10.0}, {20.0}).verified);
}

TEST(VerifyAdvice, WritesTheVerdictTheDiagnosisLineQuotes) {
  // A/B with the fake trainer: batch=16 (A) and batch=32 (B) both give 80 img/s, so the advice cannot beat noise.
  const fs::path d = fresh_dir("verify");
  const fs::path run = d / "run";
  fs::create_directories(run);
  std::ofstream(run / "args.yaml") << "batch: 16\nverify_advice: true\n";
  VerifyOptions o;
  o.run_dir = run.string();
  o.advice = "batch=32";
  o.rounds = 2;
  o.train_exe = fake_trainer(d);
  const VerifyReport rep = verify_advice(o);
  EXPECT_FALSE(rep.verdict.verified) << rep.summary;
  EXPECT_EQ(count_lines(d / "starts"), 4);  // A B A B
  // The children never verify again (args.yaml says verify_advice: true).
  std::ifstream log(run / "verify" / "B2" / "console.log");
  const std::string first((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(first.find("verify_advice=false"), std::string::npos) << first;
  EXPECT_NE(first.find("batch=32"), std::string::npos) << first;
  // What the run diagnosis line of a later (resumed) run of this directory says.
  const auto c = yolo11::instrument::read_advice_check(run.string());
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(yolo11::instrument::with_advice_check("balanced", run.string()),
            "balanced; advice batch=32 rejected: within noise (+0 % img/s [+0, +0])");
}

TEST(Sweep, MarkdownGivesMfuAsAPercentLikeTheConsole) {
  PointResult r;
  r.status = Status::ok;
  r.mfu = 0.289;
  const std::string md = format_sweep_md(SweepOptions{}, {r}, Recommendation{}, "");
  EXPECT_NE(md.find("| 28.9 % |"), std::string::npos) << md;
  r.mfu = -1;
  EXPECT_NE(format_sweep_md(SweepOptions{}, {r}, Recommendation{}, "").find("| n/a |"), std::string::npos);
}
