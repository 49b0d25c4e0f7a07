#pragma once
// A pickle writer (protocol 2, as torch.save writes) for .pt checkpoints the reference's Python loader reads
// (src/model/pt_save.cpp). Values are written as they are emitted: containers are opened and closed explicitly, and
// tensors go out as torch's persistent storage ids, their bytes stored beside the pickle by the caller
// (io::write_pt_archive). The reader of the same format is include/yolo11/io/pickle.h.
#include <c10/core/ScalarType.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace yolo11::io::pickle {

/// Writes one pickle. Inside a dict, an ordered dict or an object's attributes, keys and values alternate (emit the
/// key, then the value). Misuse (closing what is not open, finish() with something open, an odd number of dict
/// entries) throws std::logic_error: it is a bug of the caller, never of the data.
class Pickler {
 public:
  Pickler();  ///< writes the PROTO 2 header

  void none();
  void boolean(bool v);
  void integer(int64_t v);
  void real(double v);
  void str(std::string_view utf8);

  void begin_tuple();
  void end_tuple();
  void begin_list();
  void end_list();
  void begin_dict();
  void end_dict();
  /// collections.OrderedDict (what torch's modules keep their parameters, buffers, children and hooks in).
  void begin_ordered_dict();
  void end_ordered_dict();
  /// An instance of `cls` ("module.Name") created without calling its __init__ (copyreg's __newobj__, as Python
  /// pickles an nn.Module) and given the attributes emitted until end_object() (key, value, ...) as its __dict__.
  void begin_object(std::string_view cls);
  void end_object();
  /// A call of `fn` ("module.name") on the positional arguments emitted until end_call() (e.g. builtins.set).
  void begin_call(std::string_view fn);
  void end_call();
  /// An empty set (builtins.set of an empty list).
  void empty_set();
  /// A tensor as torch.save writes it: torch._utils._rebuild_tensor_v2 on storage `key` (a `dtype` storage of
  /// `storage_numel` elements on 'cpu', whose bytes the caller stores as data/<key>), with `sizes`, `strides` and
  /// `offset` in elements. `parameter`: wrapped in torch._utils._rebuild_parameter (an nn.Parameter) with
  /// `requires_grad`. Throws std::invalid_argument for a dtype torch has no storage class name for here.
  void tensor(const std::string& key, c10::ScalarType dtype, int64_t storage_numel, c10::IntArrayRef sizes,
              c10::IntArrayRef strides, int64_t offset, bool requires_grad, bool parameter);

  /// Writes STOP and returns the pickle's bytes; the Pickler is spent.
  std::string finish();

 private:
  enum class Open : char { Tuple, List, Dict, Object, Call };
  void op(char c) { out_.push_back(c); }
  void global(std::string_view qualname);
  void open(Open k);
  void close(Open k, const char* what);
  void count_value();

  std::string out_;
  std::vector<Open> open_;
  std::vector<int64_t> items_;  ///< values emitted directly into each open container
  bool done_ = false;
};

/// torch's storage class for a dtype ("torch.HalfStorage" for kHalf, ...); throws std::invalid_argument otherwise.
std::string storage_class(c10::ScalarType dtype);

}  // namespace yolo11::io::pickle
