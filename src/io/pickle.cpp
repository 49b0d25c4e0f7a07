#include "yolo11/io/pickle.h"

#include <ATen/ATen.h>

#include <array>
#include <cstring>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace yolo11::io::pickle {

const Value* Value::get(std::string_view key) const {
  for (const auto& [k, v] : dict)
    if (k && k->kind == Kind::Str && k->s == key) return v.get();
  return nullptr;
}

Value::~Value() {
  std::vector<Ref> pending;
  auto detach = [&pending](Value& v) {
    for (auto& x : v.items)
      if (x && x.use_count() == 1) pending.push_back(std::move(x));
    for (auto& [k, x] : v.dict) {
      if (k && k.use_count() == 1) pending.push_back(std::move(k));
      if (x && x.use_count() == 1) pending.push_back(std::move(x));
    }
    v.items.clear();
    v.dict.clear();
  };
  detach(*this);
  while (!pending.empty()) {
    Ref r = std::move(pending.back());
    pending.pop_back();
    detach(*r);  // r is freed here with no children left
  }
}

namespace {

using Kind = Value::Kind;

// Storage classes torch.save names in persistent ids, with their element types.
const std::unordered_map<std::string, at::ScalarType>& storage_types() {
  static const std::unordered_map<std::string, at::ScalarType> m = {
      {"torch.HalfStorage", at::kHalf},   {"torch.FloatStorage", at::kFloat},   {"torch.DoubleStorage", at::kDouble},
      {"torch.BFloat16Storage", at::kBFloat16}, {"torch.LongStorage", at::kLong}, {"torch.IntStorage", at::kInt},
      {"torch.ShortStorage", at::kShort}, {"torch.CharStorage", at::kChar},     {"torch.ByteStorage", at::kByte},
      {"torch.BoolStorage", at::kBool}};
  return m;
}

// The allow-list: functions interpreted here (never called), containers, and classes recorded as plain objects.
bool allowed_global(const std::string& name) {
  static const std::array<const char*, 16> exact = {
      "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_parameter", "collections.OrderedDict",
      "builtins.set",        "builtins.frozenset",    "builtins.tuple",     "builtins.list",
      "builtins.dict",       "builtins.slice",        "torch.Size",         "torch.device",
      "argparse.Namespace",  "types.SimpleNamespace", "builtins.object",    "builtins.bytearray",
      "pathlib.PosixPath"};
  for (const char* e : exact)
    if (name == e) return true;
  if (storage_types().count(name)) return true;
  // Module and model classes: recorded (class name + state), never constructed.
  return name.rfind("torch.nn.modules.", 0) == 0 || name.rfind("ultralytics.", 0) == 0;
}

class Machine {
 public:
  Machine(std::string_view data, const std::string& what, const PersistentLoad& pl, const Limits& limits)
      : d_(data), what_(what), pl_(pl), lim_(limits) {}

  Ref run() {
    for (;;) {
      const uint8_t op = byte();
      switch (op) {
        case 0x80: byte(); break;                    // PROTO
        case 0x95: take(8); break;                   // FRAME (frames are not needed to read sequentially)
        case '.': {                                  // STOP
          if (stack_.size() != 1) fail("STOP with " + std::to_string(stack_.size()) + " values on the stack");
          return stack_.back();
        }
        case '(': marks_.push_back(stack_.size()); break;  // MARK
        case '0': pop(); break;                             // POP
        case '1': pop_mark(); break;                        // POP_MARK
        case '2': push(top()); break;                       // DUP
        case 'N': push(make(Kind::None)); break;
        case 0x88: case 0x89: { auto v = make(Kind::Bool); v->b = op == 0x88; push(v); break; }
        case 'J': push_int(static_cast<int32_t>(uint_le(4))); break;   // BININT
        case 'K': push_int(static_cast<int64_t>(uint_le(1))); break;   // BININT1
        case 'M': push_int(static_cast<int64_t>(uint_le(2))); break;   // BININT2
        case 0x8a: push_long(uint_le(1)); break;                       // LONG1
        case 0x8b: push_long(uint_le(4)); break;                       // LONG4
        case 'G': {                                                     // BINFLOAT (big-endian)
          uint64_t u = 0;
          for (unsigned char c : take(8)) u = (u << 8) | c;
          auto v = make(Kind::Float);
          std::memcpy(&v->f, &u, 8);
          push(v);
          break;
        }
        case 0x8c: push_str(Kind::Str, uint_le(1)); break;   // SHORT_BINUNICODE
        case 'X': push_str(Kind::Str, uint_le(4)); break;    // BINUNICODE
        case 0x8d: push_str(Kind::Str, uint_le(8)); break;   // BINUNICODE8
        case 'U': push_str(Kind::Str, uint_le(1)); break;    // SHORT_BINSTRING
        case 'T': push_str(Kind::Str, uint_le(4)); break;    // BINSTRING
        case 'C': push_str(Kind::Bytes, uint_le(1)); break;  // SHORT_BINBYTES
        case 'B': push_str(Kind::Bytes, uint_le(4)); break;  // BINBYTES
        case 0x8e: push_str(Kind::Bytes, uint_le(8)); break; // BINBYTES8
        case ')': push(make(Kind::Tuple)); break;            // EMPTY_TUPLE
        case 't': push(collect(Kind::Tuple, pop_mark())); break;
        case 0x85: case 0x86: case 0x87: {                   // TUPLE1..3
          const size_t n = op - 0x84u;
          if (stack_.size() < n + base()) fail("TUPLE" + std::to_string(n) + " on a short stack");
          std::vector<Ref> xs(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
          stack_.resize(stack_.size() - n);
          push(collect(Kind::Tuple, std::move(xs)));
          break;
        }
        case ']': push(make(Kind::List)); break;             // EMPTY_LIST
        case 'l': push(collect(Kind::List, pop_mark())); break;
        case 'a': { auto x = pop(); add(top(), Kind::List, x); break; }          // APPEND
        case 'e': { auto xs = pop_mark(); for (auto& x : xs) add(top(), Kind::List, x); break; }  // APPENDS
        case 0x8f: push(make(Kind::Set)); break;             // EMPTY_SET
        case 0x90: { auto xs = pop_mark(); for (auto& x : xs) add(top(), Kind::Set, x); break; }  // ADDITEMS
        case 0x91: push(collect(Kind::Set, pop_mark())); break;  // FROZENSET
        case '}': push(make(Kind::Dict)); break;             // EMPTY_DICT
        case 'd': { auto xs = pop_mark(); auto v = make(Kind::Dict); set_items(v, xs); push(v); break; }
        case 's': { auto val = pop(); auto key = pop(); set_items(top(), {key, val}); break; }  // SETITEM
        case 'u': { auto xs = pop_mark(); set_items(top(), xs); break; }                       // SETITEMS
        case 'c': {                                          // GLOBAL "module\nname\n"
          std::string mod = line(), name = line();
          push(global(mod, name));
          break;
        }
        case 0x93: {                                         // STACK_GLOBAL
          auto name = pop(), mod = pop();
          if (!mod->is(Kind::Str) || !name->is(Kind::Str)) fail("STACK_GLOBAL with non-string names");
          push(global(mod->s, name->s));
          break;
        }
        case 'R': { auto args = pop(); auto fn = pop(); push(reduce(*fn, args)); break; }   // REDUCE
        case 0x81: { auto args = pop(); auto cls = pop(); push(reduce(*cls, args)); break; } // NEWOBJ
        case 0x92: { pop(); auto args = pop(); auto cls = pop(); push(reduce(*cls, args)); break; }  // NEWOBJ_EX
        case 'b': { auto state = pop(); build(top(), state); break; }  // BUILD
        case 'Q': {                                          // BINPERSID
          auto pid = pop();
          if (!pl_) fail("a persistent id where none is expected");
          auto v = pl_(*pid);
          count();
          push(v);
          break;
        }
        case 'h': push(memo_get(uint_le(1))); break;         // BINGET
        case 'j': push(memo_get(uint_le(4))); break;         // LONG_BINGET
        case 'q': memo_put(uint_le(1)); break;               // BINPUT
        case 'r': memo_put(uint_le(4)); break;               // LONG_BINPUT
        case 0x94: memo_put(memo_.size()); break;            // MEMOIZE
        default: {
          char buf[8];
          std::snprintf(buf, sizeof buf, "0x%02x", op);
          fail(std::string("unsupported pickle opcode ") + buf);
        }
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const {
    throw std::runtime_error(what_ + ": " + msg + " (pickle offset " + std::to_string(pos_) + ")");
  }
  uint8_t byte() {
    if (pos_ >= d_.size()) fail("truncated pickle (no STOP)");
    return static_cast<uint8_t>(d_[pos_++]);
  }
  std::string_view take(uint64_t n) {
    if (n > d_.size() - pos_) fail("truncated pickle (" + std::to_string(n) + " bytes wanted)");
    auto s = d_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t uint_le(int n) {
    uint64_t u = 0;
    auto s = take(static_cast<uint64_t>(n));
    for (int k = n - 1; k >= 0; --k) u = (u << 8) | static_cast<unsigned char>(s[static_cast<size_t>(k)]);
    return u;
  }
  std::string line() {
    const auto e = d_.find('\n', pos_);
    if (e == std::string_view::npos || e - pos_ > 256) fail("truncated or overlong GLOBAL name");
    std::string s(d_.substr(pos_, e - pos_));
    pos_ = e + 1;
    return s;
  }
  void count() {
    if (++values_ > lim_.max_values) fail("more than " + std::to_string(lim_.max_values) + " values");
  }
  Ref make(Kind k) {
    count();
    auto v = std::make_shared<Value>();
    v->kind = k;
    if (k == Kind::List || k == Kind::Dict || k == Kind::Set || k == Kind::Object) mutables_.push_back(v);
    return v;
  }
  size_t base() const { return marks_.empty() ? 0 : marks_.back(); }
  void push(Ref v) {
    if (stack_.size() > static_cast<size_t>(lim_.max_values)) fail("stack too large");
    stack_.push_back(std::move(v));
  }
  Ref pop() {
    if (stack_.size() <= base()) fail("pop from an empty stack");
    auto v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  Ref top() {
    if (stack_.size() <= base()) fail("empty stack");
    return stack_.back();
  }
  std::vector<Ref> pop_mark() {
    if (marks_.empty()) fail("no MARK");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Ref> xs(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return xs;
  }
  void push_int(int64_t x) {
    auto v = make(Kind::Int);
    v->i = x;
    push(v);
  }
  void push_long(uint64_t n) {
    if (n > 8) fail("integer of " + std::to_string(n) + " bytes");
    const auto s = take(n);
    uint64_t u = 0;
    for (size_t k = n; k-- > 0;) u = (u << 8) | static_cast<unsigned char>(s[k]);
    if (n > 0 && n < 8 && (static_cast<unsigned char>(s[n - 1]) & 0x80)) u |= ~uint64_t{0} << (8 * n);  // sign
    push_int(static_cast<int64_t>(u));
  }
  void push_str(Kind k, uint64_t n) {
    auto v = make(k);
    v->s = std::string(take(n));
    push(v);
  }
  void grow(Value& c, const Ref& x) {
    if (x && x->depth + 1 > c.depth) c.depth = x->depth + 1;
    if (c.depth > lim_.max_depth) fail("containers nested deeper than " + std::to_string(lim_.max_depth));
  }
  Ref collect(Kind k, std::vector<Ref> xs) {
    auto v = make(k);
    for (auto& x : xs) grow(*v, x);
    v->items = std::move(xs);
    return v;
  }
  void add(const Ref& c, Kind k, const Ref& x) {
    if (!c->is(k)) fail(k == Kind::List ? "APPEND to a non-list" : "ADDITEMS to a non-set");
    grow(*c, x);
    c->items.push_back(x);
  }
  void set_items(const Ref& c, const std::vector<Ref>& kv) {
    if (!c->is(Kind::Dict)) fail("SETITEM(S) on a non-dict");
    if (kv.size() % 2) fail("SETITEMS with an odd number of values");
    for (size_t k = 0; k < kv.size(); k += 2) {
      grow(*c, kv[k]);
      grow(*c, kv[k + 1]);
      c->dict.emplace_back(kv[k], kv[k + 1]);
    }
  }
  Ref global(std::string mod, const std::string& name) {
    if (mod == "__builtin__") mod = "builtins";
    const std::string full = mod + "." + name;
    if (!allowed_global(full))
      fail("global '" + full + "' is not allowed (only tensors, containers and model classes)");
    auto v = make(Kind::Global);
    v->s = full;
    return v;
  }
  Ref memo_get(uint64_t k) {
    auto it = memo_.find(k);
    if (it == memo_.end()) fail("memo key " + std::to_string(k) + " not set");
    return it->second;
  }
  void memo_put(uint64_t k) {
    if (memo_.size() >= static_cast<size_t>(lim_.max_memo)) fail("memo larger than " + std::to_string(lim_.max_memo));
    memo_[k] = top();
  }
  Ref reduce(const Value& fn, const Ref& args) {
    if (!fn.is(Kind::Global)) fail("REDUCE / NEWOBJ of a non-global");
    if (!args->is(Kind::Tuple)) fail("REDUCE arguments are not a tuple");
    const auto& a = args->items;
    const std::string& n = fn.s;
    if (n == "torch._utils._rebuild_tensor_v2") return rebuild_tensor(a);
    if (n == "torch._utils._rebuild_parameter") {
      if (a.empty() || !a[0]->is(Kind::Tensor)) fail("_rebuild_parameter without a tensor");
      return a[0];
    }
    if (n == "collections.OrderedDict" || n == "builtins.dict") {
      auto v = make(Kind::Dict);
      if (!a.empty() && a[0]->is(Kind::List))
        for (const auto& p : a[0]->items) {
          if (!p->is(Kind::Tuple) || p->items.size() != 2) fail(n + " from a list that is not of pairs");
          set_items(v, p->items);
        }
      return v;
    }
    if (n == "builtins.set" || n == "builtins.frozenset" || n == "builtins.tuple" || n == "builtins.list" ||
        n == "torch.Size") {
      const Kind k = n == "builtins.list"                             ? Kind::List
                     : (n == "builtins.tuple" || n == "torch.Size") ? Kind::Tuple
                                                                      : Kind::Set;
      if (a.empty()) return make(k);
      if (!(a[0]->is(Kind::List) || a[0]->is(Kind::Tuple) || a[0]->is(Kind::Set)))
        fail(n + " of a non-sequence");
      return collect(k, a[0]->items);
    }
    if (storage_types().count(n)) fail("storage class " + n + " called directly");
    auto v = make(Kind::Object);  // a class recorded, not constructed
    v->s = n;
    for (const auto& x : a) grow(*v, x);
    v->items = a;
    return v;
  }
  void build(const Ref& obj, const Ref& state) {
    if (state->is(Kind::None)) return;
    if (!obj->is(Kind::Object)) fail("BUILD on a " + std::string(obj->is(Kind::Dict) ? "dict" : "non-object"));
    auto merge = [&](const Ref& s) {
      if (!s || s->is(Kind::None)) return;
      if (!s->is(Kind::Dict)) fail("BUILD state of " + obj->s + " is not a dict");
      for (const auto& [k, v] : s->dict) {
        grow(*obj, v);
        obj->dict.emplace_back(k, v);
      }
    };
    if (state->is(Kind::Tuple) && state->items.size() == 2) {  // (dict state, slot state)
      merge(state->items[0]);
      merge(state->items[1]);
    } else {
      merge(state);
    }
  }
  std::vector<int64_t> ints(const Ref& t, const char* what) {
    if (!t->is(Kind::Tuple)) fail(std::string("tensor ") + what + " is not a tuple");
    if (t->items.size() > 16) fail(std::string("tensor ") + what + " has more than 16 dimensions");
    std::vector<int64_t> r;
    for (const auto& x : t->items) {
      if (!x->is(Kind::Int) || x->i < 0 || x->i > (int64_t{1} << 40)) fail(std::string("bad tensor ") + what);
      r.push_back(x->i);
    }
    return r;
  }
  Ref rebuild_tensor(const std::vector<Ref>& a) {
    if (a.size() < 4 || !a[0]->is(Kind::Storage) || !a[1]->is(Kind::Int))
      fail("_rebuild_tensor_v2 without (storage, offset, size, stride)");
    const Value& st = *a[0];
    const auto size = ints(a[2], "size"), stride = ints(a[3], "stride");
    if (size.size() != stride.size()) fail("tensor size and stride differ in length");
    const int64_t offset = a[1]->i, elem = static_cast<int64_t>(c10::elementSize(st.dtype));
    const int64_t avail = st.tensor.numel() / elem;
    __int128 numel = 1, last = offset;  // sizes and strides below 2^40: no overflow in 128 bits
    for (size_t k = 0; k < size.size(); ++k) {
      numel *= size[k];
      if (numel > avail) break;
      if (size[k] > 0) last += static_cast<__int128>(size[k] - 1) * stride[k];
    }
    if (offset < 0 || (numel > 0 && (numel > avail || last >= avail)))
      fail("tensor of " + std::string(numel > avail ? "more" : std::to_string(static_cast<int64_t>(numel))) +
           " elements at offset " + std::to_string(offset) +
           " reaches past its storage of " + std::to_string(avail) + " elements");
    auto v = make(Kind::Tensor);
    auto flat = at::from_blob(st.tensor.data_ptr(), {avail}, at::TensorOptions().dtype(st.dtype));
    v->tensor = numel == 0 ? at::empty(size, flat.options()) : flat.as_strided(size, stride, offset).clone();
    return v;
  }

  /// True when no container reachable from `root` holds itself; every value visited is added to `seen`.
  static bool acyclic(const Value& root, std::unordered_set<const Value*>& seen) {
    struct Frame {
      const Value* v;
      size_t next;
    };
    std::unordered_set<const Value*> open{&root};  // on the current path
    std::vector<Frame> path{{&root, 0}};
    while (!path.empty()) {
      const Value* v = path.back().v;
      const size_t k = path.back().next++, ni = v->items.size();
      if (k == ni + 2 * v->dict.size()) {
        open.erase(v);
        seen.insert(v);
        path.pop_back();
        continue;
      }
      const Value* c = k < ni             ? v->items[k].get()
                       : (k - ni) % 2 == 0 ? v->dict[(k - ni) / 2].first.get()
                                           : v->dict[(k - ni) / 2].second.get();
      if (!c || seen.count(c)) continue;
      if (!open.insert(c).second) return false;
      path.push_back({c, 0});
    }
    return true;
  }

 public:
  /// Ends the unpickling: empties every list, dict, set and object still alive that the result `root` (nullptr
  /// after a failure) does not reach. A pickle can fill a memoized container with itself (APPEND, SETITEM, BUILD
  /// of a memo entry), and such a reference cycle would keep every value in it alive after the last Ref is gone.
  /// A cycle the result reaches is an error (a checkpoint has none): then every container is emptied before it
  /// throws.
  void release(const Value* root) {
    std::unordered_set<const Value*> reached;
    const bool cycle = root && !acyclic(*root, reached);
    for (auto& w : mutables_)
      if (auto v = w.lock(); v && (cycle || !reached.count(v.get()))) {
        v->items.clear();
        v->dict.clear();
      }
    mutables_.clear();
    if (cycle) fail("a container holds itself (a reference cycle); a checkpoint has none");
  }

 private:
  std::vector<std::weak_ptr<Value>> mutables_;  // every list, dict, set and object made, for release()
  std::string_view d_;
  const std::string& what_;
  const PersistentLoad& pl_;
  Limits lim_;
  size_t pos_ = 0;
  int64_t values_ = 0;
  std::vector<Ref> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Ref> memo_;
};

}  // namespace

Ref unpickle(std::string_view data, const std::string& what, const PersistentLoad& persistent_load,
             const Limits& limits) {
  Machine m(data, what, persistent_load, limits);
  Ref root;
  try {
    root = m.run();
  } catch (...) {
    m.release(nullptr);
    throw;
  }
  m.release(root.get());
  return root;
}

at::ScalarType storage_dtype(const std::string& cls) {
  auto it = storage_types().find(cls);
  if (it == storage_types().end()) throw std::runtime_error("unknown storage class '" + cls + "'");
  return it->second;
}

}  // namespace yolo11::io::pickle
