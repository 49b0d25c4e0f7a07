// The shared setting enums (core/settings.h): every accepted spelling, the written form, and what is refused.
#include <gtest/gtest.h>

#include "yolo11/core/settings.h"

using yolo11::core::CacheMode;
using yolo11::core::InstrumentLevel;

TEST(Settings, CacheModeReadsUltralyticsSpellingsAndWritesOneForm) {
  using yolo11::core::parse_cache_mode;
  EXPECT_EQ(parse_cache_mode("false"), CacheMode::off);
  EXPECT_EQ(parse_cache_mode("False"), CacheMode::off);  // Python's spelling in Ultralytics YAML files
  EXPECT_EQ(parse_cache_mode(""), CacheMode::off);       // `cache:` left empty
  EXPECT_EQ(parse_cache_mode("None"), CacheMode::off);
  EXPECT_EQ(parse_cache_mode("true"), CacheMode::ram);  // Ultralytics: cache=True is RAM
  EXPECT_EQ(parse_cache_mode("RAM"), CacheMode::ram);
  EXPECT_EQ(parse_cache_mode(" disk "), CacheMode::disk);
  EXPECT_EQ(parse_cache_mode("gpu"), std::nullopt);
  EXPECT_EQ(parse_cache_mode("1"), std::nullopt);
  for (auto m : {CacheMode::off, CacheMode::ram, CacheMode::disk})
    EXPECT_EQ(parse_cache_mode(yolo11::core::to_string(m)), m) << yolo11::core::to_string(m);
  EXPECT_STREQ(yolo11::core::to_string(CacheMode::off), "false");  // the form args.yaml and summary.json carry
}

TEST(Settings, InstrumentLevelAcceptsTheThreeLevelsOnly) {
  using yolo11::core::parse_instrument_level;
  EXPECT_EQ(parse_instrument_level("off"), InstrumentLevel::off);
  EXPECT_EQ(parse_instrument_level("Basic"), InstrumentLevel::basic);
  EXPECT_EQ(parse_instrument_level("full"), InstrumentLevel::full);
  EXPECT_EQ(parse_instrument_level("verbose"), std::nullopt);
  EXPECT_EQ(parse_instrument_level(""), std::nullopt);
  for (auto l : {InstrumentLevel::off, InstrumentLevel::basic, InstrumentLevel::full})
    EXPECT_EQ(parse_instrument_level(yolo11::core::to_string(l)), l);
}
