#!/usr/bin/env bash
# Fetches LibTorch 2.x with CUDA from the PyPI `torch` wheel into a cache dir and prints its root (the directory
# holding share/cmake/Torch and lib/), for -DYOLO11_LIBTORCH=<root> (cmake/Dependencies.cmake).
#   tools/fetch_libtorch.sh            → prints e.g. ~/.cache/yolo11-cpp/libtorch-2.15.0/site/torch
# The wheel is used with --no-deps: most of its CUDA libraries (cudart, cuBLAS, cuFFT, cuSPARSE, NVRTC, cuPTI,
# nvJitLink) come from the CUDA 13 toolkit in /usr/local/cuda; five come from their NVIDIA wheels at the versions the
# torch wheel pins, unpacked beside torch/ where the wheel's RPATH ($ORIGIN/../../nvidia/...) finds them first:
# NCCL (the toolkit's 2.28.9 lacks symbols libtorch_cuda.so links: ncclPutSignal, ncclCommSuspend, ...), cuDNN (torch
# was built against 9.26, the toolkit has 9.19), and cuSPARSELt, NVSHMEM and cuFile, which the toolkit lacks.
# Measured here (docs/benchmarks.md): ~1.6 GB in ~25 s, against 3.0 GB in ~30 s for the wheel with every nvidia-*
# dependency. Every library must load with all its symbols resolved (ldd -r), or the script fails naming them.
# Environment: YOLO11_TORCH_VERSION (default 2.15.0), YOLO11_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/yolo11-cpp).
# Needs python3 -m pip (Debian: python3-pip) and unzip. A second call with the same version only prints the root.
set -euo pipefail
V=${YOLO11_TORCH_VERSION:-2.15.0}
CACHE=${YOLO11_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/yolo11-cpp}
DEST=$CACHE/libtorch-$V
ROOT=$DEST/site/torch
# The wheel's own pins for 2.15.0 (its METADATA: nvidia-nccl-cu13==2.30.7, nvidia-cudnn-cu13==9.26.0.51,
# nvidia-cusparselt-cu13==0.8.1, nvidia-nvshmem-cu13==3.7.2, cuda-toolkit[cufile]==13.2.2 → nvidia-cufile==1.17.1.22).
EXTRA=(nvidia-nccl-cu13==2.30.7 nvidia-cudnn-cu13==9.26.0.51 nvidia-cusparselt-cu13==0.8.1 nvidia-nvshmem-cu13==3.7.2
       nvidia-cufile==1.17.1.22)
log() { echo "[libtorch] $*" >&2; }

if [ -f "$DEST/.complete" ]; then echo "$ROOT"; exit 0; fi
command -v unzip >/dev/null || { log "needs unzip (apt-get install unzip)"; exit 2; }
python3 -m pip --version >/dev/null 2>&1 || { log "needs pip (apt-get install python3-pip)"; exit 2; }
CUDA_LIB=""
for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
  [ -n "$d" ] && [ -e "$d/lib64/libcudart.so.13" ] && { CUDA_LIB=$d/lib64; break; }
done
[ -n "$CUDA_LIB" ] || { log "no CUDA 13 toolkit (libcudart.so.13 in \$CUDA_HOME/lib64 or /usr/local/cuda/lib64):" \
  "the torch wheel's CUDA libraries come from it. Install the toolkit, or build against Debian's CPU LibTorch" \
  "1.13 (YOLO11_LIBTORCH=debian tools/setup.sh)"; exit 2; }

rm -rf "$DEST" && mkdir -p "$DEST/wheels" "$DEST/site"
t0=$(date +%s)
log "pip download --no-deps torch==$V ${EXTRA[*]} (~1.5 GB, once)"
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$DEST/wheels" "torch==$V" "${EXTRA[@]}" >&2
t1=$(date +%s)
log "downloaded $(du -sm "$DEST/wheels" | cut -f1) MB in $((t1 - t0)) s; unpacking"
# Only what a C++ build reads: libraries, headers, CMake files (not the Python package: ~70 % of the files).
(cd "$DEST/site" &&
 unzip -q "$DEST"/wheels/torch-"$V"-*.whl 'torch/lib/*' 'torch/include/*' 'torch/share/*' 'torch/version.py' &&
 for w in "$DEST"/wheels/nvidia_*.whl; do unzip -q -o "$w" 'nvidia/*'; done)
rm -rf "$DEST/wheels"
# Every library the wheel's LibTorch needs must resolve, with every symbol: its own, the NVIDIA wheels' (RPATH), the
# toolkit's (a library of the right name but too old links nothing: ldd -r names the symbols it lacks).
missing=$(cd "$ROOT/lib" && for f in libtorch.so libtorch_cuda.so libtorch_cpu.so libc10_cuda.so; do
            LD_LIBRARY_PATH=$CUDA_LIB ldd -r "$f" 2>&1 | grep -E 'not found|undefined symbol' || true; done | sort -u)
if [ -n "$missing" ]; then
  log "LibTorch $V needs libraries or symbols found neither in the wheels nor in $CUDA_LIB:"; echo "$missing" >&2
  exit 1
fi
touch "$DEST/.complete"
log "LibTorch $(sed -n "s/^__version__ = '\(.*\)'/\1/p" "$ROOT/version.py") in $ROOT ($(du -sm "$DEST/site" |
    cut -f1) MB, $(( $(date +%s) - t0 )) s in all; CUDA libraries from $CUDA_LIB)"
echo "$ROOT"
