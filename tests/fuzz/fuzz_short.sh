#!/usr/bin/env bash
# A short libFuzzer run, as the *_short ctests (label "slow") make it: a fresh corpus in WORK_DIR
# from the seeds (the source tree is never written), SECONDS of fuzzing, artifacts (crash-*,
# leak-*, timeout-*, oom-*) left in WORK_DIR.
#   tests/fuzz/fuzz_short.sh BINARY WORK_DIR SECONDS SEED... [-- libFuzzer options...]
# A SEED is a directory (all its files) or DIR/PATTERN (e.g. scenarios/*.json, unexpanded).
# On a finding the whole log is printed, then last a summary: the target's own words (its
# harness prints "fuzz_NAME: what: detail" before it aborts), the sanitizer's summary, and the
# input in base64. Last, because CI keeps the tail of a long log: a finding must be readable
# and reproducible from there alone (base64 -d > input; BINARY input).
set -u
bin=$(realpath "$1") work=$(realpath -m "$2") secs=$3
shift 3
seeds=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    seeds+=("$1")
    shift
done
[ $# -gt 0 ] && shift
mkdir -p "$work"
rm -rf "$work/corpus" "$work/log" "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*
mkdir -p "$work/corpus"
for s in "${seeds[@]}"; do
    if [ -d "$s" ]; then
        find "$s" -maxdepth 1 -type f -exec cp {} "$work/corpus/" \;
    else
        find "$(dirname "$s")" -maxdepth 1 -type f -name "$(basename "$s")" \
            -exec cp {} "$work/corpus/" \;
    fi
done
cd "$work" || exit 1
"$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -max_len=16384 \
    -artifact_prefix="$work/" -print_final_stats=1 "$@" "$work/corpus" >"$work/log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
    tail -n 12 "$work/log"
    exit 0
fi
cat "$work/log"
echo "==== $(basename "$bin"): libFuzzer exited $rc. The finding:"
grep -E '^fuzz_[a-z_]+: |ERROR: |SUMMARY: |runtime error: ' "$work/log" | head -n 8
for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
    [ -f "$f" ] || continue
    echo "$(basename "$f"): $(wc -c <"$f") bytes, base64 (first 3 KiB):"
    head -c 3072 "$f" | base64 -w 120
done
exit $rc
