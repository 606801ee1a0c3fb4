#!/usr/bin/env bash
# `icsim collective`: nccl-tests' layout (header, one row per size, trailer), the --json file,
# and the bad-input rule (exit status 2, nothing on stdout, a message on stderr).
#   tests/cli_collective.sh ICSIM_BINARY SOURCE_DIR
set -u
icsim=$1
h100=$2/hwmodels/dgx-h100.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
# NCCL's variables are this test's to set: the caller's would change rows and add warnings
for v in $(env | sed -n 's/^\(NCCL_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done

fail() {
    echo "FAIL: $1" >&2
    fails=$((fails + 1))
}

# a sweep: 8 B .. 1 MiB is 18 rows, the column header verbatim, the trailer
"$icsim" collective all_reduce -s "$h100" -b 8 -e 1M -f 2 --json "$tmp/r.json" >"$tmp/out" \
    2>"$tmp/err" || fail "all_reduce sweep exited $?"
[ "$(grep -c '^ *[0-9]' "$tmp/out")" = 18 ] || fail "expected 18 rows"
grep -qxF '#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong' "$tmp/out" ||
    fail "column header"
grep -q '^# Out of bounds values : 0 OK$' "$tmp/out" || fail "trailer"
grep -q '^# Avg bus bandwidth    : [0-9.e+]* $' "$tmp/out" || fail "average line"
grep -q '^#  Rank  7 Group  0 Pid      0 on      node0 device  7 ' "$tmp/out" || fail "rank list"
grep -q '^     1048576        262144     float     sum      -1 ' "$tmp/out" || fail "1 MiB row"
python3 - "$tmp/r.json" <<'PY' || fail "--json file"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["op"] == "all_reduce" and d["ranks"] == 8 and d["engine"] == "analytic"
assert len(d["rows"]) == 18 and d["rows"][-1]["size"] == 1048576
r = d["rows"][-1]
assert r["count"] == 262144 and r["channels"] >= 1 and r["algo"] and r["proto"]
assert abs(r["busbw"] - r["algbw"] * 2 * 7 / 8) < 1e-9
assert r["plan"] == "chunks"  # 8 ranks: auto plans chunk by chunk
PY

# --plan streams: each channel one stream, said in the JSON rows
"$icsim" collective all_reduce -s "$h100" -b 1M -e 1M --plan streams --json "$tmp/s.json" \
    >"$tmp/out" 2>"$tmp/err" || fail "--plan streams exited $?"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["rows"][0]["plan"] == "streams"' \
    "$tmp/s.json" || fail "--plan streams: JSON plan"

# all-gather counts per rank; broadcast prints its root; 4 ranks; bfloat16
"$icsim" collective all_gather -s "$h100" --gpus 4 -b 1M -e 1M -d bfloat16 >"$tmp/out" ||
    fail "all_gather exited $?"
grep -q '^     1048576        131072  bfloat16    none      -1 ' "$tmp/out" || fail "all_gather row"
"$icsim" collective broadcast -s "$h100" -b 64K -e 64K -r 3 >"$tmp/out" || fail "broadcast"
grep -q '^       65536         16384     float    none       3 ' "$tmp/out" || fail "broadcast row"

# bad input: exit 2, empty stdout, a message
bad() {
    "$icsim" collective "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 2 ] || fail "collective $*: exit $rc, expected 2"
    [ -s "$tmp/out" ] && fail "collective $*: wrote to stdout"
    [ -s "$tmp/err" ] || fail "collective $*: no message"
}
bad all_reduse -s "$h100" -b 8 -e 1M
bad all_reduce -s "$h100" -b 8X -e 1M
bad all_reduce -s "$h100" -b 2M -e 1M
bad all_reduce -s "$h100" -b 0 -e 1M
bad all_reduce -s "$h100" -b 8 -e 1025G
bad all_reduce -s "$h100" -b 18446744073709551615 -e 18446744073709551615
bad all_reduce -s "$h100" --gpus 9
bad all_reduce -s "$h100" --gpus -1
bad all_reduce -s "$h100" --gpus 0
bad all_reduce -s "$h100" --gpus-per-node 0
bad all_reduce -s "$h100" -f 1
bad all_reduce -s "$h100" --json "$tmp"
bad all_reduce -s "$h100" --json "$tmp/missing/bad.json"
bad all_reduce -s "$h100" -d float33
bad all_reduce -s "$h100" -o mean
bad all_reduce -s "$h100" --engine fluid
bad all_reduce -s "$h100" --plan slices
bad broadcast -s "$h100" -r 8
bad all_reduce -b 8 -e 8
bad all_reduce -s "$tmp/missing.json"
[ -e "$tmp/bad.json" ] && fail "a --json file after a failure"
# the largest size: every operation on both engines, quickly (1 TiB on one node)
for op in all_reduce all_gather alltoall broadcast sendrecv; do
    for engine in analytic packet; do
        "$icsim" collective $op -s "$h100" -b 1024G -e 1024G --engine $engine >"$tmp/out" \
            2>"$tmp/err" || fail "$op 1 TiB on $engine exited $?"
        grep -q '^ *1099511627776 ' "$tmp/out" || fail "$op 1 TiB on $engine: no row"
    done
done

# one rank: no algorithm, a copy in the GPU's memory (NCCL's ncclLaunchOneRank); nccl-tests'
# busbw factor 2(n-1)/n is 0 for all-reduce, 1 for broadcast; whatever NCCL_ALGO says
for v in "" Tree; do
    NCCL_ALGO=$v "$icsim" collective all_reduce -s "$h100" --gpus 1 -b 8 -e 1G -f 8 \
        --json "$tmp/one.json" >"$tmp/out" 2>"$tmp/err" || fail "1 rank (NCCL_ALGO=$v) exited $?"
    grep -q '^  1073741824     268435456     float     sum      -1 .*  0.00    N/A ' "$tmp/out" ||
        fail "1 rank: busbw 0 at 1 GiB"
    grep -q '^# Avg bus bandwidth    : 0 $' "$tmp/out" || fail "1 rank: average busbw 0"
done
python3 - "$tmp/one.json" <<'PY' || fail "1 rank: --json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ranks"] == 1
for r in d["rows"]:
    assert r["algo"] == "local" and r["busbw"] == 0 and r["time_us"] >= 1, r
# a copy at HBM rate: 1 GiB read and written at 3.35 TB/s x 0.85 in about 0.75 ms
assert 700 < d["rows"][-1]["time_us"] < 800, d["rows"][-1]
PY
"$icsim" collective broadcast -s "$h100" --gpus 1 -b 1M -e 1M >"$tmp/out" || fail "1-rank broadcast"
# busbw = algbw; 1 MiB copies in 1.7 us at HBM rate, under one kernel launch (3.8 us, comm.c)
grep -q '^     1048576        262144     float    none       0 .*  3\.80  275\.94  275\.94 ' "$tmp/out" ||
    fail "1-rank broadcast: busbw = algbw, at least one launch"

# nccl-tests -g G: one thread launches G kernels in turn, 3.8 us each (NVIDIA's CUDA Graphs post,
# comm.c), so an 8-byte all-reduce on 8 GPUs lasts 8 x 3.8 us; one process per GPU (no -g) or a
# CUDA graph (-G) leaves the GPUs' own time (NCCL's ring LL latency, ~17 us), which is less.
t_of() { awk '$1 == 8 && $3 == "float" {print $6}' "$1"; }
"$icsim" collective all_reduce -s "$h100" -b 8 -e 8 -g 8 >"$tmp/g8" || fail "-g 8"
"$icsim" collective all_reduce -s "$h100" -b 8 -e 8 >"$tmp/g1" || fail "-g 1"
"$icsim" collective all_reduce -s "$h100" -b 8 -e 8 -g 8 -G 1 >"$tmp/gG" || fail "-g 8 -G 1"
[ "$(t_of "$tmp/g8")" = "30.40" ] || fail "-g 8: 8 launches of 3.8 us, got $(t_of "$tmp/g8")"
awk -v a="$(t_of "$tmp/g1")" -v b="$(t_of "$tmp/gG")" 'BEGIN {exit !(a == b && a > 3.8 && a < 30.4)}' ||
    fail "-g 1 and -G: the GPUs' time, not the launches"

# NCCL_ALGO as NCCL reads it (parseList): lists, '^' negation, any case. On one DGX H100 NCCL
# takes NVLS for large all-reduces; without it the ring (Tree inside one node is a chain NCCL
# leaves to the ring, NVLSTree needs several nodes); NCCL_PROTO likewise.
algo_at() { # NCCL_ALGO NCCL_PROTO SIZE -> "algo proto" of that row
    NCCL_ALGO=$1 NCCL_PROTO=$2 "$icsim" collective all_reduce -s "$h100" -b "$3" -e "$3" \
        --json "$tmp/a.json" >/dev/null 2>"$tmp/err" || { echo "exit $?"; return; }
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rows"][0]; print(r["algo"], r["proto"])' "$tmp/a.json"
}
check_algo() { # NCCL_ALGO NCCL_PROTO SIZE EXPECTED
    local got
    got=$(algo_at "$1" "$2" "$3")
    [ "$got" = "$4" ] || fail "NCCL_ALGO=$1 NCCL_PROTO=$2 at $3: $got, expected $4"
}
check_algo "" "" 1G "NVLS Simple"
check_algo "" "" 8M "NVLS Simple"
check_algo "^NVLS" "" 1G "Ring Simple"
check_algo "^NVLS" "" 8M "Ring LL128"
check_algo "^nvls" "" 8M "Ring LL128"
check_algo "Ring,Tree" "" 1G "Ring Simple"
check_algo "Ring,Tree" "" 8M "Ring LL128"
check_algo "ring,TREE" "" 8 "Ring LL"
check_algo "Tree" "" 8M "Tree LL128"
check_algo "^NVLS,Ring" "" 8M "Tree LL128"
check_algo "^NVLS" "^LL128" 8M "Ring LL"
check_algo "Ring" "Simple,LL128" 1G "Ring Simple"
check_algo "Ring" "^LL" 8 "Ring LL128"

# values NCCL would not understand: a warning line, the rest applies
warn() { # VAR=VALUE EXPECTED-WARNING
    env "$1" "$icsim" collective all_reduce -s "$h100" -b 1M -e 1M >"$tmp/out" 2>"$tmp/err" ||
        fail "$1: exited $?"
    grep -qxF -- "# warning: $2" "$tmp/out" || fail "$1: no line '# warning: $2'"
}
warn NCCL_ALGO=foo "NCCL_ALGO=foo not understood, ignored"
warn NCCL_ALGO=Ring,foo "NCCL_ALGO=Ring,foo: foo not understood, ignored"
warn NCCL_ALGO=^Ring,Tree,NVLS,Direct,NVLSTree,CollNetDirect,CollNetChain,PAT \
    "NCCL_ALGO=^Ring,Tree,NVLS,Direct,NVLSTree,CollNetDirect,CollNetChain,PAT leaves nothing to choose from, ignored"
warn NCCL_PROTO=LL256 "NCCL_PROTO=LL256 not understood, ignored"
warn NCCL_MAX_NCHANNELS=foo \
    "NCCL_MAX_NCHANNELS=foo not understood (expected an integer in 0..2147483647), ignored"
warn NCCL_MIN_NCHANNELS=-1 \
    "NCCL_MIN_NCHANNELS=-1 not understood (expected an integer in 0..2147483647), ignored"
warn NCCL_P2P_SCHEDULE_GROUP_SIZE=0 \
    "NCCL_P2P_SCHEDULE_GROUP_SIZE=0 not understood (expected an integer in 1..4096), ignored"
warn NCCL_NVLS_ENABLE=yes \
    "NCCL_NVLS_ENABLE=yes not understood (expected an integer in -2147483648..2147483647), ignored"
# channel bounds: NCCL 2.17's NCCL_MIN_CTAS / NCCL_MAX_CTAS with the older NCCL_MIN/MAX_NCHANNELS,
# the larger minimum and the smaller maximum for rings and trees (NCCL's ncclTopoPostset); the NVLS
# channels (16 on Hopper, NCCL_NVLS_NCHANNELS when set) bounded by the CTA bounds alone (nvls.cc)
channels_with() { # MODEL ENV... -> the channel count --show-algo gives for 1 GiB
    local model=$1
    shift
    env "$@" "$icsim" collective all_reduce -s "$model" -b 1G -e 1G --show-algo 2>"$tmp/err" |
        sed -n 's|^ *1073741824 .*/\([0-9]*\)$|\1|p'
}
for case in "16 X=1" "4 NCCL_MAX_CTAS=4" "4 NCCL_MAX_NCHANNELS=8 NCCL_MAX_CTAS=4" \
    "4 NCCL_MAX_NCHANNELS=2 NCCL_MAX_CTAS=4" "16 NCCL_MAX_NCHANNELS=2" "16 NCCL_MIN_NCHANNELS=32" \
    "2 NCCL_MAX_NCHANNELS=2 NCCL_ALGO=Ring" "24 NCCL_MIN_CTAS=24 NCCL_ALGO=Ring" \
    "24 NCCL_MIN_NCHANNELS=20 NCCL_MIN_CTAS=24 NCCL_ALGO=Ring" "8 NCCL_NVLS_NCHANNELS=8" \
    "4 NCCL_NVLS_NCHANNELS=8 NCCL_MAX_CTAS=4" "24 NCCL_NVLS_NCHANNELS=8 NCCL_MIN_CTAS=24"; do
    read -r want vars <<<"$case"
    # shellcheck disable=SC2086 # vars: several VAR=VALUE words
    got=$(channels_with "$h100" $vars)
    [ "$got" = "$want" ] || fail "$vars: $got channels, expected $want"
done
warn NCCL_MAX_CTAS=0 "NCCL_MAX_CTAS=0 not understood (expected an integer in 1..2147483647), ignored"
warn NCCL_NVLS_NCHANNELS=0 \
    "NCCL_NVLS_NCHANNELS=0 not understood (expected an integer in 1..2147483647), ignored"
# Blackwell's NVLS channels (NCCL 2.27-2.29): 24 inside one NVLink domain (an HGX B200, 8 GPUs of a
# GB200 NVL72 rack), NCCL_NVLS_NCHANNELS over it
for case in "24 $2/hwmodels/hgx-b200.json X=1" "24 $2/hwmodels/gb200-nvl72.json X=1" \
    "32 $2/hwmodels/hgx-b200.json NCCL_NVLS_NCHANNELS=32"; do
    read -r want model vars <<<"$case"
    # shellcheck disable=SC2086 # vars: several VAR=VALUE words
    got=$(channels_with "$model" $vars)
    [ "$got" = "$want" ] || fail "$model $vars: $got channels, expected $want"
done

# NVLS chunks (nvls.c nvls_chunk: a Simple step, at most NCCL_NVLS_CHUNKSIZE): a DGX H100 1 GiB
# NVLS all-reduce of 32 KiB chunks pays 4x the 128 KiB chunks' hand-offs and is slower; 512 KiB
# chunks under a 1 MiB NCCL_BUFFSIZE (128 KiB steps) are the default's to the digit
us_with() { # ENV... -> the 1 GiB all-reduce's time on a DGX H100, us
    env "$@" "$icsim" collective all_reduce -s "$h100" -b 1G -e 1G 2>"$tmp/err" |
        awk '$1 == 1073741824 { print $6 }'
}
t0=$(us_with X=1)
t32=$(us_with NCCL_NVLS_CHUNKSIZE=32768)
tcap=$(us_with NCCL_NVLS_CHUNKSIZE=524288 NCCL_BUFFSIZE=1048576)
awk -v a="$t0" -v b="$t32" 'BEGIN { exit !(a > 0 && b > a * 1.05) }' ||
    fail "NCCL_NVLS_CHUNKSIZE=32768: $t32 us, not above the default's $t0"
[ -n "$t0" ] && [ "$tcap" = "$t0" ] || fail "512 KiB chunks in 128 KiB steps: $tcap us, not $t0"

# transports icsim does not model: said, not dropped in silence (nccl_env.c, note_unmodelled)
warn NCCL_IB_DISABLE=1 \
    "NCCL_IB_DISABLE=1: NCCL's socket transport, which NCCL then uses across nodes, is not modelled; the figures are those of the system's own network transport"
warn NCCL_NET=Socket \
    "NCCL_NET=Socket: NCCL's socket transport is not modelled; across nodes the figures are those of the system's own network transport"
warn NCCL_SHM_DISABLE=1 \
    "NCCL_SHM_DISABLE=1: not modelled; GPUs without peer access still exchange data through host memory"
warn NCCL_NTHREADS=256 \
    "NCCL_NTHREADS=256: not modelled; a channel's CTA runs NCCL's default threads (what it copies, and when a small call drops channels, follow from them)"
warn NCCL_LL128_NTHREADS=320 \
    "NCCL_LL128_NTHREADS=320: not modelled; a channel's CTA runs NCCL's default threads (what it copies, and when a small call drops channels, follow from them)"
warn NCCL_CROSS_NIC=1 \
    "NCCL_CROSS_NIC=1: not modelled; each channel keeps one NIC index on every node, as NCCL does with 0 and, on nodes whose NICs are alike, with the default 2"
# any other NCCL variable icsim does not read: named, with its value (nccl_env.c, note_unread)
warn NCCL_IB_TC=41 "not modelled, ignored: NCCL_IB_TC=41"
# NCCL_IB_HCA (topo_hca.c): one NIC of 8 for 2 DGX H100 is far slower; a list that keeps no
# compute NIC (mlx5_1 is a storage NIC) is said on stderr and not applied
pod=$2/hwmodels/superpod-h100-ndr.json
hca_us() {
    env "$1" "$icsim" collective all_reduce -s "$pod" --nodes 2 -b 1G -e 1G 2>"$tmp/err" |
        awk '$1 == 1073741824 { print $6 }'
}
t8=$(hca_us X=1)
t1=$(hca_us NCCL_IB_HCA=mlx5_0)
awk -v a="$t8" -v b="$t1" 'BEGIN { exit !(a > 0 && b > 3 * a) }' ||
    fail "NCCL_IB_HCA=mlx5_0: $t1 us against $t8 with every NIC"
tnone=$(hca_us NCCL_IB_HCA==mlx5_1)
[ -n "$t8" ] && [ "$tnone" = "$t8" ] || fail "NCCL_IB_HCA==mlx5_1: $tnone us, not $t8"
grep -q "warning: NCCL_IB_HCA==mlx5_1 keeps none of the node's compute NICs" "$tmp/err" ||
    fail "NCCL_IB_HCA==mlx5_1: no warning: $(cat "$tmp/err")"
for quiet in NCCL_NET=IB NCCL_IB_DISABLE=0 NCCL_SHM_DISABLE=0 NCCL_NTHREADS= NCCL_CROSS_NIC=0 \
    NCCL_DEBUG=INFO NCCL_SOCKET_IFNAME=eth0; do
    env "$quiet" "$icsim" collective all_reduce -s "$h100" -b 1M -e 1M >"$tmp/out" 2>"$tmp/err" ||
        fail "$quiet: exited $?"
    ! grep -q "^# warning" "$tmp/out" || fail "$quiet: $(grep '^# warning' "$tmp/out")"
done

# NCCL's point-to-point batches: 8 Polaris nodes' all-to-all runs in 2 waves (collectives.md,
# node deltas 2, 7, 5, 4 on a second batch of their channels), 2 nodes' in one
"$icsim" collective alltoall -s "$2/hwmodels/polaris.json" --nodes 8 -b 1M -e 1M --show-algo \
    --json "$tmp/waves.json" >"$tmp/out" 2>"$tmp/err" || fail "polaris 8 nodes: exited $?"
grep -q '^ *1048576 .* # Direct/Simple/1 x 2 waves$' "$tmp/out" ||
    fail "waves column: $(grep 1048576 "$tmp/out")"
grep -q '"waves":[[:space:]]*2' "$tmp/waves.json" || fail "waves in the JSON: $(cat "$tmp/waves.json")"
NCCL_P2P_SCHEDULE_GROUP_SIZE=1 "$icsim" collective alltoall -s "$2/hwmodels/polaris.json" --nodes 8 \
    -b 1M -e 1M --show-algo >"$tmp/out" 2>"$tmp/err" || fail "group size 1: exited $?"
grep -q '^ *1048576 .* # Direct/Simple/1 x 4 waves$' "$tmp/out" ||
    fail "NCCL_P2P_SCHEDULE_GROUP_SIZE=1: $(grep 1048576 "$tmp/out")"
"$icsim" collective alltoall -s "$2/hwmodels/polaris.json" --nodes 2 -b 1M -e 1M --show-algo \
    >"$tmp/out" 2>"$tmp/err" || fail "polaris 2 nodes: exited $?"
grep -q '^ *1048576 .* # Direct/[A-Za-z0-9]*/[0-9]*$' "$tmp/out" ||
    fail "one wave, no waves column: $(grep 1048576 "$tmp/out")"

# NCCL_IB_QPS_PER_CONNECTION: on the 2:1 fat-tree's 32 nodes a 1 GiB all-reduce's rings cross
# the spines, where one hash per connection collides on some uplinks; 4 queue pairs a
# connection spread over more of them (route.c). Unset is 1.
fattree=$2/hwmodels/fattree-2tier.json
busbw() { env "$@" "$icsim" collective all_reduce -s "$fattree" -b 1G -e 1G |
    awk '$1 == 1073741824 { print $8 }'; }
q0=$(busbw X=1) q1=$(busbw NCCL_IB_QPS_PER_CONNECTION=1) q4=$(busbw NCCL_IB_QPS_PER_CONNECTION=4)
[ -n "$q1" ] && [ "$q0" = "$q1" ] || fail "queue pairs unset ($q0) and 1 ($q1) differ"
awk -v a="$q1" -v b="$q4" 'BEGIN { exit !(b > a) }' || fail "4 queue pairs ($q4) not above 1 ($q1)"

[ $fails -eq 0 ] && echo "cli_collective: all checks passed"
exit $((fails > 0))
