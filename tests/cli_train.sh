#!/usr/bin/env bash
# `icsim train`: the report's figures (text and --json), a scenario file and the same job on the
# command line give the same bytes, runs repeat exactly, the timeline is written, and bad input
# gets exit status 2 with nothing on stdout.
#   tests/cli_train.sh ICSIM_BINARY SOURCE_DIR
set -u
icsim=$1
src=$(cd "$2" && pwd)
pod=$src/hwmodels/superpod-h100-ndr.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() {
    echo "FAIL: $1" >&2
    fails=$((fails + 1))
}

# a small job on 4 DGX H100: TP 8, PP 2, DP 2
job=(-s "$pod" --layers 8 --hidden 4096 --heads 32 --vocab 51200 --seq 2048 --tp 8 --pp 2
     --dp 2 --mbs 1 --gbs 16 --recompute full)
"$icsim" train "${job[@]}" >"$tmp/text" 2>"$tmp/err" || fail "train exited $?"
for line in '^step time  *[0-9.]* s$' '^tokens/s  *[0-9]*$' '^TFLOP/s per GPU  *[0-9.]* ' \
    '^MFU  *[0-9.]* %' '^  compute  *[0-9.]* s' '^  pipeline bubble and waits  *[0-9.]* s'; do
    grep -q "$line" "$tmp/text" || fail "text report: no line $line"
done
"$icsim" train "${job[@]}" >"$tmp/text2" && cmp -s "$tmp/text" "$tmp/text2" || fail "repeat differs"

"$icsim" train "${job[@]}" --json >"$tmp/json" || fail "train --json exited $?"
python3 - "$tmp/json" <<'PY' || fail "--json figures"
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("step_time_s", "tflops_per_gpu", "mfu", "tokens_per_s", "breakdown"):
    assert k in d, k
step = d["step_time_s"]
assert step > 0 and 0 < d["mfu"] < 1
assert abs(d["tokens_per_s"] - 16 * 2048 / step) < 1e-6 * d["tokens_per_s"]
# the critical rank's buckets add up to the step
b = d["breakdown"]
assert abs(sum(b.values()) - step) < 1e-9 * step, (sum(b.values()), step)
assert d["simulation"]["ranks"] == 32 and d["simulation"]["ranks_simulated"] == 2
# memory per GPU (workload/memory.h): the parts add up; 16-bit weights, fp32 gradients and
# 12 B of optimizer state per parameter (Megatron's 18 B), stage 0 under the GPU's 80 GB
m = d["memory"]
parts = ("weights_gb", "gradients_gb", "optimizer_gb", "activations_gb", "nccl_gb")
assert abs(sum(m[k] for k in parts) - m["total_gb"]) < 1e-9 * m["total_gb"], m
assert abs(m["gradients_gb"] - 2 * m["weights_gb"]) < 1e-9 and abs(m["optimizer_gb"] - 6 * m["weights_gb"]) < 1e-9, m
assert m["gpu_gb"] == 80 and 0 < m["total_gb"] < 80 and m["stage"] in (0, 1), m
PY
grep -q '^memory per GPU  *[0-9.]* GB of 80.0 (stage [01])$' "$tmp/text" || fail "text report: no memory line"
# the shipped FSDP/HSDP scenario runs, within the GPU's memory, with its gathers on their stream
"$icsim" train "$src/scenarios/llama3-8b-hsdp-h100-128.json" --json >"$tmp/hsdp" ||
    fail "llama3-8b-hsdp-h100-128.json exited $?"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['step_time_s'] > 0 and d['memory']['total_gb'] < 80, d['memory']" "$tmp/hsdp" ||
    fail "HSDP scenario figures"
# the shipped MoE scenario: its all-to-alls charged to EP, within the GPU's memory; the same
# layout from options; expert parallelism on a dense model refused (exit 2, nothing on stdout)
"$icsim" train "$src/scenarios/mixtral-8x7b-h100-64.json" --json >"$tmp/moe" ||
    fail "mixtral-8x7b-h100-64.json exited $?"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); b=d['breakdown']; assert b['ep_s'] > 0 and b['ep_s'] < 0.5 * d['step_time_s'] and d['memory']['total_gb'] < 80, (b, d['memory'])" "$tmp/moe" ||
    fail "MoE scenario figures"
moe=(-s "$src/hwmodels/superpod-h100-ndr.json" --model mixtral-8x7b --pp 4 --dp 16 --ep 8
    --gbs 256 --dist-opt --placement tp-dp-pp --json)
"$icsim" train "${moe[@]}" >"$tmp/moe2" || fail "MoE from options exited $?"
cmp -s "$tmp/moe" "$tmp/moe2" || fail "MoE: options and scenario differ"
"$icsim" train -s "$src/hwmodels/dgx-h100.json" --model llama3-8b --dp 8 --gbs 8 --ep 2 \
    >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && [ ! -s "$tmp/out" ] && grep -q 'ep: expected a mixture-of-experts model' "$tmp/err" ||
    fail "--ep on a dense model: not refused"
# FP8 recipes and CUDA graph scopes (docs/workload.md): by option and by scenario key alike;
# current scaling quantizes each expert's share with four kernels of its own, so its step is
# slower than delayed scaling's one fused cast; a whole-layer graph of dropless experts refused
"$icsim" train "${moe[@]}" --dtype fp8 --fp8-recipe current --cuda-graph-scope moe_router \
    >"$tmp/cs" || fail "--fp8-recipe current --cuda-graph-scope moe_router exited $?"
python3 - "$src/scenarios/mixtral-8x7b-h100-64.json" "$tmp/cs.json" <<'PY' || fail "fp8 scenario"
import json, os, sys
d = json.load(open(sys.argv[1]))
d["system"] = os.path.normpath(os.path.join(os.path.dirname(sys.argv[1]), d["system"]))
d["layout"].update(dtype="fp8", fp8_recipe="current", cuda_graph_scope="moe_router")
json.dump(d, open(sys.argv[2], "w"))
PY
"$icsim" train "$tmp/cs.json" --json >"$tmp/cs2" || fail "fp8 scenario exited $?"
cmp -s "$tmp/cs" "$tmp/cs2" || fail "fp8_recipe, cuda_graph_scope: options and scenario differ"
"$icsim" train "${moe[@]}" --dtype fp8 --fp8-recipe delayed >"$tmp/ds" || fail "delayed exited $?"
python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['step_time_s']; b=json.load(open(sys.argv[2]))['step_time_s']; assert a > b, (a, b)" "$tmp/cs" "$tmp/ds" ||
    fail "FP8 current scaling not slower than delayed"
"$icsim" train "${moe[@]}" --cuda-graph-scope full >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && [ ! -s "$tmp/out" ] && grep -q 'cuda_graph_scope: full with a mixture-of-experts' "$tmp/err" ||
    fail "--cuda-graph-scope full with dropless experts: not refused"
"$icsim" train "${moe[@]}" --fp8-recipe current >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && [ ! -s "$tmp/out" ] && grep -q 'fp8_recipe: expected dtype fp8 with it' "$tmp/err" ||
    fail "--fp8-recipe with bf16: not refused"
"$icsim" train "${moe[@]}" --dtype fp8 --fp8-recipe mxfp8 >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && [ ! -s "$tmp/out" ] && grep -q 'fp8_recipe: expected delayed or current on GPU' "$tmp/err" ||
    fail "--fp8-recipe mxfp8 on H100: not refused"
"$icsim" train "${moe[@]}" --fp8-recipe fp4 >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && [ ! -s "$tmp/out" ] && grep -q 'fp8-recipe: expected delayed, current or mxfp8' "$tmp/err" ||
    fail "--fp8-recipe fp4: not refused"
# a layout that cannot fit is refused with its figures (exit 2), and runs with --ignore-memory
big=(-s "$src/hwmodels/dgx-h100.json" --model gpt3-175b --tp 1 --dp 8 --gbs 64)
"$icsim" train "${big[@]}" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && [ ! -s "$tmp/out" ] && grep -q 'does not fit: pipeline stage 0 needs' "$tmp/err" ||
    fail "GPT-3 175B on one GPU's memory: not refused"
"$icsim" train "${big[@]}" --ignore-memory --json >"$tmp/out" || fail "--ignore-memory exited $?"
grep -q '"total_gb"' "$tmp/out" || fail "--ignore-memory: no memory in the report"

# folding: on a rail-optimized fat-tree the mirrored ranks' traffic uses other rails, so the
# folded step equals the unfolded one, on both engines (docs/replay.md)
for engine in analytic packet; do
    a=$("$icsim" train "${job[@]}" --engine $engine --json | sed -n 's/.*"step_time_s":[[:space:]]*\([0-9.e+-]*\).*/\1/p')
    b=$("$icsim" train "${job[@]}" --engine $engine --no-fold --json | sed -n 's/.*"step_time_s":[[:space:]]*\([0-9.e+-]*\).*/\1/p')
    [ -n "$a" ] && [ "$a" = "$b" ] || fail "$engine: folded step $a != unfolded $b"
done

# a scenario file and its command line give the same report
cat >"$tmp/job.json" <<JSON
{"kind": "training", "system": "$pod",
 "model": {"layers": 8, "hidden": 4096, "heads": 32, "vocab": 51200, "seq": 2048},
 "layout": {"tp": 8, "pp": 2, "dp": 2, "mbs": 1, "gbs": 16, "recompute": "full"}}
JSON
"$icsim" train "$tmp/job.json" >"$tmp/scen" || fail "scenario exited $?"
cmp -s "$tmp/text" "$tmp/scen" || fail "scenario and command line differ"
# the host's launch cost (docs/replay.md, "The host"): by option and by scenario key alike; at
# 1 ms a launch the host sets the pace, and its wait is the report's host line
"$icsim" train "${job[@]}" --host-launch-us 1000 >"$tmp/host" || fail "--host-launch-us exited $?"
sed 's/"kind": "training",/"kind": "training", "host_launch_us": 1000,/' "$tmp/job.json" >"$tmp/host.json"
"$icsim" train "$tmp/host.json" >"$tmp/host2" || fail "host_launch_us exited $?"
cmp -s "$tmp/host" "$tmp/host2" || fail "host_launch_us: option and scenario differ"
a=$(sed -n 's/^step time  *\([0-9.]*\) s$/\1/p' "$tmp/text")
b=$(sed -n 's/^step time  *\([0-9.]*\) s$/\1/p' "$tmp/host")
h=$(sed -n 's/^  host (launching kernels)  *\([0-9.]*\) s .*/\1/p' "$tmp/host" | head -1)
awk -v a="$a" -v b="$b" -v h="$h" 'BEGIN { exit !(b > a && h > 0 && h < b) }' ||
    fail "host at 1 ms a launch: step $b against $a, host $h s"
# Megatron before September 2021: the backward's TP all-reduces in series, by option and by
# scenario key alike, and slower than beside the weight gradients (the default)
"$icsim" train "${job[@]}" --no-async-tensor-model-parallel-allreduce >"$tmp/sync" ||
    fail "--no-async-tensor-model-parallel-allreduce exited $?"
sed 's/"recompute": "full"}}/"recompute": "full", "async_tensor_model_parallel_allreduce": false}}/' \
    "$tmp/job.json" >"$tmp/sync.json"
"$icsim" train "$tmp/sync.json" >"$tmp/sync2" || fail "async_tensor_model_parallel_allreduce exited $?"
cmp -s "$tmp/sync" "$tmp/sync2" || fail "async_tensor_model_parallel_allreduce: option and key differ"
step() { sed -n 's/^step time *\([0-9.]*\) s$/\1/p' "$1"; }
awk -v a="$(step "$tmp/text")" -v b="$(step "$tmp/sync")" 'BEGIN { exit !(a > 0 && a < b) }' ||
    fail "reductions beside the weight gradients: step $(step "$tmp/text") not below $(step "$tmp/sync")"
# options override the file
"$icsim" train "$tmp/job.json" --gbs 32 --json >"$tmp/over" || fail "override exited $?"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert abs(d['tokens_per_s']*d['step_time_s']-32*2048)<1" \
    "$tmp/over" || fail "--gbs did not override the scenario"

# the shipped scenarios run, and write their traces (the FP8 405B one's userbuffers chunks
# once left fractional bytes the trace format refuses)
for s in "$src"/scenarios/*.json; do
    grep -q '"kind": "training"' "$s" || continue
    "$icsim" train "$s" --trace-out "$tmp/scen.trace.json" >/dev/null || fail "$s exited $?"
done
# a folded trace replays to the step that wrote it
s405="$src/scenarios/llama31-405b-fp8-h100-1024.json"
"$icsim" train "$s405" --trace-out "$tmp/405.trace.json" --json >"$tmp/405gen" ||
    fail "405B --trace-out exited $?"
"$icsim" replay "$tmp/405.trace.json" -s "$pod" --json >"$tmp/405rep" || fail "405B replay exited $?"
a=$(sed -n 's/.*"step_time_s":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$tmp/405gen")
b=$(sed -n 's/.*"step_time_s":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$tmp/405rep")
[ -n "$a" ] && [ "$a" = "$b" ] || fail "replayed 405B trace: step $b, generated: $a"

# timeline: Chrome trace JSON with ranks, streams and link counters
"$icsim" train "${job[@]}" --no-fold --timeline "$tmp/t.json" --timeline-ranks 9 >/dev/null ||
    fail "timeline run exited $?"
python3 - "$tmp/t.json" <<'PY' || fail "timeline content"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
procs = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
assert "rank 0" in procs and "rank 8" in procs and "rank 9" not in procs and "links" in procs
threads = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
assert "compute" in threads and "dp" in threads, threads
assert any(e["ph"] == "X" and e["cat"] == "tp" for e in ev)
assert any(e["ph"] == "X" and e["cat"] == "pp" for e in ev)
assert any(e["ph"] == "C" for e in ev)
PY

# icsim replay of the trace train generated: the same step, to the digit
"$icsim" train "${job[@]}" --no-fold --trace-out "$tmp/job.trace.json" --json >"$tmp/gen" ||
    fail "train --trace-out exited $?"
"$icsim" replay "$tmp/job.trace.json" -s "$pod" --nodes 4 --json >"$tmp/rep" || fail "replay exited $?"
a=$(sed -n 's/.*"step_time_s":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$tmp/gen")
b=$(sed -n 's/.*"step_time_s":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$tmp/rep")
[ -n "$a" ] && [ "$a" = "$b" ] || fail "replayed trace: step $b, generated job: $a"
"$icsim" replay "$src/scenarios/traces/example.json" -s "$src/hwmodels/dgx-h100.json" >/dev/null ||
    fail "replay of the example exited $?"

# bad input: exit 2, nothing on stdout, the reason on stderr
bad() {
    local what=$1 want=$2
    shift 2
    "$icsim" train "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    [ $rc = 2 ] || fail "$what: exit $rc, expected 2"
    [ -s "$tmp/out" ] && fail "$what: wrote to stdout"
    grep -q -- "$want" "$tmp/err" || fail "$what: stderr lacks '$want': $(cat "$tmp/err")"
}
bad "unknown model" 'expected a model of the catalog' -s "$pod" --model gpt-5 --tp 8
bad "no model" 'expected a model' -s "$pod" --tp 8
bad "heads vs tp" "--tp: expected a divisor of the model's heads (24), got 16" -s "$pod" --layers 8 --hidden 3072 --heads 24 --vocab 100 --seq 128 --tp 16
bad "too many GPUs" 'needs 2048 GPUs' -s "$src/hwmodels/dgx-h100.json" --model gpt3-175b --tp 8 --pp 16 --dp 16 --gbs 256
bad "bad recompute" 'expected none, selective or full' -s "$pod" --model gpt3-175b --recompute some
bad "bad engine" 'expected analytic, packet or flow' -s "$pod" --model gpt3-175b --engine fluid
echo '{"kind": "training", "system": "x.json", "model": "gpt3-175b", "layout": {"tp": 8, "tpp": 2}}' >"$tmp/bad.json"
bad "unknown layout key" 'bad.json:1:[0-9]*: \$.layout.tpp: expected one of the keys' "$tmp/bad.json"
echo '{"kind": "training", "system": "x.json", "model": "gpt3-175b", "layout": {"tp": "8"}}' >"$tmp/bad2.json"
bad "tp as string" '\$.layout.tp: expected' "$tmp/bad2.json"
echo '{"kind": "training", "system": "x.json", "model": {"layers": 2}, "layout": {}}' >"$tmp/bad3.json"
bad "model without hidden" '\$.model.hidden' "$tmp/bad3.json"

badr() {
    local what=$1 want=$2
    shift 2
    "$icsim" replay "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    [ $rc = 2 ] || fail "replay $what: exit $rc, expected 2"
    [ -s "$tmp/out" ] && fail "replay $what: wrote to stdout"
    grep -q "$want" "$tmp/err" || fail "replay $what: stderr lacks '$want': $(cat "$tmp/err")"
}
badr "missing file" 'nope.json' "$tmp/nope.json" -s "$pod"
echo '{"format": "icsim-trace", "version": 1, "ranks": [{"ops": [{"op": "send", "peer": 3, "bytes": 8}]}]}' >"$tmp/t.json"
badr "peer out of range" '\$.ranks\[0\].ops\[0\].peer: expected' "$tmp/t.json" -s "$pod"
printf '\x08\x01' >"$tmp/t.et"
badr "not JSON" 't.et' "$tmp/t.et" -s "$pod"
echo '{"format": "icsim-trace", "version": 1, "ranks": [{}, {}, {}, {}, {}, {}, {}, {}, {}]}' >"$tmp/nine.json"
badr "more ranks than GPUs" '9 ranks' "$tmp/nine.json" -s "$src/hwmodels/dgx-h100.json"

# a trace with a one-rank communicator replays (a local copy, as NCCL runs it), on both engines
cat >"$tmp/solo.json" <<'JSON'
{"format": "icsim-trace", "version": 1, "communicators": {"solo": [0], "pair": [0, 1]},
 "ranks": [
  {"ops": [{"op": "all_reduce", "comm": "solo", "bytes": 1048576, "dtype": "fp32"},
           {"op": "all_reduce", "comm": "pair", "bytes": 1048576, "dtype": "fp32"}]},
  {"ops": [{"op": "all_reduce", "comm": "pair", "bytes": 1048576, "dtype": "fp32"}]}]}
JSON
for engine in analytic packet; do
    "$icsim" replay "$tmp/solo.json" -s "$src/hwmodels/dgx-h100.json" --engine $engine \
        --collectives full >"$tmp/out" 2>"$tmp/err" || fail "1-rank communicator on $engine: exit $?"
    grep -q '^step time ' "$tmp/out" || fail "1-rank communicator on $engine: no report"
done
# a training job of one GPU: its data-parallel gradients need no reduction, yet run as NCCL's
"$icsim" train -s "$src/hwmodels/dgx-h100.json" --layers 2 --hidden 1024 --heads 8 --vocab 1000 \
    --seq 128 --dp 1 >"$tmp/out" || fail "a one-GPU job exited $?"

# every bench parses its arguments: --help prints and exits 0, an unknown option exits 2 at once
"$icsim" bench training --help >"$tmp/out" 2>"$tmp/err" || fail "bench training --help exited $?"
grep -q 'Usage:' "$tmp/out" || fail "bench training --help: no usage"
"$icsim" bench training --no-such-option >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && [ ! -s "$tmp/out" ] || fail "bench training --no-such-option: expected exit 2, nothing out"

[ $fails = 0 ] && echo "cli_train: all checks passed"
exit $((fails > 0))
