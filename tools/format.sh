#!/usr/bin/env bash
# The C++ lines changed since .clang-format came in are formatted by it (clang-format 14, Debian's clang-format
# package). Only changed lines are checked, so older code is reformatted as it is touched, never in bulk.
#   tools/format.sh          check: prints the changes clang-format wants and exits 1 when there are any
#   tools/format.sh --fix    rewrites those lines in the working tree
# FORMAT_BASE=<commit> compares against another commit (default: the commit that added .clang-format).
# Run by .ci/run; takes about a second.
set -euo pipefail
cd "$(dirname "$0")/.."
tool=$(command -v git-clang-format-14 || command -v git-clang-format || true)
binary=$(command -v clang-format-14 || command -v clang-format || true)
if [[ -z $tool || -z $binary ]]; then
  echo "tools/format.sh: clang-format not found: apt-get install clang-format (tools/setup.sh installs it)" >&2
  exit 1
fi
base=${FORMAT_BASE:-$(git log --diff-filter=A --format=%H -- .clang-format | tail -n 1)}
if [[ -z $base ]]; then base=HEAD; fi
if [[ ${1:-} == --fix ]]; then
  "$tool" --binary "$binary" --extensions h,cpp,cu --force "$base" || true
  exit 0
fi
out=$("$tool" --binary "$binary" --extensions h,cpp,cu --diff "$base" 2>&1 || true)
if [[ -z $out || $out == *"no modified files to format"* || $out == *"clang-format did not modify any files"* ]]; then
  echo "tools/format.sh: the C++ lines changed since ${base:0:10} are formatted (.clang-format)"
  exit 0
fi
echo "$out"
echo "tools/format.sh: the lines above are not formatted as .clang-format says; tools/format.sh --fix rewrites them" >&2
exit 1
