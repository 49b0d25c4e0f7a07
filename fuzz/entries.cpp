// The entries of fuzz/entries.h compiled once for every libFuzzer target (fuzz/target.h declares them).
#include "entries.h"

#include <spdlog/spdlog.h>

namespace yolo11::fuzz::run {
void quiet() { spdlog::set_level(spdlog::level::off); }
void labels(std::string_view d) { fuzz::labels(d); }
void list_file(std::string_view d) { fuzz::list_file(d); }
void dataset_yaml(std::string_view d) { fuzz::dataset_yaml(d); }
void config_kv(std::string_view d) { fuzz::config_kv(d); }
void config_yaml(std::string_view d) { fuzz::config_yaml(d); }
void safetensors(std::string_view d) { fuzz::safetensors(d); }
void zip(std::string_view d) { fuzz::zip(d); }
void pickle(std::string_view d) { fuzz::pickle(d); }
void pt(std::string_view d) { fuzz::pt(d); }
void metrics_http(std::string_view d) { fuzz::metrics_http(d); }
}  // namespace yolo11::fuzz::run
