#!/usr/bin/env bash
# The bad-input rule at the command line: `icsim topo -s FILE` on every tests/bad-input case
# exits with status 2, writes nothing to stdout, and prints the message its NAME.expect lines
# name on stderr (with or without an "icsim: " prefix). The valid helpers in bad-input/ok/
# exit 0. Runs from tests/, so messages name files "bad-input/NAME.json".
#   tests/cli_bad_input.sh ICSIM_BINARY TESTS_DIR
set -u
icsim=$1
cd "$2" || exit 1
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fails=0 cases=0

fail() {
    echo "FAIL $1: $2" >&2
    sed 's/^/  stderr: /' "$err" >&2
    fails=$((fails + 1))
}

for json in bad-input/*.json; do
    base=${json%.json}
    args=(topo -s "$json")
    [ -f "$base.nodes" ] && args+=(--nodes "$(tr -d '[:space:]' <"$base.nodes")")
    "$icsim" "${args[@]}" >"$out" 2>"$err"
    rc=$?
    cases=$((cases + 1))
    if [ $rc -ne 2 ]; then
        fail "$json" "exit status $rc, expected 2"
        continue
    fi
    if [ -s "$out" ]; then
        fail "$json" "wrote $(wc -c <"$out") bytes to stdout"
        continue
    fi
    while IFS= read -r line; do
        [ -z "$line" ] && continue
        if ! grep -qF -- "$line" "$err"; then
            fail "$json" "stderr lacks: $line"
            break
        fi
    done <"$base.expect"
done

for json in bad-input/ok/*.json; do
    case $(basename "$json") in catalog*) continue ;; esac
    "$icsim" topo -s "$json" >"$out" 2>"$err"
    rc=$?
    if [ $rc -ne 0 ] || [ ! -s "$out" ]; then
        fail "$json" "exit status $rc and $(wc -c <"$out") bytes of output, expected 0 and some"
    fi
done

echo "cli_bad_input: $cases cases, $fails failures"
[ $cases -ge 30 ] && [ $fails -eq 0 ]
