#!/usr/bin/env bash
# `icsim bench scale`: the quick cases still run (a case whose command icsim refuses shows as
# "failed", as llama405b-16k did once the memory check refused its layout). Their wall times
# are the bench's to print, not this test's to judge.
#   tests/bench_scale_cases.sh ICSIM_BINARY
set -u
icsim=$1
fails=0
for c in dp128-train llama405b-16k llama405b-16k-packet; do
    out=$("$icsim" bench scale --case "$c" --limit 120 2>&1) || { echo "FAIL: $c exited $?"; fails=$((fails + 1)); continue; }
    line=$(echo "$out" | grep "^$c ")
    if [ -z "$line" ] || echo "$line" | grep -q "failed"; then
        echo "FAIL: $c: $line"
        fails=$((fails + 1))
    fi
done
[ "$fails" -eq 0 ] && echo "bench_scale_cases: ok"
exit $((fails > 0))
