// The stored verdict on a run's advice (include/yolo11/instrument/advice_check.h), as the run diagnosis line quotes
// it: formatting on fixed numbers (verified, within noise, slower, unknown base), reading advice_verified.json in the
// form bench::verify_advice writes it, and a run without one.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "golden.h"
#include "yolo11/instrument/advice_check.h"

using namespace yolo11::instrument;

namespace {

AdviceCheck check(bool verified, double a, double delta, double lo, double hi) {
  AdviceCheck c;
  c.changes = "workers=2";
  c.verified = verified;
  c.a_img_s = a, c.delta = delta, c.lo = lo, c.hi = hi;
  return c;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
}

}  // namespace

TEST(AdviceCheck, VerdictLineOnFixedNumbers) {
  EXPECT_EQ(format_advice_check(check(true, 10.0, 3.8, 3.0, 4.6)), "advice workers=2 verified: +38 % img/s [+30, +46]");
  EXPECT_EQ(format_advice_check(check(false, 10.0, 0.1, -0.3, 0.5)),
            "advice workers=2 rejected: within noise (+1 % img/s [-3, +5])");
  EXPECT_EQ(format_advice_check(check(false, 13.66, -5.04, -9.65, -0.43)),
            "advice workers=2 rejected: slower (-37 % img/s [-71, -3])");
  // Without the run's own img/s the change is given in img/s.
  EXPECT_EQ(format_advice_check(check(true, 0.0, 1.5, 0.25, 2.75)),
            "advice workers=2 verified: +1.50 img/s [+0.25, +2.75]");
}

TEST(AdviceCheck, DiagnosisLineQuotesTheStoredVerdict) {
  const std::string dir = yolo11::test::scratch_dir("run");
  const std::string diag = "data-bound: data wait 28% of step: workers=1 on 2 cores → try workers=2";
  EXPECT_FALSE(read_advice_check(dir).has_value());
  EXPECT_EQ(with_advice_check(diag, dir), diag);  // no verdict: the line is unchanged
  // The fields bench::verify_advice writes (src/bench/verify.cpp).
  write(dir + "/advice_verified.json",
        R"({"advice": "data-bound: ...", "changes": "workers=2 cache=ram", "verified": true, "a_img_s": 6.5,)"
        R"( "b_img_s": 9.0, "delta_img_s": 2.5, "interval": [1.95, 3.05], "rounds": 3, "steps": 20, "warmup": 5,)"
        R"( "summary": "advice workers=2 cache=ram → verified: ..."})");
  const auto c = read_advice_check(dir);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->changes, "workers=2 cache=ram");
  EXPECT_TRUE(c->verified);
  EXPECT_DOUBLE_EQ(c->a_img_s, 6.5);
  EXPECT_DOUBLE_EQ(c->delta, 2.5);
  EXPECT_DOUBLE_EQ(c->lo, 1.95);
  EXPECT_DOUBLE_EQ(c->hi, 3.05);
  EXPECT_EQ(with_advice_check(diag, dir), diag + "; advice workers=2 cache=ram verified: +38 % img/s [+30, +47]");
  // A file that is not a verdict is not quoted.
  write(dir + "/advice_verified.json", "{\"summary\": \"x\"}");
  EXPECT_FALSE(read_advice_check(dir).has_value());
  write(dir + "/advice_verified.json", "not json");
  EXPECT_EQ(with_advice_check(diag, dir), diag);
}
