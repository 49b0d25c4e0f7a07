// Test-only NVTX injection library: records every range push/pop/start/end (with its domain and the calling
// thread) so tests can check the exact nesting of stage names without a GPU or Nsight.
// Protocol: NVTX3 dlopens $NVTX_INJECTION64_PATH and calls InitializeInjectionNvtx2(getExportTable); we ask
// for the callbacks export table and overwrite the CORE / CORE2 function-table slots with our recorders.
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Record {
  std::string kind, domain, message;
  uint64_t tid = 0, id = 0;
};

struct State {
  std::mutex mutex;
  std::vector<Record> records;
  std::map<uint64_t, std::vector<std::pair<std::string, std::string>>> stacks;  // tid → (domain, message)
  std::map<uint64_t, std::pair<std::string, std::string>> open_ranges;         // start/end id → (domain, message)
  std::atomic<uint64_t> next_id{1};
};

State& state() {
  static State* s = new State;
  return *s;
}

uint64_t tid() { return static_cast<uint64_t>(syscall(SYS_gettid)); }

// Domain handles are pointers to heap strings holding the domain name; nullptr = the default domain.
std::string domain_name(nvtxDomainHandle_t d) {
  return d == nullptr ? std::string() : *reinterpret_cast<const std::string*>(d);
}

std::string message_of(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return {};
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii != nullptr ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return a->message.registered != nullptr ? *reinterpret_cast<const std::string*>(a->message.registered) : "";
    default: return "<non-ascii>";
  }
}

void add(Record r) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.records.push_back(std::move(r));
}

int push(const std::string& domain, const std::string& msg) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const uint64_t t = tid();
  auto& st = s.stacks[t];
  st.emplace_back(domain, msg);
  s.records.push_back({"push", domain, msg, t, 0});
  return static_cast<int>(st.size() - 1);
}

int pop(const std::string& domain) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const uint64_t t = tid();
  auto& st = s.stacks[t];
  std::string msg = "<unbalanced>";
  // Pops are per domain: find the innermost range of this domain on this thread.
  for (auto it = st.rbegin(); it != st.rend(); ++it) {
    if (it->first == domain) {
      msg = it->second;
      st.erase(std::next(it).base());
      break;
    }
  }
  s.records.push_back({"pop", domain, msg, t, 0});
  return static_cast<int>(st.size());
}

uint64_t start(const std::string& domain, const std::string& msg) {
  State& s = state();
  const uint64_t id = s.next_id.fetch_add(1);
  std::lock_guard<std::mutex> lock(s.mutex);
  s.open_ranges[id] = {domain, msg};
  s.records.push_back({"start", domain, msg, tid(), id});
  return id;
}

void end(uint64_t id) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Record r{"end", "", "<unknown id>", tid(), id};
  auto it = s.open_ranges.find(id);
  if (it != s.open_ranges.end()) {
    r.domain = it->second.first;
    r.message = it->second.second;
    s.open_ranges.erase(it);
  }
  s.records.push_back(std::move(r));
}

// ---- CORE (default domain) ----
int NVTX_API core_push_ex(const nvtxEventAttributes_t* a) { return push("", message_of(a)); }
int NVTX_API core_push_a(const char* m) { return push("", m != nullptr ? m : ""); }
int NVTX_API core_pop() { return pop(""); }
nvtxRangeId_t NVTX_API core_start_ex(const nvtxEventAttributes_t* a) { return start("", message_of(a)); }
nvtxRangeId_t NVTX_API core_start_a(const char* m) { return start("", m != nullptr ? m : ""); }
void NVTX_API core_end(nvtxRangeId_t id) { end(id); }
void NVTX_API core_name_thread_a(uint32_t t, const char* name) {
  add({"name_thread", "", name != nullptr ? name : "", t, 0});
}

// ---- CORE2 (domains) ----
nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(new std::string(name != nullptr ? name : ""));
}
void NVTX_API domain_destroy(nvtxDomainHandle_t) {}  // handles stay valid for late records
nvtxStringHandle_t NVTX_API domain_register_string_a(nvtxDomainHandle_t, const char* s) {
  return reinterpret_cast<nvtxStringHandle_t>(new std::string(s != nullptr ? s : ""));
}
int NVTX_API domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return push(domain_name(d), message_of(a));
}
int NVTX_API domain_pop(nvtxDomainHandle_t d) { return pop(domain_name(d)); }
nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return start(domain_name(d), message_of(a));
}
void NVTX_API domain_end(nvtxDomainHandle_t, nvtxRangeId_t id) { end(id); }

template <typename F>
void set_slot(NvtxFunctionTable table, unsigned int size, unsigned int cbid, F fn) {
  if (cbid <= size && table[cbid] != nullptr) *table[cbid] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) == 0) return 0;
  set_slot(table, size, NVTX_CBID_CORE_RangePushEx, core_push_ex);
  set_slot(table, size, NVTX_CBID_CORE_RangePushA, core_push_a);
  set_slot(table, size, NVTX_CBID_CORE_RangePop, core_pop);
  set_slot(table, size, NVTX_CBID_CORE_RangeStartEx, core_start_ex);
  set_slot(table, size, NVTX_CBID_CORE_RangeStartA, core_start_a);
  set_slot(table, size, NVTX_CBID_CORE_RangeEnd, core_end);
  set_slot(table, size, NVTX_CBID_CORE_NameOsThreadA, core_name_thread_a);
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) == 0) return 0;
  set_slot(table, size, NVTX_CBID_CORE2_DomainCreateA, domain_create_a);
  set_slot(table, size, NVTX_CBID_CORE2_DomainDestroy, domain_destroy);
  set_slot(table, size, NVTX_CBID_CORE2_DomainRegisterStringA, domain_register_string_a);
  set_slot(table, size, NVTX_CBID_CORE2_DomainRangePushEx, domain_push_ex);
  set_slot(table, size, NVTX_CBID_CORE2_DomainRangePop, domain_pop);
  set_slot(table, size, NVTX_CBID_CORE2_DomainRangeStartEx, domain_start_ex);
  set_slot(table, size, NVTX_CBID_CORE2_DomainRangeEnd, domain_end);
  return 1;
}

/// The recording as text, one record per line: "tid\tkind\tdomain\tmessage\tid\n". Copies at most `cap`
/// bytes into `out` (no terminator needed) and returns the full length, so callers size a buffer and retry.
__attribute__((visibility("default"))) long yolo11_nvtx_copy(char* out, long cap) {
  State& s = state();
  std::string text;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    for (const Record& r : s.records) {
      text += std::to_string(r.tid) + '\t' + r.kind + '\t' + r.domain + '\t' + r.message + '\t' +
              std::to_string(r.id) + '\n';
    }
  }
  const long n = static_cast<long>(text.size());
  if (out != nullptr && cap > 0) std::memcpy(out, text.data(), static_cast<size_t>(std::min(n, cap)));
  return n;
}

/// Drops the recording (open ranges are kept so later pops/ends still resolve their names).
__attribute__((visibility("default"))) void yolo11_nvtx_clear() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.records.clear();
}

}  // extern "C"
