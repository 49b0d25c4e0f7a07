#!/usr/bin/env bash
# libFuzzer runs of the parsers of user-supplied files (docs/fuzzing.md): label files, image list files, dataset
# YAMLs, config key=value lines and config files, safetensors, zip datasets, pickles, .pt checkpoints and raw HTTP
# requests to the /metrics server. Targets: fuzz/targets/*.cpp over the entries of fuzz/entries.h, built with clang
# (ASan + UBSan, coverage on the parser sources only) by fuzz/CMakeLists.txt into build-fuzz/.
#   tools/fuzz.sh build                  configure (clang) and build the targets
#   tools/fuzz.sh ci                     build, then every target for FUZZ_CI_SECONDS (default 28) s, two at a time:
#                                        the ten targets take at most 3 min of wall time together; libFuzzer's
#                                        -seed=1 (FUZZ_SEED), so every CI run tries the same mutation sequence
#   tools/fuzz.sh long [SECONDS]         build, then every target for SECONDS (default 600) s, two at a time
#   tools/fuzz.sh run TARGET SECONDS     build, then one target
# FUZZ_TARGETS="labels pt" limits ci/long to those targets; FUZZ_JOBS (default 2) runs that many at a time.
# Each run starts from its corpus in build-fuzz/corpus/<target> (kept between runs), merged with the committed seeds
# (fuzz/seeds/<target>), the regression inputs (fuzz/regressions/<target>) and the tests' fixtures (configs/*.yaml,
# the datasets' label files, ../shared/golden's small safetensors), with its dictionary (fuzz/dict; the config
# targets get every key of configs/default.yaml). Limits that make a finding of a slow or greedy input: -timeout=10
# (s per input), -rss_limit_mb=3072, -malloc_limit_mb=1024 (one allocation). Per target it prints executions,
# exec/s, cov and ft (libFuzzer's edge and feature counts at the end), corpus size and findings; the findings
# (crash-*, leak-*, timeout-*, oom-*) are in build-fuzz/findings/<target>/, the log in build-fuzz/logs/<target>.log;
# the run prints each finding's message, stack top and first bytes (a CI log shows what was found, not only a count).
# libFuzzer's -seed fixes the mutation sequence but not what it learns from comparisons (addresses differ per run),
# so two runs of one commit may find different inputs.
# Exit status 1 when any target found something. A finding, once fixed, goes to fuzz/regressions/<target>/ (replayed
# by the gcc test suite: tests/fuzz/test_fuzz_replay.cpp).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-ci}
OUT=build-fuzz
TARGETS=(${FUZZ_TARGETS:-labels list_file dataset_yaml config_kv config_yaml safetensors zip pickle pt metrics_http})
JOBS=${FUZZ_JOBS:-2}
SUPP=$PWD/tools/sanitizers  # the suppressions of tools/sanitize.sh (code we do not own, each with its reason)
export ASAN_OPTIONS="detect_leaks=1:suppressions=$SUPP/asan.supp"
export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$SUPP/ubsan.supp"

build() {
  command -v clang++ >/dev/null && ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 ||
    { echo "[fuzz] clang and libFuzzer are missing: apt-get install clang libclang-rt-14-dev" >&2; exit 2; }
  local torch=${YOLO11_LIBTORCH:-}
  if [ -z "$torch" ] && [ -f build/CMakeCache.txt ]; then
    torch=$(sed -n 's/^YOLO11_LIBTORCH:PATH=//p' build/CMakeCache.txt)
  fi
  [ -n "$torch" ] || torch=$(tools/fetch_libtorch.sh)
  if [ ! -f $OUT/build.ninja ]; then
    CC=clang CXX=clang++ cmake -S fuzz -B $OUT -G Ninja -DYOLO11_LIBTORCH="$torch" >/dev/null
  fi
  # quiet when it builds; the compiler's or linker's messages when it does not
  nice -n 5 ninja -C $OUT -j"$(nproc)" >$OUT/build.log 2>&1 ||
    { grep -E -A12 '^FAILED|error' $OUT/build.log | head -80 >&2; echo "[fuzz] build failed: $OUT/build.log" >&2; exit 1; }
}

# The corpus of one target before a run: committed seeds, regression inputs and the tests' fixtures.
seed() {
  local t=$1 c=$OUT/corpus/$1 f
  mkdir -p "$c" $OUT/findings/"$t" $OUT/logs $OUT/dict
  for d in fuzz/seeds/"$t" fuzz/regressions/"$t"; do [ -d "$d" ] && cp -n "$d"/* "$c"/ 2>/dev/null || true; done
  case $t in
    labels) for f in $(find datasets/*/labels -name '*.txt' 2>/dev/null | sort | head -50); do
              cp -n "$f" "$c/$(echo "$f" | tr / _)"; done ;;
    dataset_yaml) for f in configs/*.yaml configs/datasets/*.yaml; do cp -n "$f" "$c/$(echo "$f" | tr / _)"; done ;;
    config_yaml) cp -n configs/default.yaml "$c"/ ;;
    safetensors) for f in ../shared/golden/*.safetensors; do
                   [ -f "$f" ] && [ "$(stat -c %s "$f")" -lt 200000 ] && cp -n "$f" "$c"/; done ;;
  esac
  return 0
}

dict() {
  case $1 in
    labels|list_file) echo "" ;;
    dataset_yaml) echo fuzz/dict/yaml.dict ;;
    config_kv|config_yaml)
      { cat fuzz/dict/yaml.dict
        sed -n 's/^\([a-z_0-9]*\):.*/\1/p' configs/default.yaml |
          while read -r k; do
            if [ "$1" = config_kv ]; then echo "\"$k=\""; else echo "\"$k: \""; fi
          done; } > $OUT/dict/"$1".dict
      echo $OUT/dict/"$1".dict ;;
    safetensors) echo fuzz/dict/safetensors.dict ;;
    zip) echo fuzz/dict/zip.dict ;;
    pickle) echo fuzz/dict/pickle.dict ;;
    pt) cat fuzz/dict/zip.dict fuzz/dict/pickle.dict > $OUT/dict/pt.dict; echo $OUT/dict/pt.dict ;;
    metrics_http) echo fuzz/dict/http.dict ;;
  esac
}

run_one() {  # TARGET SECONDS
  local t=$1 s=$2 d
  seed "$t"
  d=$(dict "$t")
  local args=(-max_total_time="$s" -timeout=10 -rss_limit_mb=3072 -malloc_limit_mb=1024 -print_final_stats=1
              -artifact_prefix=$OUT/findings/"$t"/ -close_fd_mask=1)
  [ -n "$d" ] && args+=(-dict="$d")
  [ -n "${FUZZ_SEED:-}" ] && args+=(-seed="$FUZZ_SEED")  # ci: one fixed mutation sequence, the same on every run
  # pt/pickle seeds reach 240 kB; the others stay small, as the parsers' real inputs
  case $t in pt|pickle) args+=(-max_len=300000) ;; *) args+=(-max_len=8192) ;; esac
  TMPDIR=$OUT/tmp/$t; mkdir -p "$TMPDIR"; export TMPDIR
  $OUT/fuzz_"$t" "${args[@]}" $OUT/corpus/"$t" >$OUT/logs/"$t".log 2>&1 || true  # findings: counted by report
  rm -rf "$TMPDIR"
  return 0
}

report() {  # TARGET
  local t=$1 log=$OUT/logs/$1.log last execs rate cov ft corp found
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
  ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
  corp=$(ls $OUT/corpus/"$t" | wc -l)
  found=$(ls $OUT/findings/"$t" | wc -l)
  printf '%-13s %10s %8s %6s %6s %7s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$corp" "$found"
  [ "$found" -eq 0 ]
}

# What a target found, on stderr, so that a CI log shows it without the build tree: the sanitizer's or the entry's
# own message, the stack frames in project code, libFuzzer's Base64 of the input, and the first 256 bytes of each
# finding (od -c).
explain() {  # TARGET
  local t=$1 f
  [ -n "$(ls $OUT/findings/"$t")" ] || return 0
  {
    echo "[fuzz] $t:"
    grep -E '^==[0-9a-z-]+==|^SUMMARY:|^Base64:|^ +#[0-9]+ .*(/src/|/fuzz/|/include/yolo11/)' $OUT/logs/"$t".log |
      head -24 | cut -c1-400
    for f in $(ls $OUT/findings/"$t" | head -2); do
      echo "  $f ($(stat -c %s $OUT/findings/"$t"/"$f") bytes):"
      head -c 256 $OUT/findings/"$t"/"$f" | od -A d -c | sed 's/^/    /'
    done
  } >&2
}

run_all() {  # SECONDS
  local s=$1 t running=0
  local start=$(date +%s)
  for t in "${TARGETS[@]}"; do
    run_one "$t" "$s" &
    running=$((running + 1))
    if [ $running -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
  done
  wait || true
  echo "[fuzz] ${#TARGETS[@]} targets, $s s each, $JOBS at a time: $(( $(date +%s) - start )) s wall"
  printf '%-13s %10s %8s %6s %6s %7s %8s\n' target execs exec/s cov ft corpus findings
  local bad=0
  for t in "${TARGETS[@]}"; do report "$t" || bad=1; done
  [ $bad -eq 0 ] && return 0
  for t in "${TARGETS[@]}"; do explain "$t"; done
  echo "[fuzz] findings: see build-fuzz/findings/<target>/ and build-fuzz/logs/<target>.log" >&2
  exit 1
}

case $MODE in
  build) build ;;
  ci) build; FUZZ_SEED=${FUZZ_SEED:-1} run_all "${FUZZ_CI_SECONDS:-28}" ;;
  long) build; run_all "${2:-600}" ;;
  run) build; TARGETS=("$2"); run_all "${3:-60}" ;;
  *) sed -n '2,/^set -euo/p' "$0" | grep '^#' >&2; exit 2 ;;
esac
