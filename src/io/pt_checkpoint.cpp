#include "yolo11/io/pt_checkpoint.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>

#include "yolo11/io/pickle.h"

namespace yolo11::io {

namespace {

using PValue = pickle::Value;
using PKind = pickle::Value::Kind;

// The stored (uncompressed) entries of a zip archive, read from its central directory.
class PtZip {
 public:
  explicit PtZip(const std::string& path) : path_(path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open");
    bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    index();
  }
  bool has(const std::string& name) const { return entries_.count(name) > 0; }
  /// The entry's bytes (a view into the file). Throws naming the entry when missing or compressed.
  std::string_view entry(const std::string& name) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) fail("no entry '" + name + "'");
    if (it->second.method != 0) fail("entry '" + name + "' is compressed (torch.save stores entries uncompressed)");
    return std::string_view(bytes_).substr(it->second.offset, it->second.size);
  }
  uint64_t size_of(const std::string& name) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) fail("no entry '" + name + "'");
    return it->second.size;
  }
  const std::vector<std::string>& names() const { return order_; }
  [[noreturn]] void fail(const std::string& msg) const { throw std::runtime_error(path_ + ": " + msg); }

 private:
  struct Entry {
    uint64_t offset = 0, size = 0;
    uint16_t method = 0;
  };
  uint64_t le(uint64_t at, int n) const {
    if (at > bytes_.size() || static_cast<uint64_t>(n) > bytes_.size() - at) fail("truncated zip (not a complete .pt)");
    uint64_t u = 0;
    for (int k = n - 1; k >= 0; --k) u = (u << 8) | static_cast<unsigned char>(bytes_[at + static_cast<uint64_t>(k)]);
    return u;
  }
  void index() {
    const uint64_t n = bytes_.size();
    if (n < 22) fail("truncated zip (not a complete .pt)");
    uint64_t eocd = UINT64_MAX;
    for (uint64_t p = n - 22 + 1; p-- > 0 && n - p <= 22 + 65535;)
      if (le(p, 4) == 0x06054b50) { eocd = p; break; }
    if (eocd == UINT64_MAX) fail("no zip end-of-central-directory record (truncated or not a .pt zip)");
    uint64_t count = le(eocd + 10, 2), cd_size = le(eocd + 12, 4), cd = le(eocd + 16, 4);
    const bool zip64 = count == 0xFFFF || cd == 0xFFFFFFFF || cd_size == 0xFFFFFFFF;
    if (zip64 && eocd >= 20 && le(eocd - 20, 4) == 0x07064b50) {
      const uint64_t z = le(eocd - 20 + 8, 8);
      if (le(z, 4) != 0x06064b50) fail("bad zip64 end-of-central-directory record");
      count = le(z + 32, 8), cd_size = le(z + 40, 8), cd = le(z + 48, 8);
    }
    if (cd > n || cd_size > n - cd) fail("zip central directory outside the file (truncated?)");
    uint64_t p = cd;
    for (uint64_t k = 0; k < count; ++k) {
      if (le(p, 4) != 0x02014b50) fail("corrupt zip central directory");
      Entry e;
      e.method = static_cast<uint16_t>(le(p + 10, 2));
      uint64_t csize = le(p + 20, 4), usize = le(p + 24, 4), local = le(p + 42, 4);
      const uint64_t nlen = le(p + 28, 2), xlen = le(p + 30, 2), clen = le(p + 32, 2);
      if (p + 46 + nlen + xlen > n) fail("truncated zip central directory");
      std::string name = bytes_.substr(p + 46, nlen);
      for (uint64_t x = p + 46 + nlen; x + 4 <= p + 46 + nlen + xlen;) {  // zip64 extra field
        const uint64_t id = le(x, 2), len = le(x + 2, 2);
        if (id == 0x0001) {
          uint64_t q = x + 4;
          if (usize == 0xFFFFFFFF) usize = le(q, 8), q += 8;
          if (csize == 0xFFFFFFFF) csize = le(q, 8), q += 8;
          if (local == 0xFFFFFFFF) local = le(q, 8);
        }
        x += 4 + len;
      }
      if (le(local, 4) != 0x04034b50) fail("bad local header of '" + name + "' (truncated zip?)");
      e.offset = local + 30 + le(local + 26, 2) + le(local + 28, 2);
      e.size = e.method == 0 ? usize : csize;
      if (e.offset > n || e.size > n - e.offset) fail("entry '" + name + "' reaches past the end (truncated zip)");
      order_.push_back(name);
      entries_[name] = e;
      p += 46 + nlen + xlen + clen;
    }
  }
  std::string path_;
  std::string bytes_;
  std::map<std::string, Entry> entries_;
  std::vector<std::string> order_;
};

nlohmann::json pt_to_json(const PValue& v, int depth = 0) {
  if (depth > 100) throw std::runtime_error("value nested too deeply for JSON");
  switch (v.kind) {
    case PKind::None: return nullptr;
    case PKind::Bool: return v.b;
    case PKind::Int: return v.i;
    case PKind::Float: return v.f;
    case PKind::Str: return v.s;
    case PKind::Bytes: return "<" + std::to_string(v.s.size()) + " bytes>";
    case PKind::Global: return v.s;
    case PKind::Storage: return "<storage>";
    case PKind::Tuple: case PKind::List: case PKind::Set: {
      auto a = nlohmann::json::array();
      for (const auto& x : v.items) a.push_back(pt_to_json(*x, depth + 1));
      return a;
    }
    case PKind::Dict: case PKind::Object: {
      auto o = nlohmann::json::object();
      if (v.is(PKind::Object) && !v.s.empty() && v.dict.empty()) return "<" + v.s + ">";
      for (const auto& [k, x] : v.dict) {
        const std::string key = k->is(PKind::Str) ? k->s : k->is(PKind::Int) ? std::to_string(k->i) : "<key>";
        o[key] = pt_to_json(*x, depth + 1);
      }
      return o;
    }
    case PKind::Tensor: {
      if (v.tensor.numel() > 64) return "<tensor>";
      auto t = v.tensor.to(at::kDouble).contiguous();
      return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
    }
  }
  return nullptr;
}

// torch's Module.state_dict order: own parameters, persistent buffers, then each child under "<name>.".
void pt_walk(const PValue& m, const std::string& prefix, std::vector<std::pair<std::string, at::Tensor>>& out,
             int depth) {
  if (depth > 64) throw std::runtime_error("modules nested too deeply");
  std::vector<std::string> non_persistent;
  if (const PValue* s = m.get("_non_persistent_buffers_set"); s && (s->is(PKind::Set) || s->is(PKind::List)))
    for (const auto& x : s->items)
      if (x->is(PKind::Str)) non_persistent.push_back(x->s);
  for (const char* field : {"_parameters", "_buffers"}) {
    const PValue* d = m.get(field);
    if (!d) continue;
    if (!d->is(PKind::Dict)) throw std::runtime_error(m.s + "." + field + " is not a dict");
    for (const auto& [k, t] : d->dict) {
      if (!k->is(PKind::Str) || t->is(PKind::None)) continue;
      const bool buffer = std::string(field) == "_buffers";
      if (buffer && std::find(non_persistent.begin(), non_persistent.end(), k->s) != non_persistent.end()) continue;
      if (!t->is(PKind::Tensor)) throw std::runtime_error(prefix + k->s + " is not a tensor");
      at::Tensor x = t->tensor;
      if (x.is_floating_point() && x.scalar_type() != at::kFloat) x = x.to(at::kFloat);
      out.emplace_back(prefix + k->s, x.contiguous());
    }
  }
  if (const PValue* mods = m.get("_modules"); mods && mods->is(PKind::Dict))
    for (const auto& [k, c] : mods->dict) {
      if (!k->is(PKind::Str) || c->is(PKind::None)) continue;
      if (!c->is(PKind::Object)) throw std::runtime_error("module " + prefix + k->s + " is not an object");
      pt_walk(*c, prefix + k->s + ".", out, depth + 1);
    }
}

const PValue* pt_child(const PValue& m, const std::string& name) {
  const PValue* mods = m.get("_modules");
  return mods ? mods->get(name) : nullptr;
}

}  // namespace

bool is_pt_path(const std::string& path) {
  auto ends = [&](const char* e) {
    const size_t n = std::strlen(e);
    return path.size() >= n && path.compare(path.size() - n, n, e) == 0;
  };
  return ends(".pt") || ends(".pth");
}

namespace {

/// The checkpoint's pickle, its storages read from `zip` (copied: the result does not refer to the zip).
pickle::Ref unpickle_pt(const PtZip& zip, const std::string& path) {
  std::string prefix;
  for (const auto& n : zip.names())
    if (n.size() >= 8 && n.compare(n.size() - 8, 8, "data.pkl") == 0 && n.find('/') == n.size() - 9) {
      prefix = n.substr(0, n.size() - 8);
      break;
    }
  if (prefix.empty()) zip.fail("no <name>/data.pkl entry: not a torch.save checkpoint");
  if (zip.has(prefix + "byteorder") && zip.entry(prefix + "byteorder") != "little")
    zip.fail("big-endian storages are not supported");

  std::map<std::string, pickle::Ref> storages;
  auto load = [&](const PValue& pid) -> pickle::Ref {
    const auto& id = pid.items;
    if (!pid.is(PKind::Tuple) || id.size() < 5 || !id[0]->is(PKind::Str) || id[0]->s != "storage" ||
        !id[1]->is(PKind::Global) || !id[2]->is(PKind::Str) || !id[4]->is(PKind::Int))
      zip.fail("persistent id is not ('storage', <class>, key, location, numel)");
    const std::string& key = pid.items[2]->s;
    if (auto it = storages.find(key); it != storages.end()) return it->second;
    at::ScalarType dtype = at::kByte;
    try {
      dtype = pickle::storage_dtype(pid.items[1]->s);
    } catch (const std::runtime_error& e) {
      zip.fail(std::string(e.what()) + " in a persistent id (not a torch storage)");
    }
    const std::string entry = prefix + "data/" + key;
    const uint64_t have = zip.size_of(entry), elem = c10::elementSize(dtype);
    const int64_t numel = pid.items[4]->i;
    if (numel < 0 || static_cast<uint64_t>(numel) > have / elem)
      zip.fail("storage '" + entry + "' holds " + std::to_string(have) + " bytes, fewer than its " +
               std::to_string(numel) + " " + std::string(c10::toString(dtype)) + " elements");
    const auto bytes = zip.entry(entry);
    auto v = std::make_shared<PValue>();
    v->kind = PKind::Storage;
    v->dtype = dtype;
    v->tensor = at::empty({numel * static_cast<int64_t>(elem)}, at::kByte);
    if (numel > 0) std::memcpy(v->tensor.data_ptr(), bytes.data(), static_cast<size_t>(numel) * elem);
    storages[key] = v;
    return v;
  };
  return pickle::unpickle(zip.entry(prefix + "data.pkl"), path + ":" + prefix + "data.pkl", load);
}

}  // namespace

pickle::Ref read_pt_pickle(const std::string& path) {
  const PtZip zip(path);
  return unpickle_pt(zip, path);
}

PtCheckpoint read_pt_checkpoint(const std::string& path) {
  const PtZip zip(path);
  const pickle::Ref root = unpickle_pt(zip, path);
  PtCheckpoint ck;
  if (!root->is(PKind::Dict)) zip.fail("the pickle is not a checkpoint dict (no 'model')");
  const PValue* model = root->get("ema");
  ck.source = "ema";
  if (!model || model->is(PKind::None)) model = root->get("model"), ck.source = "model";
  if (!model || model->is(PKind::None)) zip.fail("the checkpoint has neither 'ema' nor 'model'");
  if (!model->is(PKind::Object)) zip.fail("'" + ck.source + "' is not a model object");
  ck.model_class = model->s;
  if (model->s != "ultralytics.nn.tasks.DetectionModel")
    zip.fail("'" + ck.source + "' is a " + model->s +
             ", not a YOLO detection model (ultralytics.nn.tasks.DetectionModel)");
  const PValue* seq = pt_child(*model, "model");
  const PValue* last = nullptr;
  const PValue* sppf = nullptr;
  if (seq)
    if (const PValue* mods = seq->get("_modules"); mods && mods->is(PKind::Dict))
      for (const auto& [k, c] : mods->dict) {
        last = c.get();
        if (c->is(PKind::Object) && c->s == "ultralytics.nn.modules.block.SPPF") sppf = c.get();
      }
  if (!last || !last->is(PKind::Object) || last->s != "ultralytics.nn.modules.head.Detect")
    zip.fail("the model's last layer is " + std::string(last && last->is(PKind::Object) ? last->s : "missing") +
             ", not an ultralytics Detect head");

  try {
    pt_walk(*model, "", ck.state_dict, 0);
  } catch (const std::exception& e) {
    zip.fail(std::string("state_dict: ") + e.what());
  }
  if (const PValue* y = model->get("yaml"); y && y->is(PKind::Dict)) ck.yaml = pt_to_json(*y);
  else ck.yaml = nlohmann::json::object();
  if (ck.yaml.contains("scale") && ck.yaml["scale"].is_string()) ck.scale = ck.yaml["scale"].get<std::string>();
  bool sppf_act = true;
  if (sppf) {
    const PValue* cv1 = pt_child(*sppf, "cv1");
    const PValue* act = cv1 ? pt_child(*cv1, "act") : nullptr;
    if (!act || !act->is(PKind::Object)) zip.fail("SPPF.cv1 has no act module");
    if (act->s == "torch.nn.modules.linear.Identity") sppf_act = false;
    else if (act->s != "torch.nn.modules.activation.SiLU")
      zip.fail("SPPF.cv1.act is " + act->s + " (SiLU or Identity expected)");
  }
  ck.yaml["sppf_act"] = sppf_act;
  if (const PValue* s = model->get("stride"); s && s->is(PKind::Tensor)) {
    auto t = s->tensor.to(at::kDouble).contiguous();
    ck.stride.assign(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
  }
  if (const PValue* nc = model->get("nc"); nc && nc->is(PKind::Int)) ck.nc = nc->i;
  if (const PValue* names = model->get("names")) {
    if (names->is(PKind::Dict)) {
      std::map<int64_t, std::string> m;
      for (const auto& [k, v] : names->dict)
        if (k->is(PKind::Int) && v->is(PKind::Str)) m[k->i] = v->s;
      if (ck.nc == 0) ck.nc = static_cast<int64_t>(m.size());
      for (int64_t c = 0; c < ck.nc; ++c) ck.names.push_back(m.count(c) ? m[c] : std::to_string(c));
    } else if (names->is(PKind::List)) {
      for (const auto& v : names->items) ck.names.push_back(v->is(PKind::Str) ? v->s : std::string("?"));
      if (ck.nc == 0) ck.nc = static_cast<int64_t>(ck.names.size());
    }
  }
  if (ck.nc <= 0) zip.fail("the model has no class count (nc)");
  while (static_cast<int64_t>(ck.names.size()) < ck.nc) ck.names.push_back(std::to_string(ck.names.size()));
  ck.names.resize(static_cast<size_t>(ck.nc));
  if (const PValue* a = root->get("train_args"); a && !a->is(PKind::None)) ck.train_args = pt_to_json(*a);
  return ck;
}

}  // namespace yolo11::io
