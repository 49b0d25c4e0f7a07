#include "nvtx.h"

#ifdef YOLO11_HAS_NVTX
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace yolo11::instrument::nvtx {

#ifdef YOLO11_HAS_NVTX
namespace {

nvtxDomainHandle_t domain() {
  static nvtxDomainHandle_t d = nvtxDomainCreateA("yolo11");
  return d;
}

// FNV-1a of the name → a stable, well-spread ARGB color, so one stage keeps its color across runs.
uint32_t color_of(const char* s) {
  uint32_t h = 2166136261u;
  for (; *s != '\0' && *s != ' '; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 16777619u;
  return 0xFF000000u | (h & 0x00FFFFFFu) | 0x00404040u;
}

nvtxEventAttributes_t attributes(const char* message) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = color_of(message);
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  return a;
}

}  // namespace

void push(const char* message) {
  const nvtxEventAttributes_t a = attributes(message);
  nvtxDomainRangePushEx(domain(), &a);
}
void pop() { nvtxDomainRangePop(domain()); }
uint64_t start(const char* message) {
  const nvtxEventAttributes_t a = attributes(message);
  return nvtxDomainRangeStartEx(domain(), &a);
}
void end(uint64_t id) { nvtxDomainRangeEnd(domain(), id); }
void name_thread(const char* name) { nvtxNameOsThreadA(static_cast<uint32_t>(syscall(SYS_gettid)), name); }
void initialize() {
  nvtxInitialize(nullptr);
  (void)domain();
}
#else
void push(const char*) {}
void pop() {}
uint64_t start(const char*) { return 0; }
void end(uint64_t) {}
void name_thread(const char*) {}
void initialize() {}
#endif

}  // namespace yolo11::instrument::nvtx
