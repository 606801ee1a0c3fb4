#!/usr/bin/env bash
# Fuzzes the hardware-model reader for a while: a fresh copy of the seed corpus (tests/fuzz/corpus
# and the tests/bad-input cases) in WORK_DIR, so the source tree is never written. Crashes, leaks
# and slow inputs are left in WORK_DIR as crash-*/leak-*/timeout-* files (fuzz_short.sh).
#   tests/fuzz/run_fuzz.sh FUZZ_HW_BINARY TESTS_DIR WORK_DIR [SECONDS] [libFuzzer options...]
set -eu
bin=$1 tests=$2 work=$3 secs=${4:-30}
shift $(($# < 4 ? $# : 4))
exec "$(dirname "$0")/fuzz_short.sh" "$bin" "$work" "$secs" "$tests/fuzz/corpus" \
    "$tests/bad-input/*.json" "$tests/bad-input/ok/*.json" -- -dict="$tests/fuzz/hw.dict" "$@"
