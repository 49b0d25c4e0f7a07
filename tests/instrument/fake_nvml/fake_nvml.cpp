// A fake libnvidia-ml for tests (loaded through YOLO11_NVML_LIBRARY): one "NVIDIA H200" at 95 % utilisation whose GPM
// metrics report SM active 31 %, SM occupancy 12 %, tensor active 7 %, DRAM bandwidth 22 % (a launch-bound GPU).
// Only the entry points the sampler uses, with NVML's C ABI (nvmlReturn_t = int, 0 = success).
#include <cstring>

namespace {
int g_device_token = 0;
int g_samples_taken = 0;
struct Utilization { unsigned int gpu, memory; };
struct Memory { unsigned long long total, free, used; };
struct GpmSupport { unsigned int version, supported; };
struct GpmMetric { unsigned int id; int ret; double value; struct { char *s, *l, *u; } info; };
struct GpmMetricsGet { unsigned int version, num; void *s1, *s2; GpmMetric metrics[98]; };
}  // namespace

extern "C" {
__attribute__((visibility("default"))) int nvmlInit_v2() { return 0; }
__attribute__((visibility("default"))) int nvmlShutdown() { return 0; }
__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void** d) {
  if (i != 0) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *d = &g_device_token;
  return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetName(void*, char* buf, unsigned int n) {
  std::strncpy(buf, "NVIDIA H200", n);
  return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetUtilizationRates(void*, Utilization* u) {
  u->gpu = 95, u->memory = 40;
  return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo(void*, Memory* m) {
  m->total = 141ull << 30, m->used = 10ull << 30, m->free = m->total - m->used;
  return 0;
}
__attribute__((visibility("default"))) int nvmlGpmQueryDeviceSupport(void*, GpmSupport* s) {
  if (s->version != 1) return 25;  // NVML_ERROR_ARGUMENT_VERSION_MISMATCH
  s->supported = 1;
  return 0;
}
__attribute__((visibility("default"))) int nvmlGpmSampleAlloc(void** s) {
  *s = new int(0);
  return 0;
}
__attribute__((visibility("default"))) int nvmlGpmSampleFree(void* s) {
  delete static_cast<int*>(s);
  return 0;
}
__attribute__((visibility("default"))) int nvmlGpmSampleGet(void*, void* s) {
  *static_cast<int*>(s) = ++g_samples_taken;
  return 0;
}
__attribute__((visibility("default"))) int nvmlGpmMetricsGet(GpmMetricsGet* g) {
  if (g->version != 1 || g->s1 == nullptr || g->s2 == nullptr) return 25;
  for (unsigned int i = 0; i < g->num; ++i) {
    auto& m = g->metrics[i];
    m.ret = 0;
    switch (m.id) {
      case 2: m.value = 31; break;   // SM_UTIL
      case 3: m.value = 12; break;   // SM_OCCUPANCY
      case 5: m.value = 7; break;    // ANY_TENSOR_UTIL
      case 10: m.value = 22; break;  // DRAM_BW_UTIL
      default: m.ret = 3;            // NVML_ERROR_NOT_SUPPORTED
    }
  }
  return 0;
}
}
