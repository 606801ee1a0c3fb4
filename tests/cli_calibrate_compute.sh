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

log=$src/validate/data/nccl/xxrjun_h100_1node_8gpu_sendrecv.json
"$icsim" calibrate -s "$h100" "$gemms" "$log" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && [ ! -s "$tmp/out" ] && grep -q 'calibrate the compute model alone' "$tmp/err" ||
    fail "compute and collective files mixed: not refused"
"$icsim" calibrate -s "$h100" "$gemms" --params nvlink_gbps >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && [ ! -s "$tmp/out" ] || fail "--params with compute files: not refused"
echo "cli_calibrate_compute: ok"
