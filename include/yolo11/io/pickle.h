#pragma once
// A minimal, non-executing pickle reader (protocols 2-5) for torch.save checkpoints (src/io/pt_checkpoint.cpp).
// GLOBAL / STACK_GLOBAL names are resolved against a fixed allow-list; classes become plain object records
// (class name, constructor arguments, BUILD state); nothing of the pickle is ever called.
#include <ATen/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace yolo11::io::pickle {

struct Value;
using Ref = std::shared_ptr<Value>;

/// One unpickled value. Containers hold shared references (the pickle memo shares them).
struct Value {
  enum class Kind { None, Bool, Int, Float, Str, Bytes, Tuple, List, Dict, Set, Global, Object, Storage, Tensor };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::string s;                           ///< Str / Bytes; Global and Object: "module.qualname"
  std::vector<Ref> items;                  ///< Tuple / List / Set; Object: constructor arguments
  std::vector<std::pair<Ref, Ref>> dict;   ///< Dict (insertion order); Object: attributes from BUILD
  at::Tensor tensor;                       ///< Storage: 1-d uint8 bytes; Tensor: the rebuilt tensor
  at::ScalarType dtype = at::kByte;        ///< Storage: element type from the storage class
  int depth = 1;                           ///< nesting depth (1 for scalars)

  Value() = default;
  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;
  /// Releases the children iteratively: a chain nested deeper than the depth bound saw (a memoized container
  /// filled after it was nested) cannot overflow the stack when it is freed.
  ~Value();

  bool is(Kind k) const { return kind == k; }
  /// Dict / Object attribute lookup by string key; nullptr when absent.
  const Value* get(std::string_view key) const;
};

/// Bounds on what one pickle may build.
struct Limits {
  int max_depth = 200;               ///< container nesting
  int64_t max_values = 20'000'000;   ///< values created in total
  int64_t max_memo = 10'000'000;     ///< memo slots
};

/// Resolves a persistent id (BINPERSID) to a value: torch checkpoints give ('storage', <Storage class>, key,
/// location, numel) and expect a Storage value.
using PersistentLoad = std::function<Ref(const Value& pid)>;

/// The element type of a torch storage class ("torch.HalfStorage" → kHalf, ...); throws std::runtime_error for
/// another name.
at::ScalarType storage_dtype(const std::string& cls);

/// Unpickles `data`. `what` names the source in messages (e.g. "x.pt:archive/data.pkl"). Throws
/// std::runtime_error naming `what` for a truncated or malformed pickle, an unsupported opcode, a global outside
/// the allow-list (the global's name is in the message), a bound of `limits` exceeded, or a container of the result
/// that holds itself (a reference cycle). Cycles among values the result does not reach are broken, so nothing of
/// the pickle outlives the returned Ref.
Ref unpickle(std::string_view data, const std::string& what, const PersistentLoad& persistent_load,
             const Limits& limits = {});

}  // namespace yolo11::io::pickle
