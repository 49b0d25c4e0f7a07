#pragma once
// Reading the NVTX recording made by the test injection library (tests/instrument/nvtx_inject), for any test
// binary (the trainer's end-to-end test too). Setup, in the test's CMake (see tests/instrument/CMakeLists.txt):
//   add_dependencies(<test> yolo11_nvtx_inject)
//   target_compile_definitions(<test> PRIVATE YOLO11_NVTX_INJECTION_PATH="$<TARGET_FILE:yolo11_nvtx_inject>")
// and in one test source, at namespace scope (NVTX reads the variable at its first call in the process):
//   YOLO11_NVTX_INJECT_AT_STARTUP();
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace yolo11::test {

/// One NVTX call as seen by the injection library.
struct NvtxRecord {
  uint64_t tid = 0;     ///< OS thread id of the caller (gettid)
  std::string kind;     ///< "push" | "pop" | "start" | "end" | "name_thread"
  std::string domain;   ///< "yolo11" for ours; "" = default domain
  std::string message;  ///< range message; for pop/end the message of the range being closed
  uint64_t id = 0;      ///< start/end range id
};

/// Sets NVTX_INJECTION64_PATH to the injection library (unless already set). Must run before the process's
/// first NVTX call: use YOLO11_NVTX_INJECT_AT_STARTUP() at namespace scope.
inline bool install_nvtx_injection(const char* path) { return setenv("NVTX_INJECTION64_PATH", path, 0) == 0; }

/// Handle of the loaded injection library, or nullptr when NVTX did not load it (yet).
inline void* nvtx_injection_handle() {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  return path != nullptr ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : nullptr;
}

/// Every record so far, in call order (all threads). Empty when the library is not loaded.
inline std::vector<NvtxRecord> nvtx_recording() {
  std::vector<NvtxRecord> out;
  void* h = nvtx_injection_handle();
  if (h == nullptr) return out;
  auto copy = reinterpret_cast<long (*)(char*, long)>(dlsym(h, "yolo11_nvtx_copy"));
  if (copy == nullptr) return out;
  std::string text(static_cast<size_t>(copy(nullptr, 0)), '\0');
  text.resize(static_cast<size_t>(copy(text.data(), static_cast<long>(text.size()))));
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    NvtxRecord r;
    std::string tid, id;
    std::getline(f, tid, '\t');
    std::getline(f, r.kind, '\t');
    std::getline(f, r.domain, '\t');
    std::getline(f, r.message, '\t');
    std::getline(f, id, '\t');
    r.tid = std::stoull(tid);
    r.id = std::stoull(id);
    out.push_back(std::move(r));
  }
  return out;
}

/// Clears the recording.
inline void nvtx_clear_recording() {
  if (void* h = nvtx_injection_handle()) {
    if (auto clear = reinterpret_cast<void (*)()>(dlsym(h, "yolo11_nvtx_clear"))) clear();
  }
}

inline uint64_t this_thread_tid() { return static_cast<uint64_t>(syscall(SYS_gettid)); }

/// The records of one thread and domain as "+name" (push/start) and "-name" (pop/end) strings, e.g.
/// {"+epoch 0", "+step 0", "+dataloader", "-dataloader", ..., "-step 0", "-epoch 0"}.
inline std::vector<std::string> nvtx_sequence(const std::vector<NvtxRecord>& records, uint64_t tid,
                                              const std::string& domain = "yolo11") {
  std::vector<std::string> seq;
  for (const auto& r : records) {
    if (r.tid != tid || r.domain != domain) continue;
    if (r.kind == "push" || r.kind == "start") seq.push_back("+" + r.message);
    if (r.kind == "pop" || r.kind == "end") seq.push_back("-" + r.message);
  }
  return seq;
}

/// The documented nesting of one epoch on the training thread: "+epoch E", then per step "+step k", every step
/// stage ("+dataloader", "-dataloader", ... "+ema", "-ema"), "-step k"; then val, log, checkpoint; "-epoch E".
inline std::vector<std::string> expected_epoch_sequence(int64_t epoch, int64_t first_step, int64_t steps) {
  static const char* const kStep[] = {"dataloader", "h2d", "forward", "loss", "backward", "optimizer", "ema"};
  static const char* const kEpoch[] = {"val", "log", "checkpoint"};
  std::vector<std::string> seq = {"+epoch " + std::to_string(epoch)};
  for (int64_t step = first_step; step < first_step + steps; ++step) {
    seq.push_back("+step " + std::to_string(step));
    for (const char* name : kStep) {
      seq.push_back(std::string("+") + name);
      seq.push_back(std::string("-") + name);
    }
    seq.push_back("-step " + std::to_string(step));
  }
  for (const char* name : kEpoch) {
    seq.push_back(std::string("+") + name);
    seq.push_back(std::string("-") + name);
  }
  seq.push_back("-epoch " + std::to_string(epoch));
  return seq;
}

}  // namespace yolo11::test

#ifdef YOLO11_NVTX_INJECTION_PATH
#define YOLO11_NVTX_INJECT_AT_STARTUP()                                                      \
  [[maybe_unused]] static const bool yolo11_nvtx_injection_installed_ =                      \
      ::yolo11::test::install_nvtx_injection(YOLO11_NVTX_INJECTION_PATH)
#else
#define YOLO11_NVTX_INJECT_AT_STARTUP() static_assert(true, "")
#endif
