// dist: torchrun environment, c10d process group, bucketed collectives (include/yolo11/dist/dist.h).
#include "yolo11/dist/dist.h"

#include <torch/nn/module.h>
#include <torch/version.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <cstdlib>
#include <optional>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

// ---- c10d compat: the ONE place that sees the LibTorch 1.13 vs 2.x c10d difference (core/compat.h keeps the
// others). 1.13: ProcessGroupGloo / ProcessGroupNCCL derive from c10d::ProcessGroup. 2.x: they derive from
// c10d::Backend (a ProcessGroup wraps one Backend per device type). We never need the wrapper: the collectives
// used here (allreduce, broadcast, barrier) have the same signatures on both classes, so we hold the backend
// object itself through `Handle`. The 2.x branch is not compiled in this project's CI (Debian ships 1.13).
#if defined(YOLO11_HAS_GLOO) || defined(YOLO11_HAS_NCCL)
#define YOLO11_HAS_C10D 1
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif
#ifdef YOLO11_HAS_GLOO
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1  // the header's own guard (LibTorch's build defines it; a consumer must)
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef YOLO11_HAS_NCCL
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL 1
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
namespace yolo11::dist::c10d_compat {
#if TORCH_VERSION_MAJOR >= 2
using Handle = c10::intrusive_ptr<c10d::Backend>;
#else
using Handle = c10::intrusive_ptr<c10d::ProcessGroup>;
#endif
}  // namespace yolo11::dist::c10d_compat
#endif

namespace yolo11::dist {

// ---- environment ------------------------------------------------------------------------------------------------

namespace {

/// Integer value of variable `name` (nullopt when unset or empty); throws naming the variable when malformed.
std::optional<long long> int_var(const std::function<const char*(const char*)>& get, const char* name) {
  const char* v = get(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0')
    throw std::runtime_error(std::string("dist: environment variable ") + name + "='" + v +
                             "' is not an integer (torchrun-style launch: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_PORT "
                             "are integers; docs/dist.md)");
  return x;
}

}  // namespace

Env parse_env(const std::function<const char*(const char*)>& get) {
  Env e;
  const auto first_of = [&](std::initializer_list<const char*> names) -> std::optional<int64_t> {
    for (const char* n : names)
      if (auto v = int_var(get, n)) return v;
    return std::nullopt;
  };
  const auto world = int_var(get, "WORLD_SIZE");
  const auto local = int_var(get, "LOCAL_RANK");
  const auto local_world = int_var(get, "LOCAL_WORLD_SIZE");
  const auto node = first_of({"NODE_RANK", "GROUP_RANK"});
  auto rank = int_var(get, "RANK");
  if (!rank && node && local && local_world) rank = *node * *local_world + *local;  // multi-node, no RANK given
  const auto port = int_var(get, "MASTER_PORT");
  if (world && *world < 1)
    throw std::runtime_error("dist: WORLD_SIZE=" + std::to_string(*world) + " must be >= 1");
  if (world && *world > 1 && !rank)
    throw std::runtime_error("dist: WORLD_SIZE=" + std::to_string(*world) +
                             " but RANK is unset; set RANK (0..WORLD_SIZE-1) for every process, or launch with "
                             "tools/launch_dist.sh / torchrun");
  if (!world && rank && *rank != 0)
    throw std::runtime_error("dist: RANK=" + std::to_string(*rank) +
                             " but WORLD_SIZE is unset; set WORLD_SIZE to the number of processes");
  e.world = world ? static_cast<int>(*world) : 1;
  e.rank = rank ? static_cast<int>(*rank) : 0;
  e.local_rank = local ? static_cast<int>(*local) : e.rank;
  e.local_world = local_world ? static_cast<int>(*local_world) : e.world;
  e.node_rank = node ? static_cast<int>(*node) : 0;
  if (e.rank < 0 || e.rank >= e.world)
    throw std::runtime_error("dist: RANK=" + std::to_string(e.rank) + " is not in [0, WORLD_SIZE=" +
                             std::to_string(e.world) + ")");
  if (e.local_world < 1 || e.local_world > e.world)
    throw std::runtime_error("dist: LOCAL_WORLD_SIZE=" + std::to_string(e.local_world) + " is not in [1, WORLD_SIZE=" +
                             std::to_string(e.world) + "]");
  if (e.local_rank < 0 || e.local_rank >= e.local_world)
    throw std::runtime_error("dist: LOCAL_RANK=" + std::to_string(e.local_rank) + " is not in [0, " +
                             (local_world ? "LOCAL_WORLD_SIZE=" : "WORLD_SIZE=") + std::to_string(e.local_world) + ")");
  if (const char* a = get("TORCHELASTIC_USE_AGENT_STORE"); a != nullptr && std::string(a) == "True") e.agent_store = true;
  if (const auto rc = int_var(get, "TORCHELASTIC_RESTART_COUNT")) e.restart_count = static_cast<int>(*rc);
  if (port) {
    if (*port < 1 || *port > 65535)
      throw std::runtime_error("dist: MASTER_PORT=" + std::to_string(*port) + " is not a port (1..65535)");
    e.master_port = static_cast<int>(*port);
  }
  if (const char* a = get("MASTER_ADDR"); a != nullptr && *a != '\0') e.master_addr = a;
  return e;
}

Env from_env() {
  return parse_env([](const char* n) -> const char* { return std::getenv(n); });
}

bool gloo_available() {
#ifdef YOLO11_HAS_GLOO
  return true;
#else
  return false;
#endif
}

bool nccl_available() {
#ifdef YOLO11_HAS_NCCL
  return true;
#else
  return false;
#endif
}

// ---- the group's device -------------------------------------------------------------------------------------------

void check_collective_device(const std::string& what, const at::Tensor& t, const c10::Device& group_device) {
  if (t.device() == group_device) return;
  throw std::runtime_error("dist: " + what + " got a tensor on " + t.device().str() +
                           ", but this process group works on " + group_device.str() + (group_device.is_cuda() ? " (NCCL takes CUDA tensors only)" : "") +
                           ": make the tensor with ProcessGroup::options() or pass host values "
                           "(ProcessGroup::all_reduce_sum / all_reduce_max / broadcast_flag)");
}

namespace {

/// Test hook (never set in production): YOLO11_TEST_COLLECTIVE_LOG=PATH appends one line per collective tensor,
/// "rank<TAB>what<TAB>device<TAB>group device<TAB>dtype<TAB>numel", so a test can check every collective a whole
/// training run issues (tests/dist/test_dist_train.cpp).
void log_collective(int rank, const std::string& what, const at::Tensor& t, const c10::Device& group_device) {
  static const char* path = std::getenv("YOLO11_TEST_COLLECTIVE_LOG");
  if (path == nullptr || *path == '\0') return;
  static std::mutex mu;
  std::lock_guard<std::mutex> lk(mu);
  if (FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%d\t%s\t%s\t%s\t%s\t%lld\n", rank, what.c_str(), t.device().str().c_str(),
                 group_device.str().c_str(), c10::toString(t.scalar_type()), static_cast<long long>(t.numel()));
    std::fclose(f);
  }
}

}  // namespace

// ---- process group ------------------------------------------------------------------------------------------------

// ---- lost peers ---------------------------------------------------------------------------------------------------
// Every rank writes a heartbeat ("yolo11/hb/<rank>" = wall-clock ms) into the TCPStore every kBeat from a thread of
// its own. When a collective fails (Gloo: the dead peer's connection closed; NCCL or a hung peer: the timeout), the
// survivor reads the heartbeats and names the ranks that stopped beating; a store that no longer answers means
// rank 0 (its server) is gone. The error then says which rank was lost and in which collective.

namespace {

constexpr auto kBeat = std::chrono::milliseconds(500);
constexpr auto kStale = std::chrono::milliseconds(2000);  // 4 missed beats: that rank is gone or frozen

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string heartbeat_key(int rank) { return "yolo11/hb/" + std::to_string(rank); }

}  // namespace

struct ProcessGroup::Impl {
#ifdef YOLO11_HAS_C10D
  c10::intrusive_ptr<c10d::Store> store;
  bool agent_store = false;  // torchrun's agent serves the store (not rank 0)
  c10d_compat::Handle pg;
  bool nccl = false;
  std::chrono::milliseconds timeout{};
  int rank = 0, world = 1;
  std::string store_addr;  // "host:port", for the messages

  std::thread beat;
  std::mutex beat_mu;
  std::condition_variable beat_cv;
  bool beat_stop = false;

  ~Impl() {
    shutdown_backend();
    stop_heartbeat();
  }

  /// NCCL: shut the communicators down before the backend object goes (LibTorch 2.x warns at exit otherwise and a
  /// destructor that aborts communicators still in use can hang); Gloo needs nothing.
  void shutdown_backend() {
#if defined(YOLO11_HAS_NCCL) && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2))
    if (nccl && pg) {
      try {
        if (auto* n = dynamic_cast<c10d::ProcessGroupNCCL*>(pg.get())) n->shutdown();
      } catch (const std::exception& ex) {
        std::fprintf(stderr, "dist: NCCL shutdown failed: %s\n", ex.what());
      }
    }
#endif
  }

  void start_heartbeat() {
    publish_heartbeat();  // before the group forms: a peer that dies during set-up is already on record
    beat = std::thread([this] {
      std::unique_lock<std::mutex> lk(beat_mu);
      while (!beat_cv.wait_for(lk, kBeat, [this] { return beat_stop; })) {
        lk.unlock();
        const bool ok = publish_heartbeat();
        lk.lock();
        if (!ok) return;  // the store is gone (rank 0 ended or died): the next collective will say so
      }
    });
  }
  void stop_heartbeat() {
    {
      std::lock_guard<std::mutex> lk(beat_mu);
      beat_stop = true;
    }
    beat_cv.notify_all();
    if (beat.joinable()) beat.join();
  }
  bool publish_heartbeat() {
    try {
      const std::string v = std::to_string(wall_ms());
      store->set(heartbeat_key(rank), std::vector<uint8_t>(v.begin(), v.end()));
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }

  /// Which peers were lost: the ranks whose heartbeat is older than kStale (polled for up to 2 × kStale, since
  /// a peer that just died still has a fresh beat), or rank 0 when the store no longer answers.
  std::string lost_peers() {
    const auto deadline = std::chrono::steady_clock::now() + 2 * kStale;
    try {
      store->setTimeout(std::chrono::seconds(5));
      for (;;) {
        std::string lost;
        const int64_t now = wall_ms();
        for (int r = 0; r < world; ++r) {
          if (r == rank) continue;
          std::string why;
          if (!store->check({heartbeat_key(r)})) {
            why = "never sent a heartbeat";
          } else {
            const auto v = store->get(heartbeat_key(r));
            const int64_t age = now - std::stoll(std::string(v.begin(), v.end()));
            if (age > kStale.count()) {
              char buf[64];
              std::snprintf(buf, sizeof buf, "no heartbeat for %.1f s", static_cast<double>(age) / 1000.0);
              why = buf;
            }
          }
          if (!why.empty()) lost += (lost.empty() ? "" : ", ") + ("rank " + std::to_string(r) + " (" + why + ")");
        }
        if (!lost.empty()) return "lost " + lost;
        if (std::chrono::steady_clock::now() >= deadline)
          return "every peer still sends heartbeats (a peer may be stuck inside the collective, or the network "
                 "between the ranks failed)";
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    } catch (const std::exception&) {
      if (agent_store)
        return "lost the launcher (torchrun's agent store at " + store_addr + " no longer answers: the agent exited)";
      return "lost rank 0 (the TCPStore it serves at " + store_addr + " no longer answers: rank 0 died or exited)";
    }
  }

  /// Waits for `w`; on failure throws a std::runtime_error naming the collective, the lost rank(s) and the cause.
  void wait(const c10::intrusive_ptr<c10d::Work>& w, const std::string& what) {
    try {
      // NCCL's watchdog enforces the group's timeout on every collective; a timeout given to wait() as well turns
      // each wait into a CPU sleep-poll on the work's completion (LibTorch 2.x). Gloo enforces it in wait().
      if (nccl) w->wait();
      else w->wait(timeout);
    } catch (const std::exception& ex) {
      std::string cause = ex.what();
      if (const auto nl = cause.find('\n'); nl != std::string::npos) cause.resize(nl);  // drop c10's backtrace
      throw std::runtime_error("dist: rank " + std::to_string(rank) + " of " + std::to_string(world) + ": " +
                               what + " failed: " + lost_peers() + " (" + cause +
                               "); the job cannot continue: restart it with resume=<run dir> (dist_timeout=" +
                               std::to_string(timeout.count() / 1000) + " s)");
    }
  }
  /// In-place all_reduce of `t` with `op` (through one flat bucket per bucket_bytes).
  void all_reduce(at::Tensor& t, c10d::ReduceOp op, int64_t bucket_bytes, const std::string& what);
#endif
};

ProcessGroup::ProcessGroup() = default;
ProcessGroup::~ProcessGroup() = default;
ProcessGroup::ProcessGroup(ProcessGroup&&) noexcept = default;
ProcessGroup& ProcessGroup::operator=(ProcessGroup&&) noexcept = default;

ProcessGroup::ProcessGroup(const Env& env, GroupOptions opt) : bucket_bytes_(std::max<int64_t>(opt.bucket_bytes, 1)) {
  if (!env.distributed()) return;  // world 1: inactive, zero cost
  std::string backend = opt.backend;
  const bool cuda = opt.device.is_cuda();
  if (backend == "auto") backend = cuda && nccl_available() ? "nccl" : "gloo";
  if (backend != "gloo" && backend != "nccl")
    throw std::runtime_error("dist: backend '" + opt.backend + "' is not one of auto, gloo, nccl");
  if (backend == "gloo" && !gloo_available())
    throw std::runtime_error("dist: WORLD_SIZE=" + std::to_string(env.world) +
                             " needs the Gloo backend, which this build lacks (cmake summary 'distributed : Gloo OFF'); "
                             "install libgloo-dev and the c10d headers of your LibTorch, reconfigure, or run with "
                             "WORLD_SIZE unset");
  if (backend == "nccl" && !nccl_available())
    throw std::runtime_error("dist: WORLD_SIZE=" + std::to_string(env.world) +
                             " on CUDA needs the NCCL backend, which this build lacks (cmake summary 'distributed : "
                             "NCCL OFF'); use a CUDA LibTorch with c10d NCCL headers, or train on the CPU (Gloo)");
  if (backend == "gloo" && cuda)
    throw std::runtime_error("dist: Gloo is wired for CPU tensors only here; a CUDA run needs NCCL");
#ifdef YOLO11_HAS_C10D
  impl_ = std::make_unique<Impl>();
  impl_->timeout = opt.timeout;
  impl_->rank = env.rank;
  impl_->world = env.world;
  impl_->store_addr = env.master_addr + ":" + std::to_string(env.master_port);
  impl_->agent_store = env.agent_store;
  impl_->nccl = backend == "nccl";
  c10d::TCPStoreOptions so;
  so.port = static_cast<std::uint16_t>(env.master_port);
  so.isServer = env.rank == 0 && !env.agent_store;  // under torchrun its agent serves the store
  so.numWorkers = static_cast<std::size_t>(env.world);
  so.waitWorkers = true;
  so.timeout = opt.timeout;
  try {
    impl_->store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
    if (env.agent_store)  // the agent's own keys live in the same store: ours go under a prefix per restart
      impl_->store = c10::make_intrusive<c10d::PrefixStore>("yolo11/attempt_" + std::to_string(env.restart_count),
                                                            impl_->store);
  } catch (const std::exception& ex) {
    throw std::runtime_error("dist: rank " + std::to_string(env.rank) + " could not " +
                             (so.isServer ? "serve" : "reach") + " the TCPStore at " + env.master_addr + ":" +
                             std::to_string(env.master_port) + " (MASTER_ADDR:MASTER_PORT; port in use or rank 0 not "
                             "started?): " + ex.what());
  }
  impl_->start_heartbeat();
  if (backend == "gloo") {
#ifdef YOLO11_HAS_GLOO
    auto o = c10d::ProcessGroupGloo::Options::create(opt.timeout);
    // Loopback jobs bind to 127.0.0.1 (no network needed); GLOO_SOCKET_IFNAME picks an interface for multi-node;
    // otherwise Gloo binds to this host's resolved address as torch.distributed does.
    const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
    const bool loopback = env.master_addr == "localhost" || env.master_addr.rfind("127.", 0) == 0;
    if (ifname != nullptr && *ifname != '\0') o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    else if (loopback) o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    else o->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    o->threads = 2;
    impl_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, env.rank, env.world, o);
#endif
  } else {
#ifdef YOLO11_HAS_NCCL
    auto o = c10d::ProcessGroupNCCL::Options::create();
    o->timeout = opt.timeout;
    impl_->pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(impl_->store, env.rank, env.world, o);
#endif
  }
  rank_ = env.rank;
  world_ = env.world;
  backend_ = backend;
  device_ = opt.device;
#endif
}

at::TensorOptions ProcessGroup::options(c10::ScalarType dtype) const {
  return at::TensorOptions().dtype(dtype).device(device_);
}

namespace {
template <typename T>
std::vector<T> host_all_reduce(ProcessGroup& pg, const std::vector<T>& v, bool max, const std::string& what,
                               c10::ScalarType dtype) {
  if (!pg.active() || v.empty()) return v;
  at::Tensor t = at::tensor(c10::ArrayRef<T>(v), at::TensorOptions().dtype(dtype)).to(pg.options(dtype));
  max ? pg.all_reduce_max_(t, what) : pg.all_reduce_sum_(t, what);
  const at::Tensor h = t.to(c10::kCPU).contiguous();
  return std::vector<T>(h.data_ptr<T>(), h.data_ptr<T>() + h.numel());
}
}  // namespace

std::vector<double> ProcessGroup::all_reduce_sum(const std::vector<double>& v, const std::string& what) {
  return host_all_reduce(*this, v, false, what, c10::kDouble);
}
std::vector<double> ProcessGroup::all_reduce_max(const std::vector<double>& v, const std::string& what) {
  return host_all_reduce(*this, v, true, what, c10::kDouble);
}
std::vector<int64_t> ProcessGroup::all_reduce_max(const std::vector<int64_t>& v, const std::string& what) {
  return host_all_reduce(*this, v, true, what, c10::kLong);
}

bool ProcessGroup::broadcast_flag(bool flag, int root, const std::string& what) {
  if (!active()) return flag;
  at::Tensor t = at::full({1}, flag ? 1.0f : 0.0f, options(c10::kFloat));
  broadcast({t}, root, what);
  return t.item<float>() > 0;
}

namespace {

/// Runs `fn` on flat buffers made of `tensors`: consecutive tensors of one dtype and device are concatenated (in
/// logical element order) into buckets of at most `bucket_bytes` (a larger tensor gets a bucket of its own); after
/// `fn` mutates a bucket its values are copied back. Returns the number of buckets.
int64_t for_each_bucket(const std::vector<at::Tensor>& tensors, int64_t bucket_bytes,
                        const std::function<void(at::Tensor&)>& fn) {
  torch::NoGradGuard ng;
  int64_t n = 0;
  size_t i = 0;
  while (i < tensors.size()) {
    const auto dtype = tensors[i].scalar_type();
    const auto device = tensors[i].device();
    size_t j = i;
    int64_t bytes = 0;
    while (j < tensors.size() && tensors[j].scalar_type() == dtype && tensors[j].device() == device &&
           (j == i || bytes + static_cast<int64_t>(tensors[j].nbytes()) <= bucket_bytes)) {
      bytes += static_cast<int64_t>(tensors[j].nbytes());
      ++j;
    }
    std::vector<at::Tensor> flat;
    flat.reserve(j - i);
    for (size_t k = i; k < j; ++k) flat.push_back(tensors[k].reshape({-1}));
    at::Tensor bucket = flat.size() == 1 ? flat[0].clone() : torch::cat(flat);
    fn(bucket);
    int64_t off = 0;
    for (size_t k = i; k < j; ++k) {
      const int64_t numel = tensors[k].numel();
      tensors[k].copy_(bucket.narrow(0, off, numel).view(tensors[k].sizes()));
      off += numel;
    }
    ++n;
    i = j;
  }
  return n;
}

}  // namespace

void ProcessGroup::broadcast(const std::vector<at::Tensor>& tensors, int root, const std::string& what) {
  if (!active()) return;
  for (const auto& t : tensors) check(what, t);
#ifdef YOLO11_HAS_C10D
  c10d::BroadcastOptions bo;
  bo.rootRank = root;
  bo.timeout = impl_->timeout;
  for_each_bucket(tensors, bucket_bytes_, [&](at::Tensor& b) {
    std::vector<at::Tensor> v{b};
    impl_->wait(impl_->pg->broadcast(v, bo), what + " from rank " + std::to_string(root));
  });
#else
  (void)root;
#endif
}

void ProcessGroup::check(const std::string& what, const at::Tensor& t) const {
  log_collective(rank_, what, t, device_);
  check_collective_device(what, t, device_);
}

void ProcessGroup::broadcast_parameters(torch::nn::Module& module, int root) {
  if (!active()) return;
  std::vector<at::Tensor> ts;
  for (const auto& p : module.parameters()) ts.push_back(p);
  for (const auto& b : module.buffers()) ts.push_back(b);
  broadcast(ts, root, "broadcast of the parameters and buffers");
}

void ProcessGroup::broadcast_buffers(torch::nn::Module& module, int root) {
  if (!active()) return;
  broadcast(module.buffers(), root, "broadcast of the buffers");
}

int64_t ProcessGroup::all_reduce_gradients(const std::vector<at::Tensor>& params, bool average) {
  if (!active()) return 0;
  std::vector<at::Tensor> grads;
  grads.reserve(params.size());
  for (const auto& p : params) {
    if (!p.requires_grad()) continue;
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.grad());
  }
  for (const auto& g : grads) check("all_reduce of the gradients", g);
  int64_t n = 0;
#ifdef YOLO11_HAS_C10D
  c10d::AllreduceOptions ao;
  ao.reduceOp = c10d::ReduceOp::SUM;  // Gloo has no AVG: sum, then divide
  ao.timeout = impl_->timeout;
  const double inv = 1.0 / static_cast<double>(world_);
  n = for_each_bucket(grads, bucket_bytes_, [&](at::Tensor& b) {
    std::vector<at::Tensor> v{b};
    impl_->wait(impl_->pg->allreduce(v, ao), "all_reduce of the gradients");
    if (average) b.mul_(inv);
  });
#endif
  return n;
}

PendingWork ProcessGroup::all_reduce_sum_async(const at::Tensor& t, const std::string& what) {
  if (!active()) return {};
  check(what, t);
#ifdef YOLO11_HAS_C10D
  c10d::AllreduceOptions ao;
  ao.reduceOp = c10d::ReduceOp::SUM;
  ao.timeout = impl_->timeout;
  std::vector<at::Tensor> v{t};
  auto work = impl_->pg->allreduce(v, ao);
  Impl* impl = impl_.get();
  return PendingWork([impl, work, what] { impl->wait(work, what); });
#else
  (void)t;
  (void)what;
  return {};
#endif
}

#ifdef YOLO11_HAS_C10D
void ProcessGroup::Impl::all_reduce(at::Tensor& t, c10d::ReduceOp op, int64_t bucket_bytes, const std::string& what) {
  c10d::AllreduceOptions ao;
  ao.reduceOp = op;
  ao.timeout = timeout;
  for_each_bucket({t}, bucket_bytes, [&](at::Tensor& b) {
    std::vector<at::Tensor> v{b};
    wait(pg->allreduce(v, ao), what);
  });
}
#endif

at::Tensor ProcessGroup::all_reduce_mean(const at::Tensor& t, const std::string& what) {
  if (!active()) return t;
  at::Tensor out = t.detach().clone();
  const bool integral = !at::isFloatingType(out.scalar_type());
  if (integral) out = out.to(torch::kDouble);
  all_reduce_sum_(out, what);
  return out.div_(static_cast<double>(world_));
}

void ProcessGroup::all_reduce_sum_(at::Tensor& t, const std::string& what) {
  if (!active()) return;
  check(what, t);
#ifdef YOLO11_HAS_C10D
  impl_->all_reduce(t, c10d::ReduceOp::SUM, bucket_bytes_, what);
#endif
}

void ProcessGroup::all_reduce_max_(at::Tensor& t, const std::string& what) {
  if (!active()) return;
  check(what, t);
#ifdef YOLO11_HAS_C10D
  impl_->all_reduce(t, c10d::ReduceOp::MAX, bucket_bytes_, what);
#endif
}

void ProcessGroup::barrier() {
  if (!active()) return;
#ifdef YOLO11_HAS_C10D
  c10d::BarrierOptions bo;
  bo.timeout = impl_->timeout;
  impl_->wait(impl_->pg->barrier(bo), "barrier");
#endif
}

uint64_t weights_hash(torch::nn::Module& module) {
  torch::NoGradGuard ng;
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  auto mix = [&](const at::Tensor& t) {
    const at::Tensor c = t.detach().to(torch::kCPU).contiguous();
    const auto* p = static_cast<const unsigned char*>(c.data_ptr());
    for (size_t k = 0, n = c.nbytes(); k < n; ++k) {
      h ^= p[k];
      h *= 1099511628211ull;
    }
  };
  for (const auto& p : module.parameters()) mix(p);
  for (const auto& b : module.buffers()) mix(b);
  return h;
}

}  // namespace yolo11::dist
