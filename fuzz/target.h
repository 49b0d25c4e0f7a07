#pragma once
// The libFuzzer side of one target: YOLO11_FUZZ_TARGET(name) defines LLVMFuzzerTestOneInput over the entry `name` of
// fuzz/entries.h, compiled once in fuzz/entries.cpp as yolo11::fuzz::run::<name>. Logging is off (the parsers'
// warnings would flood the run) and the environment variables that redirect where the parsers look are unset; an
// exception escaping the entry is printed and aborts, so libFuzzer keeps the input as a crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

namespace yolo11::fuzz::run {
void quiet();  ///< logging off
void labels(std::string_view), list_file(std::string_view), dataset_yaml(std::string_view),
    config_kv(std::string_view), config_yaml(std::string_view), safetensors(std::string_view), zip(std::string_view),
    pickle(std::string_view), pt(std::string_view), metrics_http(std::string_view);
}  // namespace yolo11::fuzz::run

#define YOLO11_FUZZ_TARGET(NAME)                                                            \
  extern "C" int LLVMFuzzerInitialize(int*, char***) {                                      \
    yolo11::fuzz::run::quiet();                                                             \
    ::unsetenv("YOLO11_DATASETS_MIRROR");                                                   \
    ::unsetenv("YOLO11_DATASETS_DIR");                                                      \
    ::unsetenv("YOLO11_DEFAULT_CFG");                                                       \
    return 0;                                                                               \
  }                                                                                         \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {                 \
    try {                                                                                   \
      yolo11::fuzz::run::NAME(std::string_view(reinterpret_cast<const char*>(data), size)); \
    } catch (const std::exception& e) {                                                     \
      std::fprintf(stderr, "==yolo11-fuzz== " #NAME ": %s\n", e.what());                    \
      std::abort();                                                                         \
    }                                                                                       \
    return 0;                                                                               \
  }
