#!/usr/bin/env bash
# The one device check (issues 12, 32), run ON a lent GPU machine in one call of at most 10 minutes:
#   here:   tools/device/prepare.sh                 (.device/ + datasets/coco128, coco8; prints the carry size)
#   device: run(command="tools/device/check.sh", carry=[".device", "datasets/coco128", "datasets/coco8"],
#               timeout_s=600)
# and, on any machine without a GPU (CI runs this after tools/test.sh):
#   tools/device/check.sh --dry-run [BUILD_DIR]      (or CHECK_DRY_RUN=1; BUILD_DIR default: build)
# The dry run executes every phase through the same functions with small CPU settings (device=cpu, coco8, imgsz 64,
# batch 2, 2 epochs); configure = cmake re-run on the already configured BUILD_DIR with the system packages (no
# .device needed), build = the phases' targets in it, tests = a few seconds of ctest. Exit 0 only when every phase
# passed.
#
# Phases (device settings; each is a shell function run in its own process group, killed at its limit):
#   preflight   before anything else: CUDA major of the driver (nvidia-smi) and of nvcc against torch.version.cuda,
#               the device's glibc (ldd --version) against the highest GLIBC_x.y (and libstdc++'s GLIBCXX_x.y.z)
#               the carried .device libraries require (objdump -T); tools, GPU, versions. A mismatch stops the
#               kit with a STOP line in summary.md. Dry run: CUDA check skipped; glibc checked if .device exists.
#   configure   CMake Release against the pip torch's LibTorch (torch.utils.cmake_prefix_path) + the carried .device
#   build       yolo11-train, yolo11-val, yolo11-bench-model, yolo11-bench-amp (-j$(nproc))
#   step        raw model forward+backward alone: bench/yolo11-bench-model --cuda b16 640 (fp32, NCHW vs
#               channels_last, eval fused/unfused), bench/yolo11-bench-amp --cuda b16 and b64 (fp32 vs fp16 AMP)
#   train_off   coco128 640 batch 16, 3 epochs, val=false, device=0, instrument=off     } same settings: compare the
#   train_basic the same with instrument=basic (stage timers from CUDA events)            } s/epoch (results.csv)
#   train_full  the same with instrument=full (+ NVML sampler, profile_ops in epoch 3: ops.txt with the CUDA kernels);
#               its run is resumed                                                          } = instrument overhead
#   train_sync  the same as train_full with sync=true (synchronized wall stage times: compare with train_full's
#               CUDA-event times)
#   resume      resume=<train_full's run dir> epochs=4 val=true: continues from its last checkpoint (results.csv
#               must then hold 4 epochs)
#   val         yolo11-val --weights <train_full>/weights/best.safetensors --data coco128 (mAP, speed)
#   val_cpu     the same weights validated with device=cpu: mAP50-95 within 1e-3 of val's
#   autobatch   batch=-1 (AutoBatch: the batch it picks from the probe) and one epoch at that batch without OOM
#   tests       build the core/instrument/engine test executables, ctest -LE slow on labels core|instrument and
#               engine's Amp|Checkpoint tests (needs no ../shared/golden)
# Budgets (seconds; the table is printed first, into summary.md too): each phase is killed at its own budget plus
# what earlier phases left unused, the budgets of the phases after it always kept in reserve; they add up to the
# deadline CHECK_DEADLINE_S (540 s = 9 minutes, leaving a minute of the 10-minute call for start-up and packing):
#   preflight 20, configure 40, build 160, step 30, train_off/basic/full/sync 30 each, resume 30, val 15, val_cpu 35,
#   autobatch 30, tests 50.
# After the phases: the instrument-overhead table (s/epoch against train_off) and the determinism lines (train_off,
# train_basic and train_full share one seed and deterministic=true: their results.csv must be equal but for time).
# Outputs: $OUT/summary.md (budget table, then one block per phase appended as it ends: rc, seconds, limit, the
# phase's key lines; at the end the instrument-overhead table and RESULT) and $OUT/logs.tgz (every
# <phase>.log and the runs' train.log/results.csv/summary.json/breakdown.csv, re-packed after each phase). The
# run tool brings back at most 8 files, so the logs travel packed; unpacked they are in $WORK/logs
# (WORK = BUILD_DIR/check-work). OUT defaults to BUILD_DIR/check-out. Copy the summary's figures into docs/gpu.md.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

DRY=${CHECK_DRY_RUN:-0}
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) DRY=1; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ "$DRY" = 1 ] && B=${1:-build} || B=${1:-build-device}
case $B in /*) ;; *) B=$ROOT/$B ;; esac
OUT=${OUT:-$B/check-out}
WORK=$B/check-work
LOGS=$WORK/logs
RUNS=$WORK/runs
SUM=$OUT/summary.md
DEV=$ROOT/.device/usr
MA=x86_64-linux-gnu
JOBS=${JOBS:-$(nproc)}
DEADLINE=${CHECK_DEADLINE_S:-540}
ORIG_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
CARRY_LD=$ORIG_LD_LIBRARY_PATH

PHASES=(preflight configure build step train_off train_basic train_full train_sync resume val val_cpu autobatch tests)
declare -A BUDGET=([preflight]=20 [configure]=40 [build]=160 [step]=30 [train_off]=30 [train_basic]=30
                   [train_full]=30 [train_sync]=30 [resume]=30 [val]=15 [val_cpu]=35 [autobatch]=30 [tests]=50)
declare -A WHAT=([preflight]="CUDA majors (driver, nvcc, torch), glibc/GLIBCXX of the carry, tools, GPU"
                 [configure]="CMake Release (LibTorch + .device)" [build]="train, val, model-step benches"
                 [step]="raw model fwd+bwd benches" [train_off]="train, instrument=off"
                 [train_basic]="train, instrument=basic" [train_full]="train, instrument=full"
                 [train_sync]="train, instrument=full sync=true" [resume]="resume train_full's run, +1 epoch"
                 [val]="yolo11-val of train_full's best weights"
                 [val_cpu]="the same weights validated on the CPU: mAP within 1e-3 of val's"
                 [autobatch]="batch=-1: AutoBatch's pick, one epoch at it" [tests]="test subset (ctest -LE slow)")

if [ "$DRY" = 1 ]; then
  MODE="dry run (CPU)"
  DEVICE=cpu
  DATA=configs/datasets/coco8.yaml
  TRAIN_ARGS=(--cfg configs/coco8.yaml imgsz=64 batch=2 epochs=2 workers=1 threads=2 device=cpu val=false
              plots=false log_every=1 instrument_warmup=1)
  EPOCHS=2
  PROFILE_OPS=(profile_ops=5:7)   # 4 steps per epoch
  AUTOBATCH_ARGS=(--cfg configs/coco8.yaml imgsz=64 epochs=1 workers=1 threads=2 device=cpu val=false plots=false)
  VAL_ARGS=(imgsz=64 batch=2 workers=1 device=cpu)
  VAL_CPU_ARGS=(imgsz=64 batch=2 workers=1 threads=2 device=cpu)
  BENCH_ARGS=(--imgsz 64 --iters 2 --warmup 1 --threads 2)
  BENCH_BATCHES_AMP=(2)
  TEST_TARGETS=(yolo11_test_core)
  TEST_SETS=("-L ^core$")
  NEED_DATA=(coco8)
else
  MODE="device"
  DEVICE=0
  DATA=configs/datasets/coco128.yaml
  TRAIN_ARGS=(--cfg configs/coco128.yaml imgsz=640 batch=16 epochs=3 workers=12 device=0 val=false plots=false
              log_every=4)
  EPOCHS=3
  PROFILE_OPS=(profile_ops=18:21)   # epoch 3 of 8 steps: the operator table with the CUDA kernels (Kineto)
  AUTOBATCH_ARGS=(--cfg configs/coco128.yaml imgsz=640 epochs=1 workers=12 device=0 val=false plots=false)
  VAL_ARGS=(imgsz=640 batch=16 workers=8 device=0)
  VAL_CPU_ARGS=(imgsz=640 batch=16 workers=8 device=cpu)
  BENCH_ARGS=(--cuda --imgsz 640 --iters 10 --warmup 3)
  BENCH_BATCHES_AMP=(16 64)
  TEST_TARGETS=(yolo11_test_core yolo11_test_instrument yolo11_test_engine)
  TEST_SETS=("-L ^(core|instrument)$" "-L ^engine$ -R Amp|Checkpoint")
  NEED_DATA=(coco128 coco8)
  # the carried shared libraries, for the project's binaries only (carry below): the device's own compilers, cmake
  # and python3 keep the device's libz/libzstd/liblzma
  CARRY_LD=$DEV/lib/$MA${ORIG_LD_LIBRARY_PATH:+:$ORIG_LD_LIBRARY_PATH}
  export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
  command -v nvcc > /dev/null || [ ! -x /usr/local/cuda/bin/nvcc ] || export PATH=$PATH:/usr/local/cuda/bin
fi

now() { echo "${EPOCHREALTIME:-$(date +%s)}"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", b - a}'; }
py() { LD_LIBRARY_PATH=$ORIG_LD_LIBRARY_PATH python3 "$@"; }
carry() { LD_LIBRARY_PATH=$CARRY_LD "$@"; }   # carry CMD...: runs a project binary (or ctest) with the carried libraries
# note TEXT: a line for summary.md under the running phase's result (also echoed into its log)
note() { echo "$*"; echo "    $*" >> "$LOGS/$PHASE.notes"; }
# notes_from FILE REGEX [N]: the last N (default 8) lines of FILE matching REGEX as notes (none matching is fine)
notes_from() {
  { grep -E "$2" "$1" || true; } | tail -n "${3:-8}" | sed 's/^\[[^]]*\] \[[a-z]*\] //; s/^-- *//' | while read -r l; do note "$l"; done
}
vmax() { sort -V | tail -1; }
vge() { [ "$(printf '%s\n%s\n' "$1" "$2" | vmax)" = "$1" ]; }   # vge A B: version A >= version B

# ---- preflight ----------------------------------------------------------------------------------------------------
# highest version with PREFIX (GLIBC_ / GLIBCXX_) among the symbols of the carried shared libraries: "x.y file"
carry_needs() {
  local prefix=$1 f v best="" bestf=""
  for f in "$DEV/lib/$MA"/*.so*; do
    [ -f "$f" ] || continue
    if command -v objdump > /dev/null; then
      v=$(objdump -T "$f" 2>/dev/null | grep -oE "\b${prefix}[0-9]+(\.[0-9]+)+" | sed "s/^$prefix//" | vmax)
    else
      v=$(readelf -V -W "$f" 2>/dev/null | grep -oE "Name: ${prefix}[0-9]+(\.[0-9]+)+" | sed "s/^Name: $prefix//" | vmax)
    fi
    [ -n "$v" ] || continue
    if [ -z "$best" ] || ! vge "$best" "$v"; then best=$v; bestf=$(basename "$f"); fi
  done
  echo "$best $bestf"
}
check_carry_abi() {
  local need have lib ok=0
  read -r need lib <<< "$(carry_needs GLIBC_)"
  have=$(ldd --version 2>/dev/null | sed -n '1s/.* //p')
  [ -n "$have" ] || have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
  if [ -z "$need" ]; then note "glibc: FAIL: no GLIBC_ symbol versions found in $DEV/lib/$MA (objdump/readelf missing?)"; ok=1
  elif [ -z "$have" ]; then note "glibc: FAIL: the machine's glibc version is unknown (ldd --version)"; ok=1
  elif vge "$have" "$need"; then note "glibc: ok: the machine has $have, the carry needs GLIBC_$need ($lib)"
  else note "glibc: FAIL: the machine has glibc $have, the carry needs GLIBC_$need ($lib): rebuild .device on an older system"; ok=1
  fi
  local so
  read -r need lib <<< "$(carry_needs GLIBCXX_)"
  so=$(ldconfig -p 2>/dev/null | awk '$1 == "libstdc++.so.6" && /x86-64/ {print $NF; exit}')
  [ -n "$so" ] || so=$(c++ -print-file-name=libstdc++.so.6 2>/dev/null)
  have=$(objdump -T "$so" 2>/dev/null | grep -oE '\bGLIBCXX_[0-9]+(\.[0-9]+)+' | sed 's/^GLIBCXX_//' | vmax)
  if [ -z "$need" ]; then note "libstdc++: no GLIBCXX_ requirement in the carry"
  elif [ -z "$have" ]; then note "libstdc++: FAIL: no GLIBCXX_ versions read from '$so'"; ok=1
  elif vge "$have" "$need"; then note "libstdc++: ok: $so has GLIBCXX_$have, the carry needs GLIBCXX_$need ($lib)"
  else note "libstdc++: FAIL: $so has GLIBCXX_$have, the carry needs GLIBCXX_$need ($lib)"; ok=1
  fi
  return $ok
}
# torch_info KEY: a value from $WORK/torch.env, written once by the preflight (importing torch takes seconds)
torch_info() { sed -n "s/^$1=//p" "$WORK/torch.env" 2>/dev/null; }
check_cuda() {
  local drv nvcc nv tc avail ok=0
  drv=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9][0-9.]*\).*/\1/p' | head -1)
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  nv=$("$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9.]*\).*/\1/p' | head -1)
  tc=$(torch_info cuda); avail=$(torch_info available)
  note "CUDA: driver supports ${drv:-?} (nvidia-smi), nvcc ${nv:-?} ($nvcc), torch built with ${tc:-none} (available: ${avail:-?})"
  if [ -z "$tc" ]; then note "CUDA: FAIL: python3's torch has no CUDA (torch.version.cuda is empty) or no torch"; ok=1; fi
  if [ -z "$drv" ]; then note "CUDA: FAIL: nvidia-smi printed no CUDA version (no driver?)"; ok=1
  elif [ -n "$tc" ] && [ "${drv%%.*}" -lt "${tc%%.*}" ]; then
    note "CUDA: FAIL: the driver supports CUDA ${drv%%.*}.x, torch needs CUDA ${tc%%.*}"; ok=1; fi
  if [ -z "$nv" ]; then note "CUDA: FAIL: no nvcc (torch's CMake package needs the CUDA toolkit)"; ok=1
  elif [ -n "$tc" ] && [ "${nv%%.*}" != "${tc%%.*}" ]; then
    note "CUDA: FAIL: nvcc is CUDA ${nv%%.*}, torch is CUDA ${tc%%.*}: the build would mix two runtimes"; ok=1; fi
  [ "$avail" = True ] || { note "CUDA: FAIL: torch.cuda.is_available() is ${avail:-unknown}"; ok=1; }
  return $ok
}
ph_preflight() {
  local ok=0 t d
  echo "== $MODE, build dir $B, out $OUT, $(nproc) cores, $JOBS jobs"
  for t in cmake ninja c++ python3 objdump readelf nvcc nvidia-smi; do printf '%-12s %s\n' "$t" "$(command -v "$t" || echo '-')"; done
  uname -a; ldd --version | sed -n 1p; c++ --version | sed -n 1p; cmake --version | sed -n 1p
  py -c 'import torch, torch.utils
print("version=" + torch.__version__); print("cuda=" + (torch.version.cuda or ""))
print("cudnn=" + str(torch.backends.cudnn.version())); print("available=" + str(torch.cuda.is_available()))
print("device=" + (torch.cuda.get_device_name(0) if torch.cuda.is_available() else ""))
print("prefix=" + torch.utils.cmake_prefix_path)' > "$WORK/torch.env" 2>&1 || true
  sed 's/^/torch /' "$WORK/torch.env"
  if [ "$DRY" = 1 ]; then
    note "CUDA: skipped (dry run: device=cpu)"
  else
    nvidia-smi || true
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>/dev/null || true
    note "GPU: $(torch_info device), torch $(torch_info version), cuDNN $(torch_info cudnn)"
    check_cuda || ok=1
  fi
  if [ -d "$DEV/lib/$MA" ]; then check_carry_abi || ok=1
  elif [ "$DRY" = 1 ]; then note "glibc: skipped (no .device: the dry run builds against the system packages)"
  else note "glibc: FAIL: no $DEV/lib/$MA (run tools/device/prepare.sh here and carry .device)"; ok=1
  fi
  for d in "${NEED_DATA[@]}"; do
    if [ ! -d "datasets/$d/images" ] && [ "$DRY" = 1 ]; then
      YOLO11_DATASETS_MIRROR=${YOLO11_DATASETS_MIRROR:-$ROOT/../shared/datasets} tools/get_dataset.sh "$d" || true
    fi
    [ -d "datasets/$d/images" ] || { note "data: FAIL: datasets/$d missing (carry it)"; ok=1; }
  done
  return $ok
}

# ---- configure + build ---------------------------------------------------------------------------------------------
ph_configure() {
  if [ "$DRY" = 1 ]; then
    [ -f "$B/CMakeCache.txt" ] || { note "no configured build in $B (run tools/setup.sh $B first)"; return 1; }
    cmake -S "$ROOT" -B "$B"
  else
    local prefix; prefix=$(torch_info prefix)
    [ -n "$prefix" ] || prefix=$(py -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
    # the same CMake path as tools/setup.sh here: YOLO11_LIBTORCH=<site-packages/torch> of the device's own wheel
    # (torch.utils.cmake_prefix_path is <root>/share/cmake)
    cmake -S "$ROOT" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DYOLO11_LIBTORCH="$(dirname "$(dirname "$prefix")")" -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DOpenCV_DIR="$DEV/lib/$MA/cmake/opencv4" -Dyaml-cpp_DIR="$DEV/lib/$MA/cmake/yaml-cpp" \
      -Dspdlog_DIR="$DEV/lib/$MA/cmake/spdlog" -Dfmt_DIR="$DEV/lib/$MA/cmake/fmt" \
      -DGTest_DIR="$DEV/lib/$MA/cmake/GTest" -Dbenchmark_DIR="$DEV/lib/$MA/cmake/benchmark" \
      -DCLI11_DIR="$DEV/share/cmake/CLI11" -Dnlohmann_json_DIR="$DEV/share/cmake/nlohmann_json" \
      -DYOLO11_SHARED_DIR="$ROOT/../shared"
  fi
  notes_from "$LOGS/configure.log" '^-- +(C\+\+ standard|LibTorch|CUDA|cuDNN|NVTX3|distributed|OpenCV) +:' 11
}
ph_build() {
  cmake --build "$B" -j"$JOBS" --target yolo11-train yolo11-val yolo11-bench-model yolo11-bench-amp
}

# ---- the model step alone ------------------------------------------------------------------------------------------
ph_step() {
  local b
  echo "== yolo11-bench-model ${BENCH_ARGS[*]} --batch ${BENCH_BATCHES_AMP[0]}"
  carry "$B/bench/yolo11-bench-model" "${BENCH_ARGS[@]}" --batch "${BENCH_BATCHES_AMP[0]}" | tee "$LOGS/step.model"
  notes_from "$LOGS/step.model" '^yolo11|mean '
  for b in "${BENCH_BATCHES_AMP[@]}"; do
    echo "== yolo11-bench-amp ${BENCH_ARGS[*]} --batch $b"
    carry "$B/bench/yolo11-bench-amp" "${BENCH_ARGS[@]}" --batch "$b" | tee "$LOGS/step.amp$b"
    notes_from "$LOGS/step.amp$b" '^yolo11|mean |/ float32'
  done
}

# ---- training runs -------------------------------------------------------------------------------------------------
# key lines of a finished run's console log: AMP, per-epoch times, the last epoch window, the run's diagnosis
run_notes() {
  notes_from "$LOGS/$PHASE.log" \
    '^device:|AMP check|amp=|GradScaler|loss scale|epoch [0-9]+/[0-9]+:|epoch [0-9]+ \(steps|run diagnosis|Resuming training|AutoBatch|ops\.txt' 12
}
ph_train() {   # ph_train NAME key=value...
  local name=$1; shift
  carry "$B/yolo11-train" "${TRAIN_ARGS[@]}" project="$RUNS" name="$name" exist_ok=true "$@"
  run_notes
  # checkpoints are not figures; train_full's are kept for resume and val
  [ "$name" = train_full ] || rm -rf "$RUNS/$name/weights"
}
ph_train_off()   { ph_train train_off instrument=off; }
ph_train_basic() { ph_train train_basic instrument=basic; }
ph_train_full()  { ph_train train_full instrument=full "${PROFILE_OPS[@]}"; }
ph_train_sync()  { ph_train train_sync instrument=full sync=true; }
ph_resume() {
  local run=$RUNS/train_full rows
  [ -f "$run/weights/last.safetensors" ] || { note "no checkpoint in $run/weights (train_full failed?)"; return 1; }
  carry "$B/yolo11-train" resume="$run" epochs=$((EPOCHS + 1)) val=true device="$DEVICE" plots=false
  run_notes
  rows=$(($(wc -l < "$run/results.csv") - 1))
  [ "$rows" = $((EPOCHS + 1)) ] || { note "FAIL: results.csv holds $rows epochs after the resume, not $((EPOCHS + 1))"; return 1; }
  note "results.csv: $rows epochs after the resume"
}
ph_val() {
  local w=$RUNS/train_full/weights/best.safetensors
  [ -f "$w" ] || { note "no $w (train_full/resume failed?)"; return 1; }
  carry "$B/yolo11-val" --weights "$w" --data "$DATA" "${VAL_ARGS[@]}" project="$WORK/val" name=val exist_ok=true plots=false
  notes_from "$LOGS/val.log" '^device:|^ +all |Speed:|Losses'
}
# mAP50-95 of the "all" row of a yolo11-val log (the last column)
val_map() { grep -E '^ +all ' "$1" | tail -n 1 | awk '{print $NF}'; }
ph_val_cpu() {
  local w=$RUNS/train_full/weights/best.safetensors a b
  [ -f "$w" ] || { note "no $w (train_full/resume failed?)"; return 1; }
  carry "$B/yolo11-val" --weights "$w" --data "$DATA" "${VAL_CPU_ARGS[@]}" project="$WORK/val" name=val_cpu exist_ok=true \
    plots=false
  notes_from "$LOGS/val_cpu.log" '^device:|^ +all |Speed:'
  rm -rf "$RUNS/train_full/weights"   # resume, val and val_cpu have used them
  a=$(val_map "$LOGS/val.log"); b=$(val_map "$LOGS/val_cpu.log")
  [ -n "$a" ] && [ -n "$b" ] || { note "FAIL: no mAP50-95 read from val.log ('$a') or val_cpu.log ('$b')"; return 1; }
  if awk -v a="$a" -v b="$b" 'BEGIN {d = a - b; if (d < 0) d = -d; exit !(d <= 1e-3)}'; then
    note "mAP50-95: $DEVICE $a, cpu $b: within 1e-3"
  else
    note "FAIL: mAP50-95 $DEVICE $a against cpu $b: more than 1e-3 apart"; return 1
  fi
}
ph_autobatch() {
  carry "$B/yolo11-train" "${AUTOBATCH_ARGS[@]}" batch=-1 instrument=basic project="$RUNS" name=autobatch exist_ok=true
  run_notes
  rm -rf "$RUNS/autobatch/weights"
}

# ---- unit tests ----------------------------------------------------------------------------------------------------
ph_tests() {
  local set rc=0
  carry cmake --build "$B" -j"$JOBS" --target "${TEST_TARGETS[@]}"   # gtest discovery runs the executables
  for set in "${TEST_SETS[@]}"; do
    # shellcheck disable=SC2086  # a set is ctest arguments, split on purpose
    carry ctest --test-dir "$B" -LE slow $set -j"$JOBS" --timeout 60 --output-on-failure | tee "$LOGS/tests.ctest" || rc=1
    note "ctest $set: $(grep -E 'tests passed|No tests were found' "$LOGS/tests.ctest" | tail -n 1)"
    notes_from "$LOGS/tests.ctest" '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess|Exception|Not Run)' 10
  done
  return $rc
}

# ---- the phase runner ----------------------------------------------------------------------------------------------
pack() {   # $OUT/logs.tgz: the logs and the runs' text files (the run tool brings back at most 8 files)
  local what=(logs) d
  for d in runs val; do [ -d "$WORK/$d" ] && what+=("$d"); done
  tar -czf "$OUT/logs.tgz.part" -C "$WORK" --exclude=weights --exclude='*.jpg' --exclude='*.png' "${what[@]}" 2>/dev/null \
    && mv -f "$OUT/logs.tgz.part" "$OUT/logs.tgz"
}
CUR_PID=""
on_signal() {
  [ -n "$CUR_PID" ] && kill -KILL -- "-$CUR_PID" 2>/dev/null
  echo "- interrupted by a signal during ${PHASE:-?}" >> "$SUM"; pack; exit 130
}
trap on_signal INT TERM
T0=$(now)
declare -A RC=()
# phase NAME: runs ph_NAME in the background in its own process group (set -m), stdout+stderr to $LOGS/NAME.log,
# with set -e; kills the group (TERM 3 s before the phase's limit, KILL at it); limit = deadline - elapsed - the
# budgets of the phases after it, so a phase never eats into a later phase's budget. Appends "- NAME: PASS|FAIL rc, seconds, limit" and its notes to summary.md.
phase() {
  local name=$1 i reserve=0 after=0 limit start pid rc timed_out=0 status
  for i in "${PHASES[@]}"; do
    [ "$after" = 1 ] && reserve=$((reserve + BUDGET[$i]))
    [ "$i" = "$name" ] && after=1
  done
  limit=$(awk -v d="$DEADLINE" -v t0="$T0" -v t="$(now)" -v r="$reserve" 'BEGIN {printf "%d", d - (t - t0) - r}')
  PHASE=$name
  : > "$LOGS/$name.notes"
  echo "[check] $name: ${WHAT[$name]} (budget ${BUDGET[$name]} s, limit $limit s)"
  start=$(now)
  set -m
  ( set -eo pipefail; "ph_$name" ) < /dev/null > "$LOGS/$name.log" 2>&1 &
  pid=$!
  set +m
  CUR_PID=$pid
  while kill -0 "$pid" 2>/dev/null; do
    if awk -v s="$start" -v t="$(now)" -v l="$((limit - 3))" 'BEGIN {exit !(t - s >= l)}'; then
      timed_out=1
      kill -TERM -- "-$pid" 2>/dev/null; sleep 3; kill -KILL -- "-$pid" 2>/dev/null
      break
    fi
    sleep 0.2
  done
  wait "$pid"; rc=$?
  CUR_PID=""
  [ "$timed_out" = 1 ] && rc=124
  RC[$name]=$rc
  if [ "$rc" = 0 ]; then status=PASS; elif [ "$timed_out" = 1 ]; then status="FAIL (TIMED OUT at $limit s)"; else status="FAIL rc=$rc"; fi
  echo "- **$name**: $status, $(secs "$start" "$(now)") s (budget ${BUDGET[$name]}, limit $limit)" >> "$SUM"
  cat "$LOGS/$name.notes" >> "$SUM"
  if [ "$rc" != 0 ] && ! grep -q 'FAIL' "$LOGS/$name.notes"; then
    echo "    last lines of $name.log:" >> "$SUM"
    tail -n 6 "$LOGS/$name.log" | cut -c1-300 | sed 's/^/    | /' >> "$SUM"
  fi
  tail -n 1 "$SUM"
  pack
  return "$rc"
}
not_run() { RC[$1]=skip; echo "- **$1**: NOT RUN ($2)" >> "$SUM"; }

# ---- main ----------------------------------------------------------------------------------------------------------
sum=0; for p in "${PHASES[@]}"; do sum=$((sum + BUDGET[$p])); done
[ "$sum" -le "$DEADLINE" ] || { echo "check.sh: the budgets add up to $sum s, over the deadline $DEADLINE s" >&2; exit 2; }
rm -rf "$WORK"; mkdir -p "$LOGS" "$RUNS" "$OUT" || exit 2
{
  echo "# device check ($MODE) $(date -u +%FT%TZ) on $(hostname)"
  echo
  echo "| phase | budget s | what |"
  echo "|---|---|---|"
  for p in "${PHASES[@]}"; do echo "| $p | ${BUDGET[$p]} | ${WHAT[$p]} |"; done
  echo "| **all** | **$sum** | deadline $DEADLINE s; a phase may also use what earlier ones left |"
  echo
} > "$SUM"
cat "$SUM"

STOP=""
for p in "${PHASES[@]}"; do
  if [ -n "$STOP" ]; then not_run "$p" "$STOP"; continue; fi
  case $p in
    resume) [ "${RC[train_full]}" = 0 ] || { not_run "$p" "train_full failed"; continue; } ;;
    val|val_cpu) [ -f "$RUNS/train_full/weights/best.safetensors" ] || { not_run "$p" "no best weights from train_full"; continue; } ;;
  esac
  phase "$p"
  case $p in   # without these, nothing after them can run
    preflight|configure|build) [ "${RC[$p]}" = 0 ] || { STOP="$p failed"; echo "STOP: $p failed: the phases after it would waste the run (see above)" >> "$SUM"; } ;;
  esac
done

# instrument overhead: mean seconds per epoch after the first (results.csv 'time'), same settings in each run
{
  echo
  echo "| run | s/epoch (epochs 2..$EPOCHS: results.csv time, cumulative) | vs off |"
  echo "|---|---|---|"
  base=""
  for r in train_off train_basic train_full train_sync; do
    f=$RUNS/$r/results.csv
    m=$([ -f "$f" ] && awk -F, -v e="$EPOCHS" 'NR == 2 {t1 = $2} NR == e + 1 {te = $2} END {if (te != "") printf "%.3f", (te - t1) / (e - 1)}' "$f")
    [ "$r" = train_off ] && base=$m
    rel=$([ -n "$m" ] && [ -n "$base" ] && awk -v a="$m" -v b="$base" 'BEGIN {if (b > 0) printf "%+.1f%%", (a / b - 1) * 100}')
    echo "| $r | ${m:-n/a} | ${rel:-n/a} |"
  done
} >> "$SUM"

# determinism: train_off, train_basic and train_full ran one seed with deterministic=true (the default) on the same
# settings; the instrument level must not change a number, so results.csv (all but the time column) must match
{
  echo
  ref=$RUNS/train_off/results.csv
  for r in train_basic train_full; do
    f=$RUNS/$r/results.csv
    if [ -f "$ref" ] && [ -f "$f" ]; then
      # the first EPOCHS rows: the resume phase appended one more to train_full's
      if cmp -s <(head -n $((EPOCHS + 1)) "$ref" | cut -d, -f1,3-) <(head -n $((EPOCHS + 1)) "$f" | cut -d, -f1,3-); then
        echo "- determinism: $r results.csv equals train_off's (all but time): identical"
      else
        echo "- determinism: $r results.csv DIFFERS from train_off's (all but time)"
      fi
    fi
  done
} >> "$SUM"

failed=(); skipped=()
for p in "${PHASES[@]}"; do
  case ${RC[$p]:-skip} in 0) ;; skip) skipped+=("$p") ;; *) failed+=("$p") ;; esac
done
total=$(secs "$T0" "$(now)")
echo >> "$SUM"
npass=$((${#PHASES[@]} - ${#failed[@]} - ${#skipped[@]}))
if [ "$npass" = ${#PHASES[@]} ]; then
  echo "RESULT: PASS: all ${#PHASES[@]} phases in $total s ($MODE)" >> "$SUM"
else
  echo "RESULT: FAIL: $npass/${#PHASES[@]} phases passed in $total s ($MODE); failed: ${failed[*]:-none}; not run: ${skipped[*]:-none}" >> "$SUM"
fi
pack
echo; cat "$SUM"; echo; echo "[check] logs: $LOGS (packed: $OUT/logs.tgz)"
[ "$npass" = ${#PHASES[@]} ]
