// instrument::read_advice_check / format_advice_check (include/yolo11/instrument/advice_check.h): the stored A/B
// verdict on a run's advice, quoted in one form by the trainer, yolo11-train's verify_advice and yolo11-analyze.
#include "yolo11/instrument/advice_check.h"

#include <spdlog/fmt/fmt.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "yolo11/io/file.h"

namespace yolo11::instrument {

std::optional<AdviceCheck> read_advice_check(const std::string& run_dir) {
  const std::string path = run_dir + "/advice_verified.json";
  std::error_code ec;
  if (run_dir.empty() || !std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(io::read_file(path), nullptr, /*allow_exceptions=*/false);
  } catch (const std::exception&) {  // unreadable file
    return std::nullopt;
  }
  auto number = [&](const nlohmann::json& v) { return v.is_number() ? v.get<double>() : 0.0; };
  if (!j.is_object() || !j.contains("changes") || !j["changes"].is_string() || !j.contains("verified") ||
      !j["verified"].is_boolean() || !j.contains("interval") || !j["interval"].is_array() || j["interval"].size() != 2)
    return std::nullopt;
  AdviceCheck c;
  c.changes = j["changes"].get<std::string>();
  c.verified = j["verified"].get<bool>();
  c.a_img_s = number(j.value("a_img_s", nlohmann::json()));
  c.delta = number(j.value("delta_img_s", nlohmann::json()));
  c.lo = number(j["interval"][0]);
  c.hi = number(j["interval"][1]);
  return c;
}

std::string format_advice_check(const AdviceCheck& c) {
  // Relative to the run's own img/s when known, else in img/s.
  const bool rel = c.a_img_s > 0;
  const double k = rel ? 100.0 / c.a_img_s : 1.0;
  const std::string change = rel ? fmt::format("{:+.0f} % img/s [{:+.0f}, {:+.0f}]", c.delta * k, c.lo * k, c.hi * k)
                                 : fmt::format("{:+.2f} img/s [{:+.2f}, {:+.2f}]", c.delta, c.lo, c.hi);
  if (c.verified) return fmt::format("advice {} verified: {}", c.changes, change);
  return fmt::format("advice {} rejected: {} ({})", c.changes, c.hi < 0 ? "slower" : "within noise", change);
}

std::string with_advice_check(const std::string& diagnosis, const std::string& run_dir) {
  const auto c = read_advice_check(run_dir);
  return c ? diagnosis + "; " + format_advice_check(*c) : diagnosis;
}

}  // namespace yolo11::instrument
