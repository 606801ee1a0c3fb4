#!/usr/bin/env bash
# The bad-input rule for icsim-validate, on any machine (no GPU needed: nothing here reaches
# CUDA): each bad command line exits 2, prints nothing on stdout, and names the problem on
# stderr; --help and --version exit 0.
#   validate/tests/cli_bad_input.sh ICSIM_VALIDATE_BINARY
set -u
bin=$1
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fails=0

expect_bad() { # MESSAGE ARGS...
    local msg=$1
    shift
    "$bin" "$@" >"$out" 2>"$err"
    local rc=$?
    if [ $rc -ne 2 ]; then
        echo "FAIL '$*': exit status $rc, expected 2" >&2
        fails=$((fails + 1))
    elif [ -s "$out" ]; then
        echo "FAIL '$*': wrote to stdout" >&2
        fails=$((fails + 1))
    elif ! grep -qF -- "$msg" "$err"; then
        echo "FAIL '$*': stderr lacks '$msg':" >&2
        sed 's/^/  /' "$err" >&2
        fails=$((fails + 1))
    fi
}

expect_bad "expected a mode"
expect_bad "unknown mode 'bench'" bench
expect_bad "collective: expected OP" collective
expect_bad "unknown collective 'allsum'" collective allsum
expect_bad "-b: expected a size in bytes" collective all_reduce -b 8X
expect_bad "is larger than -e" collective all_reduce -b 1G -e 8
expect_bad "--unroll: expected 1, 2, 4 or 8" collective all_reduce --unroll 3
expect_bad "--chunk: expected a multiple" collective all_reduce --chunk 1000
expect_bad "-o: only sum" collective all_reduce -o max
expect_bad "copy engines only run p2p" collective all_gather --kernel ce
expect_bad "nvls: -d: only float" nvls -d bfloat16
expect_bad "--frobnicate" collective all_reduce --frobnicate
expect_bad "no directory" collective all_reduce --json /nonexistent-dir/x.json
expect_bad "--dtype: expected bf16, fp16, fp8 or all" compute --dtype fp4
expect_bad "compute: -b does not apply" compute -b 8
expect_bad "compute: -g: measures one GPU" compute -g 2
expect_bad "--shapes: '17x17x16': K and one of M, N" compute --shapes 17x17x16
expect_bad "--graph: only compute takes it" collective all_reduce --graph
expect_bad "--groups: only with --shapes" compute --groups 16
expect_bad "--streams: expected 1 to 16 streams, got '0'" compute --shapes 16x16x16 --groups 4 --streams 0
expect_bad "--dtype: only compute takes it" collective all_reduce --dtype bf16
expect_bad "no directory" compute --json /nonexistent-dir/c.json

"$bin" --help >"$out" 2>"$err" && grep -q "usage: icsim-validate" "$out" ||
    { echo "FAIL --help" >&2; fails=$((fails + 1)); }
"$bin" --version >"$out" 2>"$err" && grep -q "^icsim-validate " "$out" ||
    { echo "FAIL --version" >&2; fails=$((fails + 1)); }

[ $fails -eq 0 ] && echo "icsim-validate bad input: all cases exit 2 with a message"
exit $((fails > 0))
