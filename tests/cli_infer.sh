#!/usr/bin/env bash
# `icsim infer`: the physics its figures must obey, the published figures it is compared with,
# and the bad-input rule.
#   tests/cli_infer.sh ICSIM_BINARY SOURCE_DIR
set -u
icsim=$1
src=$2
h100=$src/hwmodels/dgx-h100.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
    echo "FAIL: $1" >&2
    fails=$((fails + 1))
}

# Decode at batch 1 reads every weight once a token: a time per output token no shorter than the
# GPU's weights over its HBM rate (3.35 TB/s x 0.85, the compute model's streaming rate), and
# not far above it for a 70B model (launches, the KV cache, the all-reduces add the rest).
# Prefill is FLOP-bound: no faster than 2 x parameters x prompt tokens at the GPUs' fp8 peak.
"$icsim" infer -s "$h100" --model llama3-70b --tp 2 --input 5000 --output 500 --dtype fp8 \
    --json >"$tmp/j" || fail "infer exited $?"
python3 - "$tmp/j" <<'PY' || fail "physics bounds"
import json, sys
d = json.load(open(sys.argv[1]))
floor_ms = d["weights_gb"] * 1e9 / (3.35e12 * 0.85) * 1e3
assert floor_ms < d["tpot_ms"] < 1.5 * floor_ms, (floor_ms, d["tpot_ms"])
params = 70.6e9
prefill_floor_ms = 2 * params * 5000 / (2 * 1978.9e12) * 1e3
assert prefill_floor_ms < d["ttft_ms"], (prefill_floor_ms, d["ttft_ms"])
assert abs(d["output_tokens_per_s"] - 500 / ((d["ttft_ms"] + 499 * d["tpot_ms"]) / 1e3)) < 1e-6 * d["output_tokens_per_s"]
assert d["decode_allreduce_ms"] > 0 and d["kv_cache_gb"] > 0
PY

# NVIDIA NIM, Llama 3.3 70B fp8 on 2 x H100 (validate/data/inference/), the concurrency-1 rows
# (a static batch of one): our errors are printed, and held under a ratchet (measured when the
# model was written: TTFT -19% / -28%, -12% / -22% since FP8 GEMMs have their own efficiency;
# time per token -14% / -17%, tokens/s +17% / +20%, +16% / +20%; the
# engine's own overheads, its custom all-reduce and its sampling are not modelled). Since GEMMs
# run in waves (#14) a weight-bound decode GEMM pays one measured wave cost (2.2 us) where it
# paid a 4 us ramp: time per token -17% / -20%, tokens/s +21% / +25% (throughput ratchet
# 0.22 -> 0.26; what is missing is the engine's, not the GEMMs'). With the H100's sustained
# (power-bound) clock for GEMMs and attention (0.848, docs/workload.md): TTFT +0.8% / -9.8%,
# time per token unchanged (memory-bound).
python3 - "$icsim" "$h100" "$src/validate/data/inference/nim_llama33_70b_fp8_tp2_h100.json" <<'PY' || fail "NIM rows"
import json, subprocess, sys
icsim, h100, data = sys.argv[1:4]
d = json.load(open(data))
worst = {"ttft_ms": 0, "itl_ms": 0, "throughput_tokens_per_s": 0}
for r in d["rows"]:
    if r["concurrency"] != 1:
        continue
    out = subprocess.run([icsim, "infer", "-s", h100, "--model", "llama3-70b", "--tp", "2",
                          "--input", str(r["input"]), "--output", str(r["output"]),
                          "--dtype", "fp8", "--json"], capture_output=True, text=True, check=True)
    s = json.loads(out.stdout)
    sim = {"ttft_ms": s["ttft_ms"], "itl_ms": s["tpot_ms"],
           "throughput_tokens_per_s": s["output_tokens_per_s"]}
    for k in worst:
        e = (sim[k] - r[k]) / r[k]
        print(f"{r['input']}/{r['output']} {k}: measured {r[k]}, simulated {sim[k]:.2f} ({100*e:+.1f}%)")
        worst[k] = max(worst[k], abs(e))
assert worst["ttft_ms"] <= 0.30 and worst["itl_ms"] <= 0.20 and worst["throughput_tokens_per_s"] <= 0.26, worst
PY

# A batch whose weights and KV cache exceed the GPU's memory is refused (exit 2, nothing on
# stdout), and runs with --ignore-memory.
"$icsim" infer -s "$h100" --model llama3-405b >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && [ ! -s "$tmp/out" ] && grep -q 'does not fit: .* GB per GPU' "$tmp/err" ||
    fail "405B on one GPU: not refused"
"$icsim" infer -s "$h100" --model llama3-405b --ignore-memory --output 2 >/dev/null ||
    fail "--ignore-memory exited $?"
# the shipped scenario equals its options; options override it; a bad one is located (exit 2)
"$icsim" infer "$src/scenarios/llama33-70b-fp8-h100-tp2.json" --json >"$tmp/scen" ||
    fail "scenario exited $?"
"$icsim" infer -s "$h100" --model llama3-70b --tp 2 --input 5000 --output 500 --dtype fp8 \
    --json >"$tmp/opts" || fail "options exited $?"
cmp -s "$tmp/scen" "$tmp/opts" || fail "scenario and options differ"
"$icsim" infer "$src/scenarios/llama33-70b-fp8-h100-tp2.json" --batch 4 --json >"$tmp/b4" ||
    fail "scenario with --batch exited $?"
grep -q '"batch":4' "$tmp/b4" || fail "--batch did not override the scenario"
printf '{"kind": "inference", "system": "x.json", "model": "m", "instance": {"tp": 0}}' \
    >"$tmp/bad.json"
"$icsim" infer "$tmp/bad.json" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && [ ! -s "$tmp/out" ] &&
    grep -q 'bad.json:1:[0-9]*: \$.instance.tp: expected an integer in 1..65536, got 0' "$tmp/err" ||
    fail "bad scenario: not refused with its place"
# Pipeline stages run one after the other in a static batch: with one GPU a stage the compute
# of a pass is the same as without the pipeline, so a decode step costs exactly the stage sends
# more, while each GPU holds about half the weights.
for pp in 1 2; do
    "$icsim" infer -s "$h100" --model llama3-8b --pp $pp --batch 4 --json >"$tmp/pp$pp" ||
        fail "infer --pp $pp exited $?"
done
python3 - "$tmp/pp1" "$tmp/pp2" <<'PY' || fail "pipeline stages"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert b["decode_send_ms"] > 0 and a["decode_send_ms"] == 0
assert abs(b["tpot_ms"] - a["tpot_ms"] - b["decode_send_ms"]) < 1e-9 * a["tpot_ms"], (a, b)
assert abs(b["ttft_ms"] - a["ttft_ms"] - b["prefill_send_ms"]) < 1e-9 * a["ttft_ms"], (a, b)
assert 0.45 * a["weights_gb"] < b["weights_gb"] < 0.6 * a["weights_gb"], (a, b)
PY

# A mixture of experts: at batch 1 a decode step reads the attention, the router and the
# top-k experts of each layer (Mixtral: 12.9B active parameters), so its time per token sits
# between those weights over the HBM rate and 1.5x that; at batch 256 every expert is touched
# and the floor is all the GPU's weights. Experts spread over the stage (--ep 2) hold the same
# weights per GPU as experts split over it.
for args in "--batch 1" "--batch 256" "--batch 256 --ep 2"; do
    # shellcheck disable=SC2086
    "$icsim" infer -s "$h100" --model mixtral-8x7b --tp 2 $args --json \
        >"$tmp/moe-${args// /}" || fail "infer mixtral $args exited $?"
done
python3 - "$tmp/moe---batch1" "$tmp/moe---batch256" "$tmp/moe---batch256--ep2" <<'PY' ||
import json, sys
one, many, ep = (json.load(open(p)) for p in sys.argv[1:4])
rate = 3.35e12 * 0.85
active_floor_ms = 12.9e9 * 2 / 2 / rate * 1e3
assert active_floor_ms < one["tpot_ms"] < 1.5 * active_floor_ms, (active_floor_ms, one["tpot_ms"])
all_floor_ms = many["weights_gb"] * 1e9 / rate * 1e3
assert all_floor_ms < many["tpot_ms"], (all_floor_ms, many["tpot_ms"])
assert abs(ep["weights_gb"] - many["weights_gb"]) < 1e-9 * many["weights_gb"]
assert ep["ep"] == 2 and many["ep"] == 1
PY
    fail "mixture of experts bounds"
for args in "--tp 3" "--tp 0" "--batch 0" "--dtype fp4" "--engine flow" "extra" "--ep 2" \
    "--pp 0" "--pp 81" "--tp 4 --pp 4"; do
    # shellcheck disable=SC2086
    "$icsim" infer -s "$h100" --model llama3-70b $args >"$tmp/out" 2>"$tmp/err"
    [ $? -eq 2 ] && [ ! -s "$tmp/out" ] || fail "infer $args: not refused"
done
"$icsim" infer -s "$h100" --model llama3-70b --tp 16 >/dev/null 2>&1
[ $? -eq 2 ] || fail "--tp 16 on 8 GPUs: not refused"
"$icsim" infer -s "$h100" --model mixtral-8x7b --tp 2 --ep 4 >/dev/null 2>&1
[ $? -eq 2 ] || fail "--ep other than 1 or --tp: not refused"
# the shipped inference scenarios run
for s in "$src"/scenarios/*.json; do
    grep -q '"kind": "inference"' "$s" || continue
    "$icsim" infer "$s" >/dev/null || fail "$s exited $?"
done
[ "$fails" -eq 0 ] && echo "cli_infer: ok"
exit $((fails > 0))
