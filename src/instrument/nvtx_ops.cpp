// Operator NVTX ranges (src/instrument/nvtx_ops.h).
#include "nvtx_ops.h"

#include <ATen/record_function.h>

#include <optional>

#include "nvtx.h"

namespace yolo11::instrument::nvtx {

namespace {
thread_local std::optional<at::CallbackHandle> handle;
}  // namespace

bool ops_start() {
#ifdef YOLO11_HAS_NVTX
  if (handle) return true;
  auto cb = at::RecordFunctionCallback(
                [](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
                  push(fn.name());
                  return nullptr;
                },
                [](const at::RecordFunction&, at::ObserverContext*) { pop(); })
                .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION});
  handle = at::addThreadLocalCallback(std::move(cb));
  return true;
#else
  return false;
#endif
}

void ops_stop() {
  if (!handle) return;
  at::removeCallback(*handle);
  handle.reset();
}

}  // namespace yolo11::instrument::nvtx
