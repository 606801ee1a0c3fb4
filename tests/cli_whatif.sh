#!/usr/bin/env bash
# What-ifs and nccl-tests parity at the command line: collective --fail/--compare (DGX H100
# without nvsw1: 22 ring channels, the change table), train --fail, --show-algo's comment column,
# nccl-tests' flags (-n -w -m -g -t -c -a -z -G -C -R echoed or ignored, -g's launch floor with a
# calibrated launch_us, -i's linear sizes), collective --plot with a measured log, explain of a
# switch; bad input exits 2 with nothing on stdout.
#   tests/cli_whatif.sh ICSIM_BINARY SOURCE_DIR
set -u
icsim=$1
src=$(cd "$2" && pwd)
h100=$src/hwmodels/dgx-h100.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
    echo "FAIL: $1" >&2
    fails=$((fails + 1))
}
unset NCCL_ALGO NCCL_PROTO NCCL_NVLS_ENABLE NCCL_COLLNET_ENABLE NCCL_MIN_NCHANNELS NCCL_MAX_NCHANNELS

# --fail and --compare
NCCL_ALGO=Ring "$icsim" collective all_reduce -s "$h100" -b 1M -e 1G -f 32 --fail nvswitch:nvsw1 \
    --compare --show-algo >"$tmp/out" 2>"$tmp/err" || fail "--fail --compare exited $?: $(cat "$tmp/err")"
grep -qx '# failure: 0:nvsw1 down: 8 links (width 40)' "$tmp/out" || fail "failure header line"
grep -q '^  1073741824 .* # Ring/Simple/22$' "$tmp/out" || fail "--show-algo column: $(grep 1073741824 "$tmp/out")"
grep -q '^#   1073741824  Ring/Simple/24  *Ring/Simple/22 ' "$tmp/out" || fail "compare row"
grep -q '^# bus bandwidth change: mean -[0-9.]*%, worst -2[0-9].[0-9]%$' "$tmp/out" ||
    fail "compare summary: $(grep 'bus bandwidth change' "$tmp/out")"
# rows still read as nccl-tests rows: the 5 sizes, the trailer
[ "$(grep -c '^ *[0-9]' "$tmp/out")" = 3 ] || fail "expected 3 rows"
# failures are what the run sees: a DGX-1V without a bond finds fewer rings
NCCL_ALGO=Ring "$icsim" collective all_reduce -s "$src/hwmodels/dgx1-v100.json" -b 256M -e 256M \
    --fail nvlink:gpu0-gpu1 --show-algo >"$tmp/out" || fail "DGX-1V --fail exited $?"
grep -q '# Ring/Simple/10$' "$tmp/out" || fail "DGX-1V without gpu0-gpu1: expected 10 channels"

# train --fail
"$icsim" train "$src/scenarios/llama3-70b-h100-64.json" >"$tmp/a" || fail "train exited $?"
"$icsim" train "$src/scenarios/llama3-70b-h100-64.json" --fail 'nvswitch:*:nvsw1' >"$tmp/b" ||
    fail "train --fail exited $?"
grep -qx 'with failure: \*:nvsw1 down: 8 links (width 40)' "$tmp/b" || fail "train --fail line"
python3 - "$tmp/a" "$tmp/b" <<'PY' || fail "train --fail: the step should be slower"
import sys
t = [float(open(f).read().split("step time")[1].split()[0]) for f in sys.argv[1:]]
assert t[1] > t[0] * 1.02, t
PY

# nccl-tests flags: echoed in the header, the timing-only ones said to be ignored
"$icsim" collective all_reduce -s "$h100" -b 1M -e 4M -n 20 -w 5 -m 1 -c 1 -a 1 -z 0 -C 0 -R 1 \
    -t 1 -g 1 >"$tmp/out" || fail "nccl-tests flags exited $?"
grep -q '^# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0$' \
    "$tmp/out" || fail "nccl-tests header: $(grep nThread "$tmp/out")"
grep -q '^# icsim: -n 20, -w 5, -m 1, -c 1, -a 1, -z 0, -C 0, -R 1: timing-only here' "$tmp/out" ||
    fail "ignored flags line"
"$icsim" collective all_reduce -s "$h100" -b 1M -e 4M >"$tmp/plain" || fail "plain run"
grep -q 'icsim: ' "$tmp/plain" && fail "plain run: an ignored-flags line"
# -i: linear steps
"$icsim" collective all_reduce -s "$h100" -b 1M -e 4M -i 1M >"$tmp/out" || fail "-i exited $?"
[ "$(grep -c '^ *[0-9]' "$tmp/out")" = 4 ] || fail "-i 1M from 1M to 4M: expected 4 rows"
grep -q 'step: 1048576(bytes)' "$tmp/out" || fail "-i header"
# -g: a call lasts at least G launches of a calibrated launch_us (here 5 us)
printf '{"kind": "calibration", "name": "h100 launch", "base": "%s", "calibration": {"launch_us": 5, "source": "test"}}\n' \
    "$h100" >"$tmp/cal.json"
"$icsim" collective all_reduce -s "$tmp/cal.json" -b 8 -e 8 -g 8 >"$tmp/out" || fail "-g exited $?"
python3 - "$tmp/out" <<'PY' || fail "-g 8: expected at least 40 us"
import sys
row = [l for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")][0].split()
assert float(row[5]) >= 40.0, row
PY
"$icsim" collective all_reduce -s "$tmp/cal.json" -b 8 -e 8 -g 8 -G 1 >"$tmp/out" || fail "-G exited $?"
python3 - "$tmp/out" <<'PY' || fail "-g 8 -G 1: a graph launches at once, expected under 40 us"
import sys
row = [l for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")][0].split()
assert float(row[5]) < 40.0, row
PY

# --plot with a measured log
"$icsim" collective all_reduce -s "$h100" -b 8 -e 8G -f 2 --plot "$tmp/p.svg" \
    --measured "$src/validate/data/nccl/nvidia_dgxc_dgxh100_1node_allreduce.json" >/dev/null ||
    fail "--plot --measured exited $?"
[ "$(grep -c '<polyline' "$tmp/p.svg")" = 2 ] || fail "--plot --measured: expected 2 lines"
grep -q 'measured: nvidia_dgxc_dgxh100_1node_allreduce.json' "$tmp/p.svg" || fail "measured legend"
if command -v xmllint >/dev/null; then xmllint --noout "$tmp/p.svg" || fail "--plot: not well-formed"; fi

# explain a switch
"$icsim" explain nvswitch3 >"$tmp/out" || fail "explain nvswitch3 exited $?"
grep -qx '64 ports x 25.0 GB/s = 1600.0 GB/s per direction through the switch, 3200.0 GB/s both ways' \
    "$tmp/out" || fail "explain nvswitch3: ports x port rate"
grep -q '^in-network reduction (NVLS)' "$tmp/out" || fail "explain nvswitch3: NVLS"

# --hotspots: the busiest links, as comments after the table, and in --json
sp=$src/hwmodels/superpod-h100-ndr.json
"$icsim" collective all_reduce -s "$sp" --nodes 2 -b 1M -e 64M -f 64 --hotspots 4 \
    --json "$tmp/h.json" >"$tmp/out" || fail "--hotspots exited $?"
grep -q '^# all_reduce of 67108864 bytes, one call alone:$' "$tmp/out" || fail "--hotspots: size line"
[ "$(grep -c '^#  .* -> ' "$tmp/out")" = 4 ] || fail "--hotspots 4: expected 4 link lines"
grep -q '^[^#].* -> ' "$tmp/out" && fail "--hotspots: a link line outside a comment"
python3 - "$tmp/h.json" <<'PY' || fail "--hotspots --json"
import json, sys
h = json.load(open(sys.argv[1]))["hotspots"]
b = h["busiest"]
assert len(b) == 4, b
u = [x["utilization"] for x in b]
assert u == sorted(u, reverse=True) and 0 < u[-1] <= u[0] <= 1, u
assert abs(b[0]["bytes"] / (b[0]["gbps"] * 1e9 * h["span_s"]) - u[0]) < 1e-9, b[0]
assert set(h["by_kind"]) >= {"nvlink", "network"}, h["by_kind"]
PY
"$icsim" train "$src/scenarios/llama3-70b-h100-64.json" --hotspots 3 --json >"$tmp/t.json" ||
    fail "train --hotspots exited $?"
python3 - "$tmp/t.json" <<'PY' || fail "train --hotspots --json"
import json, sys
h = json.load(open(sys.argv[1]))["hotspots"]
assert len(h["busiest"]) == 3 and "folded" in h["note"], h
assert h["by_kind"]["nvlink"]["bytes"] > 0, h["by_kind"]  # memoized TP all-reduces count
PY

# progress lines: on stderr only when asked (a terminal, or ICSIM_PROGRESS=always), never on stdout
"$icsim" train "$src/scenarios/llama3-70b-h100-64.json" >"$tmp/p0" 2>"$tmp/e0" || fail "train exited $?"
[ -s "$tmp/e0" ] && fail "progress without a terminal: $(cat "$tmp/e0")"
ICSIM_PROGRESS=always "$icsim" train "$src/scenarios/llama3-70b-h100-64.json" >"$tmp/p1" 2>"$tmp/e1" ||
    fail "train (progress) exited $?"
cmp -s "$tmp/p0" "$tmp/p1" || fail "progress changed stdout"
grep -q 'icsim: step: .* s simulated, [0-9]* of [0-9]* ops done' "$tmp/e1" || fail "train progress line"
ICSIM_PROGRESS=always "$icsim" collective all_reduce -s "$h100" -b 1M -e 4M >"$tmp/p2" 2>"$tmp/e2" ||
    fail "collective (progress) exited $?"
grep -q 'icsim: all_reduce of 1048576 bytes, size 1 of 3' "$tmp/e2" || fail "collective progress line"
sendrecv="$src/validate/data/nccl/xxrjun_h100_1node_8gpu_sendrecv.json"
"$icsim" calibrate -s "$h100" "$sendrecv" --no-cv >"$tmp/p3" 2>"$tmp/e3" || fail "calibrate exited $?"
[ -s "$tmp/e3" ] && fail "calibrate progress without a terminal: $(cat "$tmp/e3")"
ICSIM_PROGRESS=always "$icsim" calibrate -s "$h100" "$sendrecv" --no-cv >"$tmp/p4" 2>"$tmp/e4" ||
    fail "calibrate (progress) exited $?"
cmp -s "$tmp/p3" "$tmp/p4" || fail "calibrate progress changed stdout"
grep -q 'icsim: calibrate: [0-9]* passes over 10 points' "$tmp/e4" || fail "calibrate progress line"
# the tail section: the log's 7 rows from 256 MiB, busbw and fixed time measured, before, after
grep -Eq '^  xxrjun_h100_1node_8gpu_sendrecv +7( +-?[0-9]+\.[0-9]){6}$' "$tmp/p3" ||
    fail "calibrate tail line: $(grep -A3 '^# tail' "$tmp/p3")"

# bad input: exit 2, nothing on stdout
bad() { # expected-text args...
    local want=$1
    shift
    "$icsim" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    [ $rc = 2 ] || fail "$*: exit $rc, expected 2"
    [ -s "$tmp/out" ] && fail "$*: wrote to stdout"
    grep -qF -- "$want" "$tmp/err" || fail "$*: expected '$want', got '$(cat "$tmp/err")'"
}
bad "--compare needs --fail" collective all_reduce -s "$h100" --compare
bad "--measured overlays a log on --plot" collective all_reduce -s "$h100" --measured x.log
bad "expected -f FACTOR or -i BYTES, not both" collective all_reduce -s "$h100" -f 4 -i 1M
bad "-i: expected a size >= 1" collective all_reduce -s "$h100" -i 0
bad "-g: expected an integer in 1..1024, got 0" collective all_reduce -s "$h100" -g 0
bad "-a: expected an integer in 0..3, got 4" collective all_reduce -s "$h100" -a 4
bad "--fail: nvswitch:nvsw9: no device nvsw9 in node 0" collective all_reduce -s "$h100" --fail nvswitch:nvsw9
bad "--plot" collective all_reduce -s "$h100" --plot "$tmp/no/dir/p.svg"
bad "expected a standard or a switch of the catalog" explain quantum9
bad "--hotspots: expected an integer in 1..100000, got 0" collective all_reduce -s "$h100" --hotspots 0
bad "--hotspots: expected an integer" train "$src/scenarios/llama3-70b-h100-64.json" --hotspots x

[ $fails = 0 ] && echo "cli_whatif: all passed"
exit $((fails > 0))
