#!/bin/bash
# `icsim calibrate` on compute measurements (icsim-validate compute --json): the published H100
# GEMM figures fit and print the parameters and the cross-validation; the overlay it writes is a
# model every command takes, and train with it differs from train without it; compute and
# collective files do not mix, nor do the network-only options (exit 2, nothing on stdout).
icsim=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
h100=$src/hwmodels/dgx-h100.json
gemms=$src/validate/data/compute/h100_sxm_public_gemm.json

"$icsim" calibrate -s "$h100" "$gemms" -o "$tmp/cal.json" >"$tmp/out" || fail "calibrate exited $?"
cat "$tmp/out"
grep -q '^  gemm_efficiency .* fitted$' "$tmp/out" || fail "gemm_efficiency not fitted"
grep -q '^  memory_efficiency .*not determined: no measured time moves with it' "$tmp/out" ||
    fail "memory_efficiency should not be determined without copies"
grep -q '^  kernel fp8 ' "$tmp/out" || fail "no cross-validation fold for the fp8 GEMMs"
grep -q '"gpu_types"' "$tmp/cal.json" || fail "the overlay has no gpu_types"

a=$("$icsim" train -s "$h100" --model llama3-8b --tp 8 --gbs 8 --json) || fail "train exited"
b=$("$icsim" train -s "$tmp/cal.json" --model llama3-8b --tp 8 --gbs 8 --json) ||
    fail "train on the overlay exited $?"
python3 - "$a" "$b" <<'PY' || fail "the overlay changed nothing"
import json, sys
a, b = (json.loads(x)["step_time_s"] for x in sys.argv[1:3])
print(f"llama3-8b step: {a:.6f} s as shipped, {b:.6f} s calibrated")
assert a != b
PY

# A model calibrated before keeps what that set, through either kind of calibration: compute
# keys this fit does not determine (no copies: memory_efficiency) and the compute keys under a
# network fit. An overlay's gpu_types hold only "compute", for a GPU type of the base.
rel=$(python3 -c 'import os,sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' "$h100" "$tmp")
cat >"$tmp/prev.json" <<JSON
{"kind": "calibration", "name": "earlier", "base": "$rel",
 "gpu_types": {"h100-sxm": {"compute": {"memory_efficiency": 0.7, "launch_us": 1.5}}}}
JSON
"$icsim" calibrate -s "$tmp/prev.json" "$gemms" -o "$tmp/again.json" -q >/dev/null ||
    fail "calibrate over an overlay exited $?"
python3 - "$tmp/again.json" <<'PY' || fail "recalibrating dropped an earlier value"
import json, sys
c = json.load(open(sys.argv[1]))["gpu_types"]["h100-sxm"]["compute"]
assert c["memory_efficiency"] == 0.7 and c["launch_us"] == 1.5, c
PY
sendrecv=$src/validate/data/nccl/xxrjun_h100_1node_8gpu_sendrecv.json
"$icsim" calibrate -s "$tmp/prev.json" "$sendrecv" -o "$tmp/net.json" -q --no-cv >/dev/null ||
    fail "network calibrate over a compute overlay exited $?"
python3 - "$tmp/net.json" <<'PY' || fail "a network calibration dropped the compute one"
import json, sys
c = json.load(open(sys.argv[1]))["gpu_types"]["h100-sxm"]["compute"]
assert c["memory_efficiency"] == 0.7 and c["launch_us"] == 1.5, c
PY
sed 's/"compute": {"memory_efficiency": 0.7, "launch_us": 1.5}/"nvlinks": 1/' "$tmp/prev.json" \
    >"$tmp/bad1.json"
"$icsim" topo -s "$tmp/bad1.json" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q 'bad1.json:.*gpu_types.h100-sxm.nvlinks: expected one of the keys compute' "$tmp/err" ||
    fail "an overlay's gpu_types took a key other than compute: $(cat "$tmp/err")"
sed 's/"h100-sxm"/"h100-sxmX"/' "$tmp/prev.json" >"$tmp/bad2.json"
"$icsim" topo -s "$tmp/bad2.json" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q 'expected a GPU type of the base model, got "h100-sxmX"' "$tmp/err" ||
    fail "an overlay named a GPU type the base lacks: $(cat "$tmp/err")"
printf '{"kind": "icsim-compute-measurements", "version": 1, "rows": [{"kernel": "gemm", "dtype": "bf16", "m": 0, "n": 1, "k": 1, "time_us": 1}]}\n' \
    >"$tmp/badrow.json"
"$icsim" calibrate -s "$h100" "$tmp/badrow.json" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && [ ! -s "$tmp/out" ] && grep -q 'badrow.json:1:[0-9]*: \$\.rows\[0\]\.m: expected' "$tmp/err" ||
    fail "a bad row: not refused with its place: $(cat "$tmp/err")"

log=$sendrecv
"$icsim" calibrate -s "$h100" "$gemms" "$log" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && [ ! -s "$tmp/out" ] && grep -q 'calibrate the compute model alone' "$tmp/err" ||
    fail "compute and collective files mixed: not refused"
"$icsim" calibrate -s "$h100" "$gemms" --params nvlink_gbps >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && [ ! -s "$tmp/out" ] || fail "--params with compute files: not refused"
echo "cli_calibrate_compute: ok"
