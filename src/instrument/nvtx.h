#pragma once
// Internal: thin NVTX3 wrappers in domain "yolo11". Compiled to nothing without YOLO11_HAS_NVTX. When no tool
// (Nsight Systems, or an injection library via NVTX_INJECTION64_PATH) is attached, each call is a null
// function-pointer check inside NVTX.
#include <cstdint>

namespace yolo11::instrument::nvtx {

/// Push range on the calling thread with an ASCII message; color derived from the name.
void push(const char* message);
void pop();
/// Process-wide start/end range (may end on another thread); returns the id to pass to end().
uint64_t start(const char* message);
void end(uint64_t id);
/// nvtxNameOsThread for the calling thread.
void name_thread(const char* name);
/// Forces NVTX's one-time initialization now (nvtxInitialize); see instrument::prepare_threads.
void initialize();

}  // namespace yolo11::instrument::nvtx
