#pragma once
// Advice that proves itself (yolo11-sweep --verify RUN_DIR): the diagnosis of a finished run (instrument::analyze_run)
// names concrete changes ("workers=2 on 16 cores → try workers=8, cache=ram"); an A/B of the run's own settings (A)
// and the suggested ones (B) in alternating child processes (A B A B ..., same seed, each `warmup` unmeasured + `steps`
// measured steps) measures the change in img/s with a 95 % interval. An advice whose interval does not clear zero is
// reported as rejected. The verdict goes to RUN_DIR/advice_verified.json, which yolo11-analyze and the
// run diagnosis line of later (resumed) runs quote (instrument/advice_check.h). No torch here.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace yolo11::bench {

/// The key=value changes of an advice text: the part after "try ", split at top-level commas; an item counts when it
/// starts with `key=` (a "key=A → B" item gives B). Descriptive items ("a CUDA device (device=0)", "keep batch=16",
/// "pinned ... copies") are left out. Pure.
std::vector<std::pair<std::string, std::string>> parse_advice(const std::string& advice);

/// A/B verdict on per-step img/s samples of the two arms.
struct Verdict {
  double a_img_s = 0, b_img_s = 0;  ///< means of the per-step samples
  double delta = 0, lo = 0, hi = 0; ///< b − a and its Welch 95 % interval (img/s)
  bool verified = false;            ///< lo > 0: the advice beats noise
  std::string text;                 ///< "verified: +6.2 img/s (+51 %), 95 % interval [+5.1, +7.3]"
};
/// Welch two-sample interval of mean(b) − mean(a). Needs ≥ 2 samples per arm (else not verified, said so). Pure.
Verdict compare_arms(const std::vector<double>& a, const std::vector<double>& b);

struct VerifyOptions {
  std::string run_dir;
  std::string advice;           ///< "" → the run's diagnosis; else "workers=8,cache=ram" (to test any change)
  int rounds = 3;               ///< A/B pairs
  int64_t steps = 20, warmup = 5;
  double point_timeout = 0;
  std::string train_exe;        ///< "" → default_train_exe()
  std::vector<std::string> passthrough;  ///< extra key=value for both arms (e.g. data= when the run's path moved)
};

struct VerifyReport {
  std::string advice;                                   ///< the advice text tested
  std::vector<std::pair<std::string, std::string>> changes;
  Verdict verdict;
  std::string summary;                                  ///< printed and stored
};

/// Runs the A/B and writes RUN_DIR/advice_verified.json and RUN_DIR/verify/ (the children's run dirs). Throws
/// std::runtime_error when the run has no args.yaml, the advice names no concrete change, or a child fails.
VerifyReport verify_advice(const VerifyOptions& o);

/// `yolo11-train ... verify_advice=true`, after a finished run (the caller keeps it to rank 0 outside DDP): verify_advice
/// with the default VerifyOptions (3 rounds of 5 + 20 steps per arm) on the run's own diagnosis advice, then logs the
/// run diagnosis line with the verdict (instrument::with_advice_check). A diagnosis that names no key=value change
/// is logged and left untested (true). Returns false, with the error logged, when the analysis or a child failed;
/// never throws.
bool verify_after_training(const std::string& run_dir);

}  // namespace yolo11::bench
