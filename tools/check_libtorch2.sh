#!/usr/bin/env bash
# Compile check against LibTorch 2.x (issue 12): every translation unit of the real build (library, apps,
# tests, benchmarks, as listed in BUILD_DIR/compile_commands.json: the unity batches when YOLO11_UNITY_BUILD is on,
# which cover every source that uses LibTorch) is compiled with -fsyntax-only against
#   cpu214   Debian's libtorch-dev 2.14 (unstable), C++20                     (LibTorch >= 2.13 needs C++20)
#   cuda26   Debian's libtorch-cuda-dev 2.6 (trixie contrib), C++17, YOLO11_HAS_CUDA/NCCL on, CUDA headers
#            from /usr/local/cuda (skipped with a message when they are absent); by default only the sources with
#            CUDA/NCCL preprocessor lines (in themselves or their project headers), YOLO11_LIBTORCH2_CUDA26=all: all
# with the build's own flags and -Werror. Debian's 1.13 headers (/usr/include/{ATen,c10,caffe2,torch}) are kept
# out of the include path: /usr/include is replaced by a symlink overlay without them (-nostdinc + gcc's own
# search list). A precompiled header of include/yolo11/pch.h is built per variant.
# Negative controls (run first; the check fails unless they fail as they should):
#   1. a real TU (src/dist/dist.cpp) against 2.14 with -std=c++17 must stop at ATen's "C++20" #error — proves the
#      2.x headers, not 1.13's, are the ones read;
#   2. a 1.13-only call (ProcessGroupGloo used as a c10d::ProcessGroup; 2.x derives it from c10d::Backend) must
#      compile against the system's 1.13 and fail against 2.14.
#
#   tools/check_libtorch2.sh [BUILD_DIR]          (default: build; needs a configured BUILD_DIR)
# Environment: YOLO11_LIBTORCH2_CACHE  where .debs and unpacked headers are kept (default
#              ${XDG_CACHE_HOME:-~/.cache}/yolo11-cpp/libtorch2; reused across clones; safe to delete)
#              YOLO11_LIBTORCH2_VARIANTS  (default "cpu214 cuda26")   JOBS (default nproc)
#              YOLO11_CXX_LAUNCHER  prefix of every compile (e.g. a slot limiter), default none
# Downloads use apt-get with a private configuration (own sources.list, state and cache under the cache dir);
# the system's apt sources and state are never touched. Needs network access to deb.debian.org only.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
CACHE=${YOLO11_LIBTORCH2_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/yolo11-cpp/libtorch2}
VARIANTS=${YOLO11_LIBTORCH2_VARIANTS:-cpu214 cuda26}
JOBS=${JOBS:-$(nproc)}
MIRROR=${YOLO11_DEBIAN_MIRROR:-http://deb.debian.org/debian}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$BUILD_DIR/compile_commands.json" ] || { echo "[lt2] $BUILD_DIR/compile_commands.json missing: configure first (tools/setup.sh)" >&2; exit 2; }
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
for v in $VARIANTS; do
  [ -n "${PKG[$v]:-}" ] || { echo "[lt2] unknown variant $v (known: ${!PKG[*]})" >&2; exit 2; }
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
for v in $VARIANTS; do for n in $(ls "$CACHE/$v/usr/include"); do SKIP[$n]=1; done; done
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

def base_args(entry):
    """The entry's flags without output/input/pch/std/torch include dirs: [compiler, flags...], uses_pch."""
    a = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    out, i, uses_pch = [a[0]], 1, False
    while i < len(a):
        x = a[i]
        if x in ("-o", "-MF", "-MT", "-MQ"): i += 2; continue
        if x in ("-c", "-Winvalid-pch", "-MD", "-MMD"): i += 1; continue
        if x == "-include" and a[i + 1].endswith("cmake_pch.hxx"): uses_pch = True; i += 2; continue
        if x == "-isystem" and a[i + 1].startswith("/usr/include/torch"): i += 2; continue
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
INC_LINE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
inc_dirs = [os.path.join(root, "include"), os.path.join(root, build, "include"), os.path.join(root, "tests", "common")]
memo = {}
def cuda_sensitive(path, seen=()):
    if path in memo: return memo[path]
    if path in seen: return False
    text = open(path, errors="replace").read()
    hit = bool(CUDA_LINE.search(text))
    for name in INC_LINE.findall(text):
        if hit: break
        for d in [os.path.dirname(path)] + inc_dirs:
            h = os.path.join(d, name)
            if os.path.isfile(h):
                hit = cuda_sensitive(os.path.realpath(h), seen + (path,)); break
    memo[path] = hit
    return hit
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

for v in variants:
    if v == "cuda26" and not os.path.exists(os.path.join(cuda_inc, "cuda_runtime_api.h")):
        print(f"[lt2] {v}: SKIPPED: no CUDA headers in {cuda_inc}"); continue
    t = time.time()
    vf = variant_flags(v)
    # precompiled header: include/yolo11/pch.h with the library's flags
    pdir = os.path.join(work, "pch-" + v); os.makedirs(pdir, exist_ok=True)
    ph = os.path.join(pdir, "yolo11_pch.h")
    with open(ph, "w") as fh:
        fh.write(f'#include "{os.path.join(root, "include", "yolo11", "pch.h")}"\n')
    a, _ = base_args(lib_entry)
    args = finish(a + vf)
    args = [x for x in args if x != "-fsyntax-only"] + ["-x", "c++-header", ph, "-o", ph + ".gch"]
    rc, log = run(args, lib_entry["directory"])
    if rc != 0:
        print(f"[lt2] {v}: precompiled header FAILED\n{log[-6000:]}"); failed = True; continue
    todo = entries
    if v == "cuda26" and cuda_scope != "all":
        todo = cuda_entries()
        print(f"[lt2] {v}: the {len(todo)} units with CUDA/NCCL preprocessor lines: "
              f"{' '.join(os.path.relpath(e['file'], root) for e in todo)} (YOLO11_LIBTORCH2_CUDA26=all: every unit)",
              flush=True)
    def one(e):
        a, uses_pch = base_args(e)
        extra = ["-include", ph, "-Winvalid-pch", "-Wno-error=invalid-pch"] if uses_pch else []
        return e, run(finish(a + vf + extra) + [e["file"]], e["directory"])
    bad = 0
    with ThreadPoolExecutor(jobs) as ex:
        for e, (rc, log) in ex.map(one, todo):
            rel = os.path.relpath(e["file"], root)
            warn = [l for l in log.splitlines() if "warning:" in l and "invalid-pch" not in l and ".gch" not in l]
            if rc != 0 or warn:
                bad += 1
                print(f"[lt2] {v}: {'FAILED' if rc else 'warnings'}: {rel}\n{log[-4000:]}", flush=True)
    print(f"[lt2] {v}: {len(todo) - bad}/{len(todo)} translation units clean ({time.time() - t:.0f} s)", flush=True)
    failed |= bad > 0
sys.exit(1 if failed else 0)
PY
echo "[lt2] fetch $((t1 - t0)) s, total $(( $(date +%s) - t0 )) s"
exit $rc
