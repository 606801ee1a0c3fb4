#!/usr/bin/env bash
# The bad-input rule for limits (docs/limits.md, "Simulated time and memory"): inputs each in
# their reader's range that together pass the simulator's horizon (2^62 ps, 53.4 days), or that
# would build more than the memory budget (8 GiB, ICSIM_MAX_MEMORY), exit with status 2, write
# nothing to stdout, and say why on stderr: the op, model block or collective that passes the
# horizon, or the estimate. Never an assertion, an allocation abort or a multi-GB run: every
# input is refused before it is built, so every case takes well under a second. Big inputs are
# made here (sparse files, generated traces), never committed.
#   tests/cli_bad_input_limits.sh ICSIM_BINARY SOURCE_DIR
set -u
icsim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
out=$tmp/out err=$tmp/err
fails=0 cases=0
horizon="past the simulator's horizon of 53.4 days (2^62 ps) (docs/limits.md)"

fail() {
    echo "FAIL $1: $2" >&2
    sed 's/^/  stderr: /' "$err" >&2
    fails=$((fails + 1))
}

# bad NAME EXPECTED [VAR=VALUE...] COMMAND ARGS...: exit 2, empty stdout, EXPECTED on stderr,
# within 10 s (a refusal comes before any work)
bad() {
    local name=$1 want=$2
    shift 2
    cases=$((cases + 1))
    timeout 10 env "$@" >"$out" 2>"$err"
    local rc=$?
    if [ $rc -ne 2 ]; then
        fail "$name" "exit status $rc, expected 2"
    elif [ -s "$out" ]; then
        fail "$name" "wrote $(wc -c <"$out") bytes to stdout"
    elif ! grep -qF -- "$want" "$err"; then
        fail "$name" "stderr lacks: $want"
    elif [ "$(wc -l <"$err")" -ne 1 ]; then
        fail "$name" "expected one line on stderr"
    fi
}

# good NAME COMMAND ARGS...: the same inputs inside the limits run (exit 0, a report)
good() {
    local name=$1
    shift
    timeout 60 env "$@" >"$out" 2>"$err"
    local rc=$?
    if [ $rc -ne 0 ] || [ ! -s "$out" ]; then
        fail "$name" "exit status $rc and $(wc -c <"$out") bytes of output, expected 0 and some"
    fi
}

# ---- inputs ---------------------------------------------------------------------------------
# tests/bad-input/ok/node.json: 4 GPUs on an NVSwitch, PCIe, two NICs; slow.json: every lane at
# 0.001 Gb/s (the reader's least), one NVLink per GPU, x1 PCIe; slowgpu.json: 1e-9 TFLOP/s
node=$src/tests/bad-input/ok/node.json
sed -E -e 's/"lane_gbps": [0-9.]+/"lane_gbps": 0.001/' -e 's/"lanes": 2,/"lanes": 1,/' \
    -e 's/"nvlinks": 4/"nvlinks": 1/' -e 's/"count": 4/"count": 1/' \
    -e 's/"pcie_lanes": 16/"pcie_lanes": 1/' "$node" >slow.json
sed 's/"tflops": {"bf16": 1000, "fp8": 2000}/"tflops": {"bf16": 1e-9}/' "$node" >slowgpu.json
# a cluster the fat-tree fits at any size: 20000-port leaves, 3 tiers
sed 's/"ports": 64, "standard": "ndr"/"ports": 20000, "standard": "ndr"/' "$node" >bignode.json
cat >big.json <<'EOF'
{"kind": "cluster", "name": "big", "source": "tests", "node": "bignode.json", "nodes": 1048576,
 "fabric": {"topology": "fat-tree", "tiers": 3, "switch": "q2", "oversubscription": 1,
            "rail_optimized": false, "sharp": false}}
EOF
sed 's/"nodes": 1048576/"nodes": 8/' big.json >small.json
dgx=$src/hwmodels/dgx-h100.json

trace() { # trace FILE RANK_OPS...: a JSON trace, one argument per rank's op list; "w" is all
    local f=$1 sep=""
    shift
    {
        printf '{"format": "icsim-trace", "version": 1, "communicators": {"w": [%s]},' \
            "$(seq -s ', ' 0 $(($# - 1)))"
        printf ' "ranks": ['
        for ops in "$@"; do
            printf '%s{"ops": [%s]}' "$sep" "$ops"
            sep=", "
        done
        printf ']}\n'
    } >"$f"
}
long='{"op": "compute", "duration_us": 1e12, "name": "long"}' # 11.6 days, the reader's most
trace six-long.json "$long, $long, $long, $long, $long, $long"
trace four-long.json "$long, $long, $long, $long"
last='{"op": "compute", "duration_us": 1e12, "name": "last"}'
# a dependency chains the streams: 1 + 4 x 11.6 days
trace two-streams.json "{\"id\": \"a\", \"op\": \"compute\", \"duration_us\": 1e12, \
\"stream\": \"s\"}, {\"op\": \"compute\", \"duration_us\": 1e12, \"deps\": [\"a\"]}, $long, $long, $last"
sed -i 's/"ranks": \[{"ops"/"ranks": [{"streams": ["compute", "s"], "ops"/' two-streams.json
# a send/recv chains the ranks: 3 + 2 x 11.6 days
trace across-ranks.json "$long, $long, $long, {\"op\": \"send\", \"peer\": 1, \"bytes\": 8}" \
    "{\"op\": \"recv\", \"peer\": 0, \"bytes\": 8}, $long, $last"
trace flops.json '{"op": "compute", "flops": 1e24, "bytes": 0, "name": "huge"}'
trace gflop.json '{"op": "compute", "flops": 1e12, "bytes": 0, "name": "gemm"}'
ar='{"op": "all_reduce", "comm": "w", "bytes": 1099511627776, "name": "grad"}'
trace big-coll.json "$ar" "$ar" "$ar" "$ar"
trace big-send.json '{"op": "send", "peer": 1, "bytes": 1099511627776, "name": "act"}' \
    '{"op": "recv", "peer": 0, "bytes": 1099511627776, "name": "act"}'
# 20,000 small ops: about 15 MiB to read, far below the default budget
ops=$(printf '{"op": "compute", "duration_us": 1},%.0s' $(seq 19999))
trace ops20k.json "$ops {\"op\": \"compute\", \"duration_us\": 1}"

# an all-to-all on 4,096 ranks: 16.8 million transfers at once, refused before it is planned
{
    printf '{"format": "icsim-trace", "version": 1, "communicators": {"world": [0'
    for r in $(seq 1 4095); do printf ', %d' "$r"; done
    printf ']}, "ranks": ['
    for r in $(seq 0 4095); do
        [ "$r" -gt 0 ] && printf ', '
        printf '{"ops": [{"op": "alltoall", "comm": "world", "bytes": 1048576}]}'
    done
    printf ']}\n'
} >a2a4096.json

# Chakra: GlobalMetadata (empty), then COMP_NODEs of duration_micros 2^40 (the reader's most,
# 12.7 days): id N, type 4, duration (varint of 2^40)
chakra_long() { # chakra_long FILE N
    {
        printf '\x00'
        for i in $(seq "$2"); do printf "\x0b\x08\x0$i\x18\x04\x38\x80\x80\x80\x80\x80\x20"; done
    } >"$1"
}
chakra_long c5.0.et 5
chakra_long c4.0.et 4
head -c 1048576 /dev/zero >zeros.0.et # a million empty messages: a million nodes to unpack
truncate -s 2500M sparse.0.et         # 2.5 GB of nothing: more than a rank's file may be
truncate -s 1000M sparse1g.0.et
printf '{' >sparse.json # a JSON trace by its first byte, the rest a hole
truncate -s 2500M sparse.json
printf '{' >sparse1g5.json
truncate -s 1500M sparse1g5.json

# ---- simulated time: the op, the block or the collective that passes the horizon -------------
bad replay-durations "rank 0 op 4 (long): started at 4e+06 s, ends $horizon" \
    "$icsim" replay six-long.json -s "$dgx"
bad replay-durations-packet "rank 0 op 4 (long): started at 4e+06 s" \
    "$icsim" replay six-long.json -s "$dgx" --engine packet
bad replay-durations-two-streams "rank 0 op 4 (last): started at 4e+06 s, ends $horizon" \
    "$icsim" replay two-streams.json -s "$dgx"
bad replay-durations-across-ranks "rank 1 op 2 (last): started at 4e+06 s, ends $horizon" \
    "$icsim" replay across-ranks.json -s "$dgx"
bad replay-flops-1e24 "rank 0 op 0 (huge): compute time 1.47e+09 s on GPU h100-sxm exceeds the \
simulator's horizon of 53.4 days (2^62 ps) (docs/limits.md)" "$icsim" replay flops.json -s "$dgx"
bad replay-slow-gpu "rank 0 op 0 (gemm): compute time 1.18e+09 s on GPU g exceeds" \
    "$icsim" replay gflop.json -s slowgpu.json
bad replay-1tib-all-reduce-slow-lanes "rank 0 op 0 (grad): started at 0 s, ends $horizon" \
    "$icsim" replay big-coll.json -s slow.json
bad replay-1tib-all-reduce-packet "rank 0 op 0 (grad): started at 0 s, ends $horizon" \
    "$icsim" replay big-coll.json -s slow.json --engine packet
bad replay-1tib-all-reduce-shared "rank 0 op 0 (grad): started at 0 s, ends $horizon" \
    "$icsim" replay big-coll.json -s slow.json --collectives full
bad replay-1tib-all-reduce-packet-shared "rank 0 op 0 (grad): started at 0 s, ends $horizon" \
    "$icsim" replay big-coll.json -s slow.json --engine packet --collectives full
bad replay-1tib-send "rank 0 op 0 (act): started at 0 s, ends $horizon" \
    "$icsim" replay big-send.json -s slow.json
bad replay-1tib-send-packet "rank 0 op 0 (act): started at 0 s, ends $horizon" \
    "$icsim" replay big-send.json -s slow.json --engine packet
bad replay-chakra-durations "rank 0 op 4: started at 4.39805e+06 s, ends $horizon" \
    "$icsim" replay c5.0.et -s "$dgx"
bad collective-1tib-slow-lanes "all_reduce of 1099511627776 bytes on 4 ranks of slow.json: ends \
$horizon" "$icsim" collective all_reduce -s slow.json -b 1024G -e 1024G
bad collective-sweep-slow-lanes "all_reduce of 1099511627776 bytes on 4 ranks" \
    "$icsim" collective all_reduce -s slow.json -b 1G -e 1024G -f 1024 --json sweep.json
bad collective-1tib-packet "broadcast of 1099511627776 bytes on 4 ranks of slow.json: ends" \
    "$icsim" collective broadcast -s slow.json -b 1024G -e 1024G --engine packet
bad collective-1tib-alltoall "alltoall of 1099511627776 bytes on 4 ranks of slow.json: ends" \
    "$icsim" collective alltoall -s slow.json -b 1024G -e 1024G
bad collective-1tib-sendrecv-packet "sendrecv of 1099511627776 bytes on 4 ranks" \
    "$icsim" collective sendrecv -s slow.json -b 1024G -e 1024G --engine packet
bad train-slow-gpu "model custom: fwd.attn (one micro-batch on one tensor-parallel rank: \
8.59e+10 FLOPs, 1.93e+08 bytes of HBM traffic) takes longer on GPU g than the simulator's horizon" \
    "$icsim" train -s slowgpu.json --layers 2 --hidden 4096 --heads 32 --vocab 32000 --seq 2048 \
    --tp 4
# (TP 1 puts GPT-3 175B in far more than a GPU's memory: beside the point here, so ignored)
bad train-slow-lanes "rank 0 op 400 (dp.all_reduce): started at 4.59474e+06 s, ends $horizon" \
    "$icsim" train -s slow.json --model gpt3-175b --dp 4 --gbs 4 --ignore-memory
[ -e sweep.json ] && fail collective-sweep-slow-lanes "--json file written"
good replay-below-horizon "$icsim" replay four-long.json -s "$dgx"
good replay-chakra-below-horizon "$icsim" replay c4.0.et -s "$dgx"

# ---- memory: refused before it is built, with the estimate --------------------------------------
budget="over the memory budget of"
bad json-trace-past-cap "sparse.json: expected a trace of at most 2048 MiB, got 2621440000 bytes" \
    "$icsim" replay sparse.json -s "$dgx"
bad json-trace-before-reading "sparse1g5.json: 1572864000 bytes of JSON to read: about 2.9 GiB, \
$budget 1 GiB (ICSIM_MAX_MEMORY=GiB raises it; docs/limits.md)" \
    ICSIM_MAX_MEMORY=1 "$icsim" replay sparse1g5.json -s "$dgx"
bad json-trace-ops "ops20k.json: 720093 bytes of JSON, 80012 values, 20003 objects to read: \
about 14.8 MiB, $budget 0.01 GiB" ICSIM_MAX_MEMORY=0.01 "$icsim" replay ops20k.json -s "$dgx"
good json-trace-ops-default-budget "$icsim" replay ops20k.json -s "$dgx"
bad chakra-file-past-cap "sparse.0.et: expected a rank's file of at most 2048 MiB, got \
2621440000 bytes" "$icsim" replay sparse.0.et -s "$dgx"
bad chakra-file-before-reading "sparse1g.0.et: 1048576000 bytes to read, after 0 nodes in the \
ranks before it: about 8.8 GiB, $budget 8 GiB" "$icsim" replay sparse1g.0.et -s "$dgx"
bad chakra-nodes-before-unpacking "zeros.0.et: 1048576 bytes, 1048576 nodes, after 0 in the \
ranks before it: about 585.0 MiB, $budget 0.1 GiB" \
    ICSIM_MAX_MEMORY=0.1 "$icsim" replay zeros.0.et -s "$dgx"
bad cluster-gpus "big.json:2:12: \$.fabric: expected a cluster of at most 1048576 GPUs, got \
4194304 (1048576 nodes x 4 GPUs)" "$icsim" topo -s big.json
bad cluster-gpus-collective "expected a cluster of at most 1048576 GPUs, got 4194304" \
    "$icsim" collective all_reduce -s big.json
bad cluster-gpus-explain "expected a cluster of at most 1048576 GPUs" \
    "$icsim" explain -s small.json --nodes 1048576
bad cluster-topology "\$.fabric: a topology of 262144 nodes: about 3408085 devices x 128 B and \
10494400 channels x 64 B: about 1.0 GiB, $budget 0.5 GiB" \
    ICSIM_MAX_MEMORY=0.5 "$icsim" topo -s small.json --nodes 262144
bad cluster-topology-collective "a topology of 262144 nodes" \
    ICSIM_MAX_MEMORY=0.5 "$icsim" collective all_reduce -s small.json --nodes 262144
bad cluster-topology-replay "a topology of 65536 nodes" \
    ICSIM_MAX_MEMORY=0.1 "$icsim" replay ops20k.json -s small.json --nodes 65536
bad train-step-unfolded "model gpt3-175b: a step of about 17442816 ops x 340 B: about 5.5 GiB, \
$budget 2 GiB" ICSIM_MAX_MEMORY=2 "$icsim" train "$src/scenarios/gpt3-175b-h100-1024.json" \
    --no-fold
bad train-step-folded "model gpt3-175b: a step of about 136272 ops x 340 B: about 44.2 MiB, \
$budget 0.02 GiB" ICSIM_MAX_MEMORY=0.02 "$icsim" train \
    "$src/scenarios/gpt3-175b-h100-1024.json"
bad bench-engine-pending "bench engine: 2147483647 pending events x 48 B: about 96.0 GiB, \
$budget 8 GiB" "$icsim" bench engine --pending 2147483647
bad bench-engine-pending-budget "bench engine: 1000000 pending events x 48 B: about 45.8 MiB" \
    ICSIM_MAX_MEMORY=0.01 "$icsim" bench engine --pending 1000000 --events 10
bad alltoall-pairs "alltoall on 4096 ranks: 16773120 transfers at once x 1536 B: about 24.0 GiB, \
$budget 8 GiB" "$icsim" collective alltoall -s "$src/hwmodels/superpod-h100-ndr-3tier.json" \
    --nodes 512 -b 1G -e 1G --plan chunks
# from 128 ranks the default plays it as two streams a rank: its legs, less a pair
bad alltoall-pairs-streams "alltoall on 8192 ranks: 67100672 pairs' legs of streams x 384 B: \
about 24.0 GiB, $budget 8 GiB" "$icsim" collective alltoall \
    -s "$src/hwmodels/superpod-h100-ndr-3tier.json" --nodes 1024 -b 1G -e 1G
bad alltoall-pairs-flow "alltoall on 80 ranks: 6320 transfers at once x 3072 B: about 18.5 MiB, \
$budget 0.01 GiB" ICSIM_MAX_MEMORY=0.01 "$icsim" collective alltoall \
    -s "$src/hwmodels/polaris.json" --nodes 20 -b 1G -e 1G --engine flow
bad alltoall-pairs-replay "communicator 'world': alltoall on 4096 ranks: 16773120 pairs' legs of \
streams x 384 B: about 6.0 GiB, $budget 4 GiB" ICSIM_MAX_MEMORY=4 "$icsim" replay a2a4096.json \
    -s "$src/hwmodels/superpod-h100-ndr-3tier.json" --nodes 512
for v in foo 0 -5 1e9 nan ""; do
    bad "max-memory-$v" "ICSIM_MAX_MEMORY: expected a memory budget in GiB, 0.000001..1048576, \
got \"$v\"" ICSIM_MAX_MEMORY="$v" "$icsim" replay ops20k.json -s "$dgx"
done
bad max-memory-train "ICSIM_MAX_MEMORY: expected a memory budget in GiB" ICSIM_MAX_MEMORY=8G \
    "$icsim" train "$src/scenarios/gpt3-175b-h100-1024.json"
good max-memory-raised ICSIM_MAX_MEMORY=0.5 "$icsim" replay ops20k.json -s "$dgx"

echo "cli_bad_input_limits: $cases cases, $fails failures"
[ $cases -ge 40 ] && [ $fails -eq 0 ]
