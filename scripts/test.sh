#!/usr/bin/env bash
# Install what is missing, build (warnings are errors), run the whole suite through ctest, then
# the same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
#   scripts/test.sh           everything (what CI runs)
#   scripts/test.sh --quick   skip tests labelled "slow" and the sanitizer build
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
quick=0
[ "${1:-}" = "--quick" ] && quick=1
ics_setup_packages
jobs=$(nproc)
ics_build build -DICS_WERROR=ON
if [ $quick -eq 1 ]; then
    ctest --test-dir build --output-on-failure -j "$jobs" -LE slow
    exit 0
fi
ctest --test-dir build --output-on-failure -j "$jobs"
ics_build build-asan -DICS_WERROR=ON -DICS_SANITIZE=ON -DICS_FUZZ=ON -DCMAKE_C_COMPILER=clang \
          -DCMAKE_CXX_COMPILER=clang++
ctest --test-dir build-asan --output-on-failure -j "$jobs"
