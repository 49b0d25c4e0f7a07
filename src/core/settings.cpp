// Spellings of the shared setting enums (include/yolo11/core/settings.h).
#include "yolo11/core/settings.h"

#include "yolo11/core/strings.h"

namespace yolo11::core {

const char* to_string(CacheMode mode) {
  switch (mode) {
    case CacheMode::ram:
      return "ram";
    case CacheMode::disk:
      return "disk";
    case CacheMode::off:
      break;
  }
  return "false";
}

std::optional<CacheMode> parse_cache_mode(const std::string& text) {
  const std::string l = lower(trim(text));
  if (l == "false" || l.empty() || l == "none" || l == "null" || l == "~") return CacheMode::off;
  if (l == "true" || l == "ram") return CacheMode::ram;
  if (l == "disk") return CacheMode::disk;
  return std::nullopt;
}

const char* to_string(InstrumentLevel level) {
  switch (level) {
    case InstrumentLevel::off:
      return "off";
    case InstrumentLevel::full:
      return "full";
    case InstrumentLevel::basic:
      break;
  }
  return "basic";
}

std::optional<InstrumentLevel> parse_instrument_level(const std::string& text) {
  const std::string l = lower(trim(text));
  if (l == "off") return InstrumentLevel::off;
  if (l == "basic") return InstrumentLevel::basic;
  if (l == "full") return InstrumentLevel::full;
  return std::nullopt;
}

}  // namespace yolo11::core
