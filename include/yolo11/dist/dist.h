#pragma once
// dist: data-parallel training across processes, launched torchrun-style (docs/dist.md). Every process reads its
// rank from the environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), joins one c10d process
// group (Gloo for CPU tensors, NCCL for CUDA tensors) through a TCPStore on MASTER_ADDR:MASTER_PORT, and from then
// on every rank runs the same steps on its own shard of the data. A world of 1 (no variables set) makes every
// call here a no-op: no store, no group, no copies. No c10d header leaks from here; the LibTorch 1.13 vs 2.x
// difference of c10d lives in one block of src/dist/dist.cpp.
#include <ATen/Tensor.h>
#include <c10/core/Device.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}

namespace yolo11::dist {

/// Where this process sits in the job, as torchrun exports it.
struct Env {
  int rank = 0;             ///< RANK: global rank in [0, world)
  int world = 1;            ///< WORLD_SIZE: number of processes
  int local_rank = 0;       ///< LOCAL_RANK: rank on this machine (selects the CUDA device)
  std::string master_addr = "127.0.0.1";  ///< MASTER_ADDR: host of rank 0's TCPStore
  int master_port = 29500;  ///< MASTER_PORT: port of that store
  int local_world = 1;      ///< LOCAL_WORLD_SIZE: processes on this machine (default: WORLD_SIZE)
  int node_rank = 0;        ///< NODE_RANK (torchrun's GROUP_RANK): this machine's index in a multi-node job
  /// TORCHELASTIC_USE_AGENT_STORE=True (torchrun): the launcher's agent already serves the TCPStore at
  /// MASTER_ADDR:MASTER_PORT, so every rank, rank 0 included, connects to it as a client (keys under a prefix
  /// with TORCHELASTIC_RESTART_COUNT, as torch.distributed does).
  bool agent_store = false;
  int restart_count = 0;    ///< TORCHELASTIC_RESTART_COUNT
  bool distributed() const { return world > 1; }
  bool is_main() const { return rank == 0; }
};

/// Parses the torchrun variables through `get` (returns nullptr for an unset name; tests pass a map). WORLD_SIZE
/// unset → world 1 (RANK/LOCAL_RANK must then be unset or 0). Multi-node launchers that give no RANK: RANK =
/// NODE_RANK (or GROUP_RANK) × LOCAL_WORLD_SIZE + LOCAL_RANK (SLURM's variables are not read on their own: an
/// sbatch script sets them for a single process too; docs/dist.md maps them). Throws std::runtime_error naming
/// the variable for a non-integer value, WORLD_SIZE < 1, RANK ∉ [0, WORLD_SIZE), LOCAL_RANK ∉ [0,
/// LOCAL_WORLD_SIZE), RANK set without WORLD_SIZE, WORLD_SIZE > 1 without RANK, or MASTER_PORT ∉ [1, 65535].
Env parse_env(const std::function<const char*(const char*)>& get);
/// parse_env over the process environment (std::getenv).
Env from_env();

/// True when this build has the Gloo backend (YOLO11_HAS_GLOO) / the NCCL backend (YOLO11_HAS_NCCL).
bool gloo_available();
bool nccl_available();

/// A collective started by an async call: wait() blocks until it is done and throws as the blocking calls do
/// (naming the collective and the lost rank). Waiting twice is a no-op; destroying an unwaited one does not wait.
class PendingWork {
 public:
  PendingWork() = default;
  explicit PendingWork(std::function<void()> wait) : wait_(std::move(wait)) {}
  void wait() {
    if (!wait_) return;
    auto w = std::move(wait_);
    wait_ = nullptr;
    w();
  }
  bool pending() const { return static_cast<bool>(wait_); }

 private:
  std::function<void()> wait_;
};

/// Throws std::runtime_error when `t` is not on `group_device`: a collective of an NCCL group needs tensors on that
/// rank's CUDA device, a Gloo group here takes CPU tensors. `what` names the collective. Every collective of
/// ProcessGroup checks its tensors with this before they reach the backend.
void check_collective_device(const std::string& what, const at::Tensor& t, const c10::Device& group_device);

struct GroupOptions {
  std::string backend = "auto";  ///< "auto" (NCCL for a CUDA device when built in, else Gloo), "gloo" or "nccl"
  /// The device every collective's tensors live on: the run's core::DevicePlan device (a CUDA device selects NCCL
  /// under "auto"; Gloo is wired for CPU tensors only).
  c10::Device device{c10::kCPU};
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};  ///< store connect + every collective
  int64_t bucket_bytes = 25 << 20;  ///< gradient / parameter bucket size (PyTorch DDP's default 25 MiB)
};

/// One process group for the life of a training run (RAII: the group and its TCPStore close on destruction).
/// Default-constructed, or built from a world-1 Env, it is inactive and every collective returns at once.
/// Every tensor a collective receives must live on device() (check_collective_device; a clear error otherwise):
/// tensors of the model are there already, and everything else goes through options() or the host-value calls.
class ProcessGroup {
 public:
  ProcessGroup();
  /// Joins the group: rank 0 serves the TCPStore at master_addr:master_port and waits for the other ranks.
  /// Throws std::runtime_error when world > 1 but the build lacks the backend, or when the store cannot be
  /// reached within `timeout`.
  ProcessGroup(const Env& env, GroupOptions opt = {});
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;
  ProcessGroup(ProcessGroup&&) noexcept;
  ProcessGroup& operator=(ProcessGroup&&) noexcept;

  bool active() const { return world_ > 1; }
  int rank() const { return rank_; }
  int world() const { return world_; }
  const std::string& backend() const { return backend_; }
  /// The device of this group's tensors (GroupOptions::device; CPU when inactive).
  const c10::Device& device() const { return device_; }
  /// Options for a tensor of `dtype` on device(): the one way trainer code makes a tensor it hands to a collective.
  at::TensorOptions options(c10::ScalarType dtype) const;

  /// Host values through the group (made on device() by options(), read back to the host): the collectives of small
  /// scalars the trainer issues (losses, flags, the straggler matrix, weight hashes). `what` names it in errors.
  /// Inactive group: the input itself.
  std::vector<double> all_reduce_sum(const std::vector<double>& v, const std::string& what);
  std::vector<double> all_reduce_max(const std::vector<double>& v, const std::string& what);
  std::vector<int64_t> all_reduce_max(const std::vector<int64_t>& v, const std::string& what);
  /// Rank `root`'s value of `flag` on every rank.
  bool broadcast_flag(bool flag, int root, const std::string& what);

  /// Overwrites every parameter AND buffer of `module` with rank `root`'s values (bucketed broadcasts), so all
  /// ranks start identical. Call on every rank with the same module structure.
  void broadcast_parameters(torch::nn::Module& module, int root = 0);
  /// Overwrites the buffers (BatchNorm running statistics, counters) of `module` with rank `root`'s: PyTorch DDP's
  /// broadcast_buffers, which keeps replicas identical although each rank's forward updates them on its own batch.
  void broadcast_buffers(torch::nn::Module& module, int root = 0);
  /// Broadcasts `tensors` in place from `root` (bucketed by dtype and device); `what` names it in errors.
  void broadcast(const std::vector<at::Tensor>& tensors, int root = 0, const std::string& what = "broadcast");

  /// Reduces the gradients of `params` across ranks in place: flattened into buckets of ≤ bucket_bytes (one per
  /// dtype/device run), one all_reduce(SUM) per bucket, copied back; `average` divides by world (DDP semantics).
  /// Parameters with requires_grad == false are skipped; a trainable parameter without a gradient gets a zero
  /// gradient first, so every rank reduces the same buckets. Returns the number of buckets (0 when inactive).
  int64_t all_reduce_gradients(const std::vector<at::Tensor>& params, bool average = true);

  /// Starts an in-place SUM all-reduce of the contiguous tensor `t` and returns at once (the backend's worker threads
  /// run it); `what` names it in errors. For communication overlapped with compute (GradReducer). Inactive group:
  /// nothing to wait for.
  PendingWork all_reduce_sum_async(const at::Tensor& t, const std::string& what);

  /// Mean of `t` over ranks (a new tensor; `t` itself when inactive). For logged losses and metrics.
  at::Tensor all_reduce_mean(const at::Tensor& t, const std::string& what = "all_reduce(mean)");
  /// Element-wise sum / max of `t` over ranks, in place; `what` names it in errors.
  void all_reduce_sum_(at::Tensor& t, const std::string& what = "all_reduce(SUM)");
  void all_reduce_max_(at::Tensor& t, const std::string& what = "all_reduce(MAX)");
  /// Blocks until every rank has reached it.
  void barrier();

 private:
  /// check_collective_device(what, t, device()) (and the test hook's log line).
  void check(const std::string& what, const at::Tensor& t) const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rank_ = 0, world_ = 1;
  std::string backend_ = "none";
  c10::Device device_{c10::kCPU};
  int64_t bucket_bytes_ = 25 << 20;
};

/// 64-bit FNV-1a hash over the bytes of every parameter and buffer of `module`, in registration order (values
/// copied to the host in logical order, so the memory format does not matter). Equal on two ranks ⇔ bitwise equal
/// weights (up to hash collisions).
uint64_t weights_hash(torch::nn::Module& module);

}  // namespace yolo11::dist
