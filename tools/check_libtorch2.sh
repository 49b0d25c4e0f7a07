#!/usr/bin/env bash
# Compile check against LibTorch 2.x (issue 12): every translation unit of the real build (library, apps,
# tests, benchmarks, as listed in BUILD_DIR/compile_commands.json: the unity batches when YOLO11_UNITY_BUILD is on,
# which cover every source that uses LibTorch) is compiled with -fsyntax-only against
#   cpu214   Debian's libtorch-dev 2.14 (unstable), C++20                     (LibTorch >= 2.13 needs C++20)
#   cuda26   Debian's libtorch-cuda-dev 2.6 (trixie contrib), C++17, YOLO11_HAS_CUDA/NCCL on, CUDA headers
#            from /usr/local/cuda (skipped with a message when they are absent); by default only the sources with
#            CUDA/NCCL preprocessor lines (in themselves or their project headers), YOLO11_LIBTORCH2_CUDA26=all: all
#   fmtpip   the PyPI wheel torch 2.15.0 (cu132) as a build against it sees it: its include root
#            (site-packages/torch/include, which bundles fmt 12.2.1 beside ATen/c10/torch, and protobuf, pybind11 ...)
#            in the place of the build's LibTorch include dirs, in TorchConfig's order (include, then
#            include/torch/csrc/api/include), C++20 (issue 32 finding 7). Checks the fmt pin of cmake/FmtPin.cmake
#            (the build's flags carry <build>/yolo11-fmt-pin, spdlog's fmt, ahead of LibTorch's dirs): a probe unit
#            including spdlog and every wheel header that includes <fmt/...> (c10/util, c10d, kineto, profiler; not
#            the CUDA/MPS/HIP/Python ones), asserting FMT_VERSION is the pinned fmt's, and the spdlog/fmt users among
#            the torch-free units (YOLO11_LIBTORCH2_FMTPIP=all: every unit using spdlog/fmt, with a 2.15 PCH)
# with the build's own flags and -Werror. Debian's 1.13 headers (/usr/include/{ATen,c10,caffe2,torch}) are kept
# out of the include path: /usr/include is replaced by a symlink overlay without them (-nostdinc + gcc's own
# search list). A precompiled header of include/yolo11/pch.h is built per variant.
# Negative controls (run first; the check fails unless they fail as they should):
#   1. a real TU (src/dist/dist.cpp) against 2.14 with -std=c++17 must stop at ATen's "C++20" #error — proves the
#      2.x headers, not 1.13's, are the ones read;
#   2. a 1.13-only call (ProcessGroupGloo used as a c10d::ProcessGroup; 2.x derives it from c10d::Backend) must
#      compile against the system's 1.13 and fail against 2.14.
#   3. (fmtpip) against the wheel with the fmt pin taken out of the build's flags, (a) a real spdlog unit
#      (src/config/config_keys.cpp) must fail in spdlog/fmt (spdlog 1.10 against fmt 12: "'basic_runtime' is not a
#      member of 'fmt'"), and (b) a real unit using fmt alone (src/instrument/stats.cpp), which compiles, must fail to
#      link with -lfmt (spdlog's libfmt.so.9: "undefined reference to `fmt::v12::vformat") while the same object
#      compiled with the pin links — proves an unpinned build reads the wheel's fmt and that the pin is what makes it
#      compile and link. Every fmtpip unit must also not read a header of the wheel's fmt/ (its -MD dependency list).
#
#   tools/check_libtorch2.sh [BUILD_DIR]          (default: build; needs a BUILD_DIR configured against Debian's
#                                                  1.13, whose /usr/include/torch dirs each variant replaces: e.g.
#                                                  .ci/run's build-lt2; the default build uses the 2.15 wheel)
# Environment: YOLO11_LIBTORCH2_CACHE  where .debs and unpacked headers are kept (default
#              ${XDG_CACHE_HOME:-~/.cache}/yolo11-cpp/libtorch2; reused across clones; safe to delete)
#              YOLO11_LIBTORCH2_VARIANTS  (default "cpu214 cuda26 fmtpip")   JOBS (default nproc)
#              YOLO11_CXX_LAUNCHER  prefix of every compile (e.g. a slot limiter), default none
#              YOLO11_TORCH_WHEEL  a torch wheel file for fmtpip (default: torch-$YOLO11_TORCH_WHEEL_VERSION-*.whl in
#              YOLO11_WHEEL_CACHE, ${XDG_CACHE_HOME:-~/.cache}/yolo11-cpp/wheels, downloaded there once with
#              `pip download --no-deps` (539 MB, ~10 s here); YOLO11_TORCH_WHEEL_VERSION default 2.15.0)
# Downloads use apt-get with a private configuration (own sources.list, state and cache under the cache dir);
# the system's apt sources and state are never touched; the wheel comes from PyPI through pip. Needs network access
# to deb.debian.org and PyPI only (none once cached).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
CACHE=${YOLO11_LIBTORCH2_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/yolo11-cpp/libtorch2}
VARIANTS=${YOLO11_LIBTORCH2_VARIANTS:-cpu214 cuda26 fmtpip}
WHEEL_VERSION=${YOLO11_TORCH_WHEEL_VERSION:-2.15.0}
WHEELS=${YOLO11_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/yolo11-cpp/wheels}
JOBS=${JOBS:-$(nproc)}
MIRROR=${YOLO11_DEBIAN_MIRROR:-http://deb.debian.org/debian}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$BUILD_DIR/compile_commands.json" ] || { echo "[lt2] $BUILD_DIR/compile_commands.json missing: configure first (tools/setup.sh)" >&2; exit 2; }
grep -q '^Torch_DIR:[A-Z]*=/usr/lib/' "$BUILD_DIR/CMakeCache.txt" || { echo "[lt2] $BUILD_DIR is not configured against" \
  "Debian's LibTorch 1.13 (its Torch_DIR: $(sed -n 's/^Torch_DIR:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")); configure one:" \
  "cmake -S . -B build-lt2 -G Ninja -DYOLO11_LIBTORCH= -DTorch_DIR=/usr/lib/x86_64-linux-gnu/cmake/Torch" >&2; exit 2; }
command -v python3 >/dev/null || { echo "[lt2] python3 is needed (apt-get install python3)" >&2; exit 2; }
t0=$(date +%s)

# ---- fetch + unpack (once per cache) ---------------------------------------------------------------------------
# variant → "package/suite" (the suite's current version; exact versions vanish from the mirror as Debian moves)
declare -A PKG=([cpu214]="libtorch-dev/unstable" [cuda26]="libtorch-cuda-dev/trixie")
APTDIR=$CACHE/apt
apt_private() {
  apt-get -q -o Dir::Etc="$APTDIR/etc" -o Dir::Etc::sourcelist="$APTDIR/etc/sources.list" \
    -o Dir::State="$APTDIR/state" -o Dir::State::status="$APTDIR/state/status" -o Dir::Cache="$APTDIR/cache" \
    -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)" -o Acquire::Languages=none "$@"
}
fetch() {  # fetch VARIANT → $CACHE/<variant>/usr/include
  local v=$1 spec=${PKG[$1]} dest=$CACHE/$1
  [ -f "$dest/.unpacked" ] && return 0
  if [ ! -f "$APTDIR/.updated" ]; then
    mkdir -p "$APTDIR/etc/sources.list.d" "$APTDIR/etc/preferences.d" "$APTDIR/state/lists/partial" "$APTDIR/cache/archives/partial"
    : > "$APTDIR/state/status"
    cat > "$APTDIR/etc/sources.list" <<EOF
deb [signed-by=$KEYRING] $MIRROR trixie main contrib
deb [signed-by=$KEYRING] $MIRROR unstable main
EOF
    echo "[lt2] apt-get update (private configuration in $APTDIR)"
    apt_private update >/dev/null
    touch "$APTDIR/.updated"
  fi
  mkdir -p "$CACHE/debs" && rm -rf "$dest.tmp" && mkdir -p "$dest.tmp"
  (cd "$CACHE/debs" && apt_private download "$spec" >/dev/null)
  local deb
  deb=$(ls -t "$CACHE"/debs/"${spec%/*}"_*.deb | head -1)
  dpkg -x "$deb" "$dest.tmp"
  basename "$deb" > "$dest.tmp/.unpacked"
  rm -rf "$dest" && mv "$dest.tmp" "$dest"
}
fetch_wheel() {  # → $CACHE/fmtpip/torch/include: the wheel's include root, laid out as site-packages/torch/include
  local dest=$CACHE/fmtpip whl=${YOLO11_TORCH_WHEEL:-}
  if [ -z "$whl" ]; then
    whl=$(ls "$WHEELS"/torch-"$WHEEL_VERSION"-*.whl 2>/dev/null | head -1 || true)
    if [ -z "$whl" ]; then
      python3 -m pip --version >/dev/null 2>&1 || { echo "[lt2] fmtpip needs pip to fetch the torch wheel once" \
        "(apt-get install python3-pip), or YOLO11_TORCH_WHEEL=<torch wheel file>, or YOLO11_LIBTORCH2_VARIANTS without it" >&2; exit 2; }
      mkdir -p "$WHEELS"
      echo "[lt2] fmtpip: pip download torch==$WHEEL_VERSION (once, ~540 MB) into $WHEELS"
      # the manylinux x86_64 CPython 3.11 wheel whatever python3 is (the headers are the same in every wheel)
      python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 --python-version 3.11 \
        --implementation cp --abi cp311 -d "$WHEELS" "torch==$WHEEL_VERSION" >&2
      whl=$(ls "$WHEELS"/torch-"$WHEEL_VERSION"-*.whl | head -1)
    fi
  fi
  [ -f "$dest/.unpacked" ] && [ "$(cat "$dest/.unpacked")" = "$(basename "$whl")" ] && return 0
  rm -rf "$dest.tmp"
  python3 - "$whl" "$dest.tmp" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:  # torch/include (63 MB of the 539 MB wheel) and torch/version.py only
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("torch/include/") or n == "torch/version.py"])
PY
  basename "$whl" > "$dest.tmp/.unpacked"
  rm -rf "$dest" && mv "$dest.tmp" "$dest"
}
for v in $VARIANTS; do
  if [ "$v" = fmtpip ]; then
    fetch_wheel
    echo "[lt2] $v: $(cat "$CACHE/$v/.unpacked") ($(grep -h "^__version__" "$CACHE/$v/torch/version.py" | cut -d"'" -f2)," \
         "fmt $(sed -n 's/^#define FMT_VERSION //p' "$CACHE/$v/torch/include/fmt/base.h" "$CACHE/$v/torch/include/fmt/core.h" 2>/dev/null | head -1))"
    continue
  fi
  [ -n "${PKG[$v]:-}" ] || { echo "[lt2] unknown variant $v (known: ${!PKG[*]} fmtpip)" >&2; exit 2; }
  fetch "$v"
  echo "[lt2] $v: $(cat "$CACHE/$v/.unpacked")"
done
t1=$(date +%s)

# ---- /usr/include overlay without LibTorch 1.13 ----------------------------------------------------------------
# Everything LibTorch installs at the top of /usr/include (1.13's and 2.x's names) is left out.
OVERLAY=$CACHE/usr-include-overlay
rm -rf "$OVERLAY" && mkdir -p "$OVERLAY"
declare -A SKIP=()
for n in ATen c10 caffe2 torch THC TH kineto libshm.h qnnpack_func.h; do SKIP[$n]=1; done
if dpkg -L libtorch-dev >/dev/null 2>&1; then
  for n in $(dpkg -L libtorch-dev | awk -F/ '$2=="usr" && $3=="include" && NF>=4 {print $4}' | sort -u); do SKIP[$n]=1; done
fi
for v in $VARIANTS; do
  if [ -d "$CACHE/$v/usr/include" ]; then for n in $(ls "$CACHE/$v/usr/include"); do SKIP[$n]=1; done; fi
done
# (fmtpip's include root stays off the overlay: its fmt/, google/, pybind11/ ... come before the system's, as in a
# real build against the wheel; the system's fmt, spdlog's, stays reachable through the build's fmt pin)
for e in /usr/include/*; do
  n=$(basename "$e"); [ -n "${SKIP[$n]:-}" ] || ln -s "$e" "$OVERLAY/$n"
done

# ---- compile every TU -------------------------------------------------------------------------------------------
# precompiled headers (~0.7 GB each) and control TUs go to a temporary dir, removed on exit
WORK=$(mktemp -d "${TMPDIR:-/tmp}/yolo11-lt2.XXXXXX"); trap 'rm -rf "$WORK"' EXIT
export CACHE BUILD_DIR VARIANTS JOBS OVERLAY WORK
rc=0
python3 - <<'PY' || rc=$?
import json, os, re, shlex, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor

cache, build, jobs, overlay = os.environ["CACHE"], os.environ["BUILD_DIR"], int(os.environ["JOBS"]), os.environ["OVERLAY"]
variants = os.environ["VARIANTS"].split()
root = os.getcwd()
cuda_inc = "/usr/local/cuda/include"
launcher = shlex.split(os.environ.get("YOLO11_CXX_LAUNCHER", ""))

# gcc's own include search list, with /usr/include replaced by the overlay (so -nostdinc drops 1.13's headers)
cxx0 = "c++"
probe = subprocess.run([cxx0, "-xc++", "-E", "-v", "/dev/null"], capture_output=True, text=True).stderr
sysdirs, on = [], False
for line in probe.splitlines():
    if line.startswith("#include <...>"): on = True; continue
    if line.startswith("End of search list"): break
    if on: sysdirs.append(line.strip())
sysdirs = [overlay if os.path.realpath(d) == "/usr/include" else d for d in sysdirs]

TORCH_SLOT = "@torch-include-dirs@"  # where the build's LibTorch include dirs were (fmtpip puts the wheel's there)
def base_args(entry, slot=False):
    """The entry's flags without output/input/pch/std/torch include dirs: [compiler, flags...], uses_pch.
    slot: TORCH_SLOT marks the place of the first LibTorch include dir."""
    a = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    out, i, uses_pch = [a[0]], 1, False
    while i < len(a):
        x = a[i]
        if x in ("-o", "-MF", "-MT", "-MQ"): i += 2; continue
        if x in ("-c", "-Winvalid-pch", "-MD", "-MMD"): i += 1; continue
        if x == "-include" and a[i + 1].endswith("cmake_pch.hxx"): uses_pch = True; i += 2; continue
        if x == "-isystem" and a[i + 1].startswith("/usr/include/torch"):
            if slot and TORCH_SLOT not in out: out.append(TORCH_SLOT)
            i += 2; continue
        if x.startswith("-std="): i += 1; continue
        if os.path.abspath(os.path.join(entry["directory"], x)) == os.path.abspath(os.path.join(entry["directory"], entry["file"])): i += 1; continue
        out.append(x); i += 1
    return out, uses_pch

def variant_flags(v):
    inc = os.path.join(cache, v, "usr", "include")
    f = ["-isystem", os.path.join(inc, "torch", "csrc", "api", "include"), "-isystem", inc]
    if v == "cpu214":
        return ["-std=c++20"] + f
    if v == "cuda26":
        return ["-std=c++17", "-DYOLO11_HAS_CUDA=1", "-DYOLO11_HAS_NCCL=1", "-isystem", cuda_inc] + f
    raise SystemExit(f"unknown variant {v}")

def finish(args):
    return args + ["-nostdinc"] + [y for d in sysdirs for y in ("-isystem", d)] + ["-Werror", "-fsyntax-only"]

# fmtpip: the wheel's include root where the build had LibTorch's include dirs, in TorchConfig.cmake's order
wheel_inc = os.path.join(cache, "fmtpip", "torch", "include")
def line(v, a, extra=()):
    """The check's compile line for variant v from base_args(..., slot=True) flags a (input file not included)."""
    if v != "fmtpip":  # the Debian variants: their include dirs after the build's flags (as /usr/include would be)
        return finish([x for x in a if x != TORCH_SLOT] + variant_flags(v) + list(extra))
    inc = ["-isystem", wheel_inc, "-isystem", os.path.join(wheel_inc, "torch", "csrc", "api", "include")]
    i = a.index(TORCH_SLOT) if TORCH_SLOT in a else len(a)
    return finish(a[:i] + inc + a[i + 1:] + ["-std=c++20"] + list(extra))
PIN_DIR = re.compile(r"/yolo11-fmt-pin/?$")  # cmake/FmtPin.cmake's directory (spdlog's fmt, first -isystem)
def pin_dir(a):
    return next((a[i + 1] for i, x in enumerate(a[:-1]) if x == "-isystem" and PIN_DIR.search(a[i + 1])), None)
def unpinned(a):
    p = pin_dir(a)
    return [x for i, x in enumerate(a) if not (p and (x == p or (x == "-isystem" and a[i + 1] == p)))]
wheel_fmt = os.path.realpath(os.path.join(wheel_inc, "fmt")) + "/"
def fmt_version(d):
    for h in ("base.h", "core.h"):
        f = os.path.join(d, "fmt", h)
        if os.path.isfile(f):
            m = re.search(r"^#\s*define\s+FMT_VERSION\s+(\d+)", open(f, errors="replace").read(), re.M)
            if m: return int(m.group(1))
    return None

entries = [e for e in json.load(open(os.path.join(build, "compile_commands.json")))
           if not e["file"].endswith("cmake_pch.hxx.cxx")]
# the library's flags: an entry compiled into CMakeFiles/yolo11.dir with the precompiled header (a unity batch when
# YOLO11_UNITY_BUILD is on, a single source otherwise)
def output(e):
    a = shlex.split(e["command"]) if "command" in e else list(e["arguments"])
    return a[a.index("-o") + 1] if "-o" in a else ""
lib_entry = next(e for e in entries if output(e).startswith("CMakeFiles/yolo11.dir/") and base_args(e)[1])
dist_cpp = os.path.join(root, "src", "dist", "dist.cpp")

# cuda26's scope (YOLO11_LIBTORCH2_CUDA26): "all" checks every entry; "cuda" (the default) checks the entries (unity
# batches or single sources) holding a source whose text or project headers have a preprocessor line naming CUDA or
# NCCL (#ifdef YOLO11_HAS_CUDA, #include <ATen/cuda/...>). Every other source preprocesses to the same code with the
# CUDA macros on or off, and cpu214 already checks it against LibTorch 2.x; the full pass costs as much again.
CUDA_LINE = re.compile(r"^\s*#.*(YOLO11_HAS_CUDA|YOLO11_HAS_NCCL|USE_CUDA|\bcuda|\bnccl)", re.M | re.I)
FMT_LINE = re.compile(r'^\s*#\s*include\s*[<"](spdlog|fmt)/', re.M)  # fmtpip: the units using spdlog or fmt
INC_LINE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
inc_dirs = [os.path.join(root, "include"), os.path.join(root, build, "include"), os.path.join(root, "tests", "common")]
memo = {}
def sensitive(path, line_re=CUDA_LINE, seen=()):
    key = (path, line_re.pattern)
    if key in memo: return memo[key]
    if path in seen or not os.path.isfile(path): return False  # (a generated source not built yet)
    text = open(path, errors="replace").read()
    hit = bool(line_re.search(text))
    for name in INC_LINE.findall(text):
        if hit: break
        for d in [os.path.dirname(path)] + inc_dirs:
            h = os.path.join(d, name)
            if os.path.isfile(h):
                hit = sensitive(os.path.realpath(h), line_re, seen + (path,)); break
    memo[key] = hit
    return hit
def cuda_sensitive(path):
    return sensitive(path, CUDA_LINE)
def sources_of(e):  # a unity batch (YOLO11_UNITY_BUILD) names its sources as #include "<absolute path>"
    f = os.path.join(e["directory"], e["file"])
    if "/Unity/unity_" not in f: return [f]
    return re.findall(r'^#include "([^"]+)"', open(f).read(), re.M)
def cuda_entries():
    return [e for e in entries if any(cuda_sensitive(os.path.realpath(src)) for src in sources_of(e))]
cuda_scope = os.environ.get("YOLO11_LIBTORCH2_CUDA26", "cuda")
work = os.environ["WORK"]

def run(args, cwd):
    p = subprocess.run(launcher + args, cwd=cwd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr

failed = False
# ---- negative controls ----
if "cpu214" in variants:
    a, _ = base_args(lib_entry)
    args = finish(a + ["-std=c++17"] + variant_flags("cpu214")[1:]) + ["-c", dist_cpp]
    rc, log = run(args, lib_entry["directory"])
    ok = rc != 0 and "C++20 or later" in log
    print(f"[lt2] negative control 1 (src/dist/dist.cpp, 2.14, -std=c++17 must hit ATen's C++20 #error): "
          f"{'failed as it should' if ok else 'DID NOT FAIL AS EXPECTED'}")
    failed |= not ok
    ctl = os.path.join(work, "control_113_only.cpp")
    with open(ctl, "w") as fh:
        fh.write("// LibTorch 1.13 only: ProcessGroupGloo is a c10d::ProcessGroup there (2.x: a c10d::Backend).\n"
                 "#define USE_C10D_GLOO 1\n#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>\n"
                 "c10::intrusive_ptr<c10d::ProcessGroup> as_group(c10::intrusive_ptr<c10d::ProcessGroupGloo> g) "
                 "{ return g; }\n")
    a113 = base_args(lib_entry)[0] + ["-std=c++17", "-isystem", "/usr/include/torch/csrc/api/include",
                                                    "-fsyntax-only", ctl]
    rc113, log113 = run(a113, root)
    rc2, log2 = run(finish(a + variant_flags("cpu214")) + [ctl], root)
    ok = rc113 == 0 and rc2 != 0 and "ProcessGroup" in log2
    print(f"[lt2] negative control 2 (1.13-only c10d call): 1.13 {'compiles' if rc113 == 0 else 'FAILS'}, "
          f"2.14 {'fails as it should' if rc2 != 0 else 'DOES NOT FAIL'}")
    if not ok:
        print(log113[-3000:], log2[-3000:]); failed = True

def fmtpip_units():
    """fmtpip: negative control 3, then the units: a probe (spdlog + the wheel's fmt-using headers), and the
    spdlog/fmt users among the torch-free units (YOLO11_LIBTORCH2_FMTPIP=all: every spdlog/fmt unit).
    Returns ([(label, directory, base args with TORCH_SLOT, uses_pch, file)], ok)."""
    ok = True
    lib_a, _ = base_args(lib_entry, slot=True)
    pin = pin_dir(lib_a)
    want = fmt_version(pin) if pin else None
    print(f"[lt2] fmtpip: wheel include root {wheel_inc} (fmt {fmt_version(wheel_inc)}); the build's fmt pin: "
          f"{pin + f' (fmt {want})' if pin else 'NONE (no -isystem <build>/yolo11-fmt-pin: cmake/FmtPin.cmake)'}",
          flush=True)
    if not pin: ok = False
    # negative control 3: without the pin, against the wheel, (a) a real spdlog unit must fail in spdlog/fmt, and (b) a real unit using fmt alone, which compiles, must not link with spdlog's libfmt (the
    # wheel's fmt::v12 symbols); with the pin the same object links
    ctl_a = os.path.join(root, "src", "config", "config_keys.cpp")
    ctl_b = os.path.join(root, "src", "instrument", "stats.cpp")
    main_cpp = os.path.join(work, "fmtpip_main.cpp")
    with open(main_cpp, "w") as fh:
        fh.write("int main() { return 0; }\n")
    def obj(a, src, o):  # an object of src with the fmtpip line of flags a (-O0: only the symbols matter)
        args = [x for x in line("fmtpip", a) if x != "-fsyntax-only"] + ["-O0", "-g0", "-c", src, "-o", o]
        return run(args, lib_entry["directory"])
    def link(objs, exe):
        return run([lib_a[0]] + objs + ["-lfmt", "-o", exe], work)
    with ThreadPoolExecutor(jobs) as ex:
        f3a = ex.submit(run, line("fmtpip", unpinned(lib_a)) + [ctl_a], lib_entry["directory"])
        fb = [ex.submit(obj, a, ctl_b, os.path.join(work, f"stats_{n}.o")) for n, a in (("unpinned", unpinned(lib_a)), ("pinned", lib_a))]
        fm = ex.submit(obj, lib_a, main_cpp, os.path.join(work, "main.o"))
        rc3, log3 = f3a.result()
        (rcu, logu), (rcp, logp), (rcm, logm) = fb[0].result(), fb[1].result(), fm.result()
    err_a = next((l.split("error: ")[-1] for l in log3.splitlines() if re.search(r"error:.*\bfmt\b", l)), None)
    hit_a = rc3 != 0 and err_a is not None
    print(f"[lt2] negative control 3a (src/config/config_keys.cpp, spdlog, against the wheel without the fmt pin must "
          f"fail in spdlog/fmt): {'failed as it should: ' + err_a if hit_a else 'DID NOT FAIL AS EXPECTED'}", flush=True)
    if not hit_a:
        print(log3[-3000:]); ok = False
    if rcu or rcp or rcm:
        print(f"[lt2] negative control 3b: objects FAILED to compile\n{(logu + logp + logm)[-3000:]}"); ok = False
    else:
        rlu, llu = link([os.path.join(work, "stats_unpinned.o"), os.path.join(work, "main.o")], os.path.join(work, "l_unpinned"))
        rlp, llp = link([os.path.join(work, "stats_pinned.o"), os.path.join(work, "main.o")], os.path.join(work, "l_pinned"))
        ver = fmt_version(wheel_inc)
        hit_b = rlu != 0 and f"undefined reference to `fmt::v{ver // 10000 if ver else ''}" in llu and rlp == 0
        print(f"[lt2] negative control 3b (src/instrument/stats.cpp, fmt alone, compiles against the wheel without the "
              f"pin but must not link with -lfmt: undefined fmt::v{ver // 10000 if ver else '?'} symbols; pinned it links): "
              f"unpinned {'fails to link as it should' if rlu else 'LINKS'}, pinned {'links' if rlp == 0 else 'FAILS TO LINK'}",
              flush=True)
        if not hit_b:
            print(llu[-2000:], llp[-2000:]); ok = False
    # the probe: spdlog, and every header of the wheel that includes <fmt/...> (not the CUDA/HIP/MPS/XPU/Python ones)
    skip = re.compile(r"(^|/)(cuda|hip|mps|xpu|mtia|nccl\w*)/|python", re.I)
    hdrs = []
    for d, dirs, files in os.walk(wheel_inc):
        rel_d = os.path.relpath(d, wheel_inc)
        if rel_d == "fmt" or rel_d.startswith("fmt/"): dirs[:] = []; continue
        for f in files:
            rel = os.path.normpath(os.path.join(rel_d, f))
            if f.endswith((".h", ".hpp")) and not skip.search(rel) and \
               re.search(r'^\s*#\s*include\s*[<"]fmt/', open(os.path.join(d, f), errors="replace").read(), re.M):
                hdrs.append(rel)
    probe = os.path.join(work, "fmtpip_probe.cpp")
    with open(probe, "w") as fh:
        fh.write("// fmtpip probe: spdlog and every wheel header that includes <fmt/...>, against the build's fmt pin.\n"
                 "#include <spdlog/spdlog.h>\n#include <spdlog/fmt/ranges.h>\n#include <fmt/format.h>\n"
                 "#include <string>\n#include <vector>\n"
                 + "".join(f"#include <{h}>\n" for h in sorted(hdrs))
                 + f"#if FMT_VERSION != {want or 0}\n#error \"the fmt seen is not the build's pinned fmt ({want})\"\n#endif\n"
                 "std::string yolo11_fmt_probe() {\n  spdlog::info(\"{} {}\", 1, std::string(\"x\"));\n"
                 "  return fmt::format(\"{}\", fmt::join(std::vector<int>{1, 2}, \",\"));\n}\n")
    print(f"[lt2] fmtpip: probe unit: spdlog + the {len(hdrs)} wheel headers that include <fmt/...>: {' '.join(sorted(hdrs))}",
          flush=True)
    units = [("fmtpip probe (spdlog + the wheel's fmt-using headers)", lib_entry["directory"], lib_a, False, probe)]
    scope = os.environ.get("YOLO11_LIBTORCH2_FMTPIP", "torchfree")
    for e in entries:
        a, uses_pch = base_args(e, slot=True)
        if (scope == "all" or not uses_pch) and any(sensitive(os.path.realpath(src), FMT_LINE) for src in sources_of(e)):
            units.append((os.path.relpath(e["file"], root), e["directory"], a, uses_pch, e["file"]))
    print(f"[lt2] fmtpip: {len(units) - 1} {'' if scope == 'all' else 'torch-free '}units using spdlog/fmt"
          f"{'' if scope == 'all' else ' (YOLO11_LIBTORCH2_FMTPIP=all: every unit using spdlog/fmt, with a 2.15 PCH)'}",
          flush=True)
    return units, ok

for v in variants:
    if v == "cuda26" and not os.path.exists(os.path.join(cuda_inc, "cuda_runtime_api.h")):
        print(f"[lt2] {v}: SKIPPED: no CUDA headers in {cuda_inc}"); continue
    t = time.time()
    if v == "fmtpip":
        units, ok = fmtpip_units()
        failed |= not ok
    else:
        todo = entries
        if v == "cuda26" and cuda_scope != "all":
            todo = cuda_entries()
        units = [(os.path.relpath(e["file"], root), e["directory"]) + base_args(e, slot=True) + (e["file"],) for e in todo]
    ph = None
    if any(u[3] for u in units):
        # precompiled header: include/yolo11/pch.h with the library's flags
        pdir = os.path.join(work, "pch-" + v); os.makedirs(pdir, exist_ok=True)
        ph = os.path.join(pdir, "yolo11_pch.h")
        with open(ph, "w") as fh:
            fh.write(f'#include "{os.path.join(root, "include", "yolo11", "pch.h")}"\n')
        a, _ = base_args(lib_entry, slot=True)
        args = [x for x in line(v, a) if x != "-fsyntax-only"] + ["-x", "c++-header", ph, "-o", ph + ".gch"]
        rc, log = run(args, lib_entry["directory"])
        if rc != 0:
            print(f"[lt2] {v}: precompiled header FAILED\n{log[-6000:]}"); failed = True; continue
    if v == "cuda26" and cuda_scope != "all":
        print(f"[lt2] {v}: the {len(units)} units with CUDA/NCCL preprocessor lines: "
              f"{' '.join(u[0] for u in units)} (YOLO11_LIBTORCH2_CUDA26=all: every unit)", flush=True)
    def one(iu):
        i, (label, cwd, a, uses_pch, f) = iu
        extra = ["-include", ph, "-Winvalid-pch", "-Wno-error=invalid-pch"] if uses_pch else []
        if v != "fmtpip":
            return iu[1], run(line(v, a, extra) + [f], cwd)
        # fmtpip: the headers each unit read (-MD) must not include one of the wheel's fmt/ (the pin's job)
        dep = os.path.join(work, f"fmtpip_{i}.d")
        rc, log = run(line(v, a, extra + ["-MD", "-MF", dep]) + [f], cwd)
        if rc == 0:
            read = {os.path.realpath(os.path.join(cwd, x)) for x in open(dep).read().replace("\\\n", " ").split()[1:]}
            bad_fmt = sorted(x for x in read if x.startswith(wheel_fmt))
            if bad_fmt:
                rc, log = 1, log + f"reads the wheel's fmt (not the build's fmt pin): {' '.join(bad_fmt)}\n"
        return iu[1], (rc, log)
    bad = 0
    with ThreadPoolExecutor(jobs) as ex:
        for u, (rc, log) in ex.map(one, enumerate(units)):
            warn = [l for l in log.splitlines() if "warning:" in l and "invalid-pch" not in l and ".gch" not in l]
            if rc != 0 or warn:
                bad += 1
                print(f"[lt2] {v}: {'FAILED' if rc else 'warnings'}: {u[0]}\n{log[-4000:]}", flush=True)
    print(f"[lt2] {v}: {len(units) - bad}/{len(units)} translation units clean ({time.time() - t:.0f} s)", flush=True)
    failed |= bad > 0
sys.exit(1 if failed else 0)
PY
echo "[lt2] fetch $((t1 - t0)) s, total $(( $(date +%s) - t0 )) s"
exit $rc
