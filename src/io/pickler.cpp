#include "yolo11/io/pickler.h"

#include <cstring>
#include <limits>
#include <stdexcept>

namespace yolo11::io::pickle {

namespace {

// Opcodes of protocol 2 (Python's Lib/pickle.py names them; only those written here).
constexpr char kProto = '\x80', kStop = '.', kMark = '(', kNone = 'N', kTrue = '\x88', kFalse = '\x89';
constexpr char kBinInt = 'J', kBinInt1 = 'K', kBinInt2 = 'M', kLong1 = '\x8a', kBinFloat = 'G', kBinUnicode = 'X';
constexpr char kTuple = 't', kEmptyTuple = ')', kEmptyList = ']', kAppends = 'e', kEmptyDict = '}', kSetItems = 'u';
constexpr char kGlobal = 'c', kReduce = 'R', kNewObj = '\x81', kBuild = 'b', kBinPersId = 'Q';

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

std::string storage_class(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Half: return "torch.HalfStorage";
    case c10::ScalarType::Float: return "torch.FloatStorage";
    case c10::ScalarType::Double: return "torch.DoubleStorage";
    case c10::ScalarType::BFloat16: return "torch.BFloat16Storage";
    case c10::ScalarType::Long: return "torch.LongStorage";
    case c10::ScalarType::Int: return "torch.IntStorage";
    case c10::ScalarType::Byte: return "torch.ByteStorage";
    case c10::ScalarType::Bool: return "torch.BoolStorage";
    default: throw std::invalid_argument(std::string("pickle: no torch storage class for dtype ") + c10::toString(dtype));
  }
}

Pickler::Pickler() {
  op(kProto);
  op('\x02');
}

void Pickler::count_value() {
  if (done_) throw std::logic_error("Pickler: value after finish()");
  if (!items_.empty()) ++items_.back();
}

void Pickler::open(Open k) {
  open_.push_back(k);
  items_.push_back(0);
}

void Pickler::close(Open k, const char* what) {
  if (open_.empty() || open_.back() != k) throw std::logic_error(std::string("Pickler: ") + what + " without its begin");
  const bool keyed = k == Open::Dict || k == Open::Object;
  if (keyed && items_.back() % 2 != 0) throw std::logic_error(std::string("Pickler: ") + what + ": a key without a value");
  open_.pop_back();
  items_.pop_back();
}

void Pickler::global(std::string_view qualname) {
  const auto dot = qualname.rfind('.');
  if (dot == std::string_view::npos) throw std::logic_error("Pickler: global '" + std::string(qualname) + "' has no module");
  std::string_view mod = qualname.substr(0, dot);
  // Protocol 2 names Python 3's builtins module as Python 2 did; Python's unpickler maps it back.
  if (mod == "builtins") mod = "__builtin__";
  op(kGlobal);
  out_.append(mod);
  op('\n');
  out_.append(qualname.substr(dot + 1));
  op('\n');
}

void Pickler::none() {
  count_value();
  op(kNone);
}

void Pickler::boolean(bool v) {
  count_value();
  op(v ? kTrue : kFalse);
}

void Pickler::integer(int64_t v) {
  count_value();
  if (v >= 0 && v < 256) {
    op(kBinInt1);
    put_le(out_, static_cast<uint64_t>(v), 1);
  } else if (v >= 0 && v < 65536) {
    op(kBinInt2);
    put_le(out_, static_cast<uint64_t>(v), 2);
  } else if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) {
    op(kBinInt);
    put_le(out_, static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(v))), 4);
  } else {
    op(kLong1);  // little-endian two's complement, 8 bytes are always enough for an int64
    op('\x08');
    put_le(out_, static_cast<uint64_t>(v), 8);
  }
}

void Pickler::real(double v) {
  count_value();
  op(kBinFloat);
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  for (int i = 7; i >= 0; --i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));  // big-endian
}

void Pickler::str(std::string_view utf8) {
  count_value();
  if (utf8.size() > std::numeric_limits<uint32_t>::max()) throw std::invalid_argument("Pickler: string over 4 GiB");
  op(kBinUnicode);
  put_le(out_, utf8.size(), 4);
  out_.append(utf8);
}

void Pickler::begin_tuple() {
  count_value();
  open(Open::Tuple);
  op(kMark);
}

void Pickler::end_tuple() {
  close(Open::Tuple, "end_tuple");
  op(kTuple);
}

void Pickler::begin_list() {
  count_value();
  open(Open::List);
  op(kEmptyList);
  op(kMark);
}

void Pickler::end_list() {
  close(Open::List, "end_list");
  op(kAppends);
}

void Pickler::begin_dict() {
  count_value();
  open(Open::Dict);
  op(kEmptyDict);
  op(kMark);
}

void Pickler::end_dict() {
  close(Open::Dict, "end_dict");
  op(kSetItems);
}

void Pickler::begin_ordered_dict() {
  count_value();
  open(Open::Dict);
  global("collections.OrderedDict");
  op(kEmptyTuple);
  op(kReduce);
  op(kMark);
}

void Pickler::end_ordered_dict() {
  close(Open::Dict, "end_ordered_dict");
  op(kSetItems);
}

void Pickler::begin_object(std::string_view cls) {
  count_value();
  open(Open::Object);
  global(cls);
  op(kEmptyTuple);
  op(kNewObj);
  op(kEmptyDict);
  op(kMark);
}

void Pickler::end_object() {
  close(Open::Object, "end_object");
  op(kSetItems);
  op(kBuild);
}

void Pickler::begin_call(std::string_view fn) {
  count_value();
  open(Open::Call);
  global(fn);
  op(kMark);
}

void Pickler::end_call() {
  close(Open::Call, "end_call");
  op(kTuple);
  op(kReduce);
}

void Pickler::empty_set() {
  begin_call("builtins.set");
  begin_list();
  end_list();
  end_call();
}

void Pickler::tensor(const std::string& key, c10::ScalarType dtype, int64_t storage_numel, c10::IntArrayRef sizes,
                     c10::IntArrayRef strides, int64_t offset, bool requires_grad, bool parameter) {
  if (sizes.size() != strides.size()) throw std::logic_error("Pickler: tensor sizes and strides differ in length");
  const std::string storage = storage_class(dtype);
  if (parameter) begin_call("torch._utils._rebuild_parameter");
  begin_call("torch._utils._rebuild_tensor_v2");
  // The persistent id ('storage', <storage class>, key, location, numel) the loader resolves to data/<key>.
  begin_tuple();
  str("storage");
  count_value();
  global(storage);
  str(key);
  str("cpu");
  integer(storage_numel);
  end_tuple();
  op(kBinPersId);
  integer(offset);
  begin_tuple();
  for (const int64_t s : sizes) integer(s);
  end_tuple();
  begin_tuple();
  for (const int64_t s : strides) integer(s);
  end_tuple();
  boolean(requires_grad);
  begin_ordered_dict();  // backward hooks: none
  end_ordered_dict();
  end_call();
  if (parameter) {
    boolean(requires_grad);
    begin_ordered_dict();
    end_ordered_dict();
    end_call();
  }
}

std::string Pickler::finish() {
  if (done_) throw std::logic_error("Pickler: finish() twice");
  if (!open_.empty()) throw std::logic_error("Pickler: finish() with " + std::to_string(open_.size()) + " container(s) open");
  op(kStop);
  done_ = true;
  return std::move(out_);
}

}  // namespace yolo11::io::pickle
