#!/usr/bin/env bash
# `icsim sweep`: the same bytes on 1 and 2 threads, on stdout and in files, in one process and in
# two (mpirun -n 2, where icsim was built with MPI); an interrupted run resumed to the same
# bytes; bad input refused (exit 2, nothing on stdout, file:line:col on stderr); the shipped
# study of the README's tour.
#   tests/cli_sweep.sh ICSIM_BINARY SOURCE_DIR MPI(0|1)
set -u
icsim=$1
src=$(cd "$2" && pwd)
mpi=${3:-0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() {
    echo "FAIL: $1" >&2
    fails=$((fails + 1))
}

cat >"$tmp/study.json" <<JSON
{"kind": "study", "name": "cli test", "system": "$src/hwmodels/dgx-h100.json",
 "collective": {"op": "all_reduce", "min_bytes": "1M", "max_bytes": "256M", "factor": 4},
 "axes": [{"name": "failure", "fail": ["", "nvswitch:nvsw0", "nvswitch:nvsw1"]},
          {"nvls": [true, false]},
          {"engine": ["analytic", "packet"]}]}
JSON

"$icsim" sweep "$tmp/study.json" -o "$tmp/j1" -j 1 -q >"$tmp/out" 2>"$tmp/err" ||
    fail "-j 1 exited $?: $(cat "$tmp/err")"
[ -s "$tmp/out" ] && fail "-o wrote to stdout"
"$icsim" sweep "$tmp/study.json" -o "$tmp/j2" -j 2 -q || fail "-j 2 exited $?"
cmp -s "$tmp/j1.csv" "$tmp/j2.csv" || fail "CSV differs between 1 and 2 threads"
cmp -s "$tmp/j1.jsonl" "$tmp/j2.jsonl" || fail "JSON differs between 1 and 2 threads"
[ "$(wc -l <"$tmp/j1.csv")" = 61 ] || fail "expected a header and 12 x 5 rows"
grep -q ',error$' <(head -1 "$tmp/j1.csv") || fail "CSV header"
grep -q '"error"' "$tmp/j1.jsonl" && fail "a row failed"
python3 - "$tmp/j1.jsonl" <<'PY' || fail "JSON rows"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 60 and [r["config"] for r in rows[::5]] == list(range(12))
big = {(r["axes"]["failure"], r["axes"]["nvls"], r["axes"]["engine"]): r for r in rows
       if r["size_bytes"] == 268435456}
# one NVSwitch down costs bandwidth, nvsw1 (5 links) more than nvsw0 (4)
for nv in ("on", "off"):
    a, b, c = (big[(f, nv, "analytic")]["busbw_gbps"] for f in
               ("none", "nvswitch:nvsw0", "nvswitch:nvsw1"))
    assert a > b > c, (nv, a, b, c)
assert big[("none", "off", "analytic")]["algo"] == "Ring"
assert big[("nvswitch:nvsw1", "off", "analytic")]["channels"] == 22
PY

# without output files: the CSV on stdout, the same bytes
"$icsim" sweep "$tmp/study.json" -q >"$tmp/stdout.csv" || fail "stdout run exited $?"
cmp -s "$tmp/stdout.csv" "$tmp/j1.csv" || fail "stdout CSV differs from the file"

# interrupted: the CSV cut inside configuration 5, the JSON one row into configuration 3
head -c $(($(head -n 28 "$tmp/j1.csv" | wc -c) + 7)) "$tmp/j1.csv" >"$tmp/r.csv"
head -n 16 "$tmp/j1.jsonl" >"$tmp/r.jsonl"
"$icsim" sweep "$tmp/study.json" -o "$tmp/r" -j 2 2>"$tmp/err" || fail "resume exited $?"
grep -q '9 configurations run, 3 found done' "$tmp/err" || fail "resume: $(cat "$tmp/err")"
cmp -s "$tmp/r.csv" "$tmp/j1.csv" || fail "resumed CSV differs"
cmp -s "$tmp/r.jsonl" "$tmp/j1.jsonl" || fail "resumed JSON differs"

# MPI: two processes, the single process's bytes (Open MPI refuses root without the flag).
# Open MPI keeps allocations past MPI_Finalize, which LeakSanitizer would report as ours in
# the sanitizer build: leak checking is off for these runs only.
asan_options=${ASAN_OPTIONS-}
if [ "$mpi" = 1 ] && command -v mpirun >/dev/null; then
    export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
    mpirun -n 2 --allow-run-as-root --oversubscribe "$icsim" sweep "$tmp/study.json" \
        -o "$tmp/m" -j 1 -q >"$tmp/out" 2>"$tmp/err" || fail "mpirun -n 2 exited $?: $(cat "$tmp/err")"
    cmp -s "$tmp/m.csv" "$tmp/j1.csv" || fail "mpirun CSV differs"
    cmp -s "$tmp/m.jsonl" "$tmp/j1.jsonl" || fail "mpirun JSON differs"
    # and resumed under MPI
    head -n 20 "$tmp/j1.csv" >"$tmp/m.csv"
    head -n 30 "$tmp/j1.jsonl" >"$tmp/m.jsonl"
    mpirun -n 2 --allow-run-as-root --oversubscribe "$icsim" sweep "$tmp/study.json" \
        -o "$tmp/m" -j 1 -q || fail "mpirun resume exited $?"
    cmp -s "$tmp/m.csv" "$tmp/j1.csv" || fail "mpirun resumed CSV differs"
else
    echo "mpirun test skipped (icsim built without MPI, or no mpirun)"
fi
export ASAN_OPTIONS=$asan_options

# bad input: exit 2, nothing on stdout, the message on stderr
bad() { # expected-text args...
    local want=$1
    shift
    "$icsim" sweep "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    [ $rc = 2 ] || fail "sweep $*: exit $rc, expected 2"
    [ -s "$tmp/out" ] && fail "sweep $*: wrote to stdout"
    grep -qF -- "$want" "$tmp/err" || fail "sweep $*: expected '$want', got '$(cat "$tmp/err")'"
}
printf '{"kind": "study", "system": "x.json",\n "collective": {"op": "all_reduce"},\n "axes": [{"nodes": [2, -1]}]}\n' >"$tmp/bad.json"
bad "bad.json:3:25: \$.axes[0].nodes[1]: expected an integer in 1..1048576, got -1" "$tmp/bad.json"
bad "expected one STUDY.json" 
bad "--threads: expected an integer in 1..1024, got 0" "$tmp/study.json" -j 0
bad "-o" "$tmp/study.json" -o "$tmp/no/such/dir/x"
bad "expected -o PREFIX or --csv/--json, not both" "$tmp/study.json" -o "$tmp/x" --csv "$tmp/y"
cp "$tmp/j1.csv" "$tmp/other.csv"
sed 's/"all_reduce"/"all_gather"/' "$tmp/study.json" >"$tmp/other.json"
"$icsim" sweep "$tmp/other.json" --csv "$tmp/other.csv" -q 2>"$tmp/err"
[ $? = 2 ] && grep -q "not this study's" "$tmp/err" || fail "another study's CSV: $(cat "$tmp/err")"
cmp -s "$tmp/other.csv" "$tmp/j1.csv" || fail "another study's CSV was touched"

# the shipped study (README's tour)
"$icsim" sweep "$src/scenarios/whatif-superpod.json" -o "$tmp/tour" -q ||
    fail "scenarios/whatif-superpod.json exited $?"
[ "$(wc -l <"$tmp/tour.csv")" = 113 ] || fail "tour: expected a header and 16 x 7 rows"
grep -q '"error"' "$tmp/tour.jsonl" && fail "tour: a row failed"

# the shipped training study, and its picture
"$icsim" sweep "$src/scenarios/whatif-llama3-layouts.json" -o "$tmp/ll" -q --plot "$tmp/ll.svg" ||
    fail "scenarios/whatif-llama3-layouts.json exited $?"
[ "$(wc -l <"$tmp/ll.csv")" = 17 ] || fail "layouts: expected a header and 16 rows"
[ "$(grep -c 'split the fabric' "$tmp/ll.csv")" = 4 ] || fail "layouts: spine0 down without rails splits"
grep -q '<rect x=' "$tmp/ll.svg" || fail "layouts: no bars"
# memory per GPU (workload/memory.h): TP 4 leaves Llama 3 70B's first stage over 80 GB, so those
# rows say why instead of a step time (3 of 4: the fourth splits the fabric first); every row
# that ran fits
[ "$(grep -c 'does not fit: pipeline stage 0 needs' "$tmp/ll.csv")" = 3 ] ||
    fail "layouts: TP 4 x PP 4 over 80 GB per GPU"
python3 - "$tmp/ll.jsonl" <<'PY' || fail "layouts: memory_gb"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ran = [r for r in rows if "step_time_s" in r]
assert len(ran) == 9 and all(40 < r["memory_gb"] < 80 for r in ran), [r.get("memory_gb") for r in ran]
PY

# a study takes its base scenario's host (host_launch_us; docs/replay.md, "The host"): its row is
# what `icsim train` says of that scenario, which at 1 ms a launch is host-bound
sed -e "s|\"../hwmodels/|\"$src/hwmodels/|" -e 's|"kind": "training",|"kind": "training", "host_launch_us": 1000,|' \
    "$src/scenarios/llama3-70b-h100-64.json" >"$tmp/slowhost.json"
printf '{"kind": "study", "train": "slowhost.json", "axes": [{"mbs": [1]}]}\n' >"$tmp/slowhost-study.json"
"$icsim" sweep "$tmp/slowhost-study.json" -q >"$tmp/slowhost.csv" || fail "host study exited $?"
want=$("$icsim" train "$tmp/slowhost.json" | sed -n 's/^step time  *\([0-9.]*\) s$/\1/p')
fast=$("$icsim" train "$tmp/slowhost.json" --host-launch-us 10 | sed -n 's/^step time  *\([0-9.]*\) s$/\1/p')
got=$(python3 -c 'import csv,sys; print(next(csv.DictReader(open(sys.argv[1])))["step_time_s"])' \
    "$tmp/slowhost.csv")
[ -n "$want" ] && [ "$got" = "$want" ] || fail "host study: step $got, icsim train $want"
awk -v a="$want" -v b="$fast" 'BEGIN { exit !(a > b) }' || fail "host study: 1 ms launches $want, 10 us $fast"

# the shipped trace study: each row is what `icsim replay` says of the trace on that system
"$icsim" sweep "$src/scenarios/whatif-trace.json" -o "$tmp/tr" -q -j 2 --plot "$tmp/tr.svg" ||
    fail "scenarios/whatif-trace.json exited $?"
[ "$(wc -l <"$tmp/tr.csv")" = 7 ] || fail "trace study: expected a header and 6 rows"
for sys in dgx1-v100 dgx-a100 dgx-h100; do
    for eng in analytic packet; do
        want=$("$icsim" replay "$src/scenarios/traces/example.json" -s "$src/hwmodels/$sys.json" \
            --engine "$eng" | awk '/^step time/ {print $3}')
        got=$(awk -F, -v s="$sys" -v e="$eng" '$3 == s && $4 == e {print $14}' "$tmp/tr.csv")
        [ -n "$want" ] && [ "$got" = "$want" ] || fail "trace study $sys $eng: $got, replay says $want"
    done
done
grep -q '<rect x=' "$tmp/tr.svg" || fail "trace study: no bars"
"$icsim" sweep "$src/scenarios/whatif-trace.json" -q -j 1 >"$tmp/tr1.csv" || fail "trace study -j 1"
cmp -s "$tmp/tr1.csv" "$tmp/tr.csv" || fail "trace study: -j 1 and -j 2 differ"
printf '{"kind": "study", "trace": "nope.json", "system": "%s"}\n' "$src/hwmodels/dgx-h100.json" \
    >"$tmp/badtrace.json"
bad '$.trace: expected a trace: ' "$tmp/badtrace.json"
printf '{"kind": "study", "comm_groups": "g.json", "collective": {"op": "all_reduce"}, "system": "%s"}\n' \
    "$src/hwmodels/dgx-h100.json" >"$tmp/badgroups.json"
bad 'expected "comm_groups" only with a "trace"' "$tmp/badgroups.json"

# an all-to-all too big for the memory budget: its row says so, before anything is built
printf '{"kind": "study", "system": "%s", "nodes": 1024, "collective": {"op": "alltoall", "min_bytes": "1G", "max_bytes": "1G"}, "axes": [{"oversubscription": [1]}]}\n' \
    "$src/hwmodels/superpod-h100-ndr-3tier.json" >"$tmp/a2a.json"
timeout 20 "$icsim" sweep "$tmp/a2a.json" -q -j 1 >"$tmp/a2a.csv" 2>"$tmp/err" ||
    fail "a2a study exited $?: $(cat "$tmp/err")"
grep -q "alltoall on 8192 ranks: 67100672 pairs' legs of streams x 384 B: about 24.0 GiB, over the memory budget" \
    "$tmp/a2a.csv" || fail "a2a study: no budget refusal in its row: $(cat "$tmp/a2a.csv")"

[ $fails = 0 ] && echo "cli_sweep: all passed"
exit $((fails > 0))
