#pragma once
// The stored verdict on a run's advice: RUN_DIR/advice_verified.json, written by bench::verify_advice
// (`yolo11-sweep --verify RUN_DIR` or `yolo11-train ... verify_advice=true`). The trainer's run diagnosis line,
// yolo11-train's verify_advice line and yolo11-analyze quote it in one form:
//   "advice workers=2 verified: +38 % img/s [+30, +46]"
//   "advice workers=2 rejected: within noise (+1 % img/s [-3, +5])" / "... rejected: slower (-37 % img/s [-71, -3])"
// Percentages are of the A arm's (the run's own settings) img/s. No torch dependency.
#include <optional>
#include <string>

namespace yolo11::instrument {

struct AdviceCheck {
  std::string changes;  ///< the key=value changes tested, space-separated ("workers=2 cache=ram")
  bool verified = false;
  double a_img_s = 0;   ///< mean per-step img/s of the run's own settings (A)
  double delta = 0;     ///< b − a, img/s
  double lo = 0, hi = 0;  ///< Welch 95 % interval of delta, img/s
};

/// Reads RUN_DIR/advice_verified.json; nullopt when the file is absent or lacks the fields (never throws).
std::optional<AdviceCheck> read_advice_check(const std::string& run_dir);

/// The one-line verdict above. Pure.
std::string format_advice_check(const AdviceCheck& c);

/// `diagnosis` followed by "; " and the verdict when RUN_DIR/advice_verified.json exists, else `diagnosis` unchanged.
std::string with_advice_check(const std::string& diagnosis, const std::string& run_dir);

}  // namespace yolo11::instrument
