#!/usr/bin/env bash
# The bad-input rule at the command line: `icsim topo -s FILE` on every tests/bad-input case
# exits with status 2, writes nothing to stdout, and prints the message its NAME.expect lines
# name on stderr (with or without an "icsim: " prefix). The valid helpers in bad-input/ok/
# exit 0. Runs from tests/, so messages name files "bad-input/NAME.json".
# Then every command line of tests/bad-input-cli (README.md there): the same rule, stderr valid
# UTF-8, and no file written where the arguments name one.
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

tmpdir=$(mktemp -d) tmpname=$(mktemp --suffix=.json)
trap 'rm -f "$out" "$err" "$tmpname"; rm -rf "$tmpdir"' EXIT

# a model whose name is not UTF-8 (Latin-1) is refused where the byte sits: JSON text is UTF-8
# (RFC 8259), and a name that is not could not be written back as JSON
sed 's/"name": "test node"/"name": "n\xe9ud"/' bad-input/ok/node.json >"$tmpname"
"$icsim" topo -s "$tmpname" --json >"$out" 2>"$err"
rc=$?
if [ $rc -ne 2 ] || [ -s "$out" ] || ! grep -q 'expected UTF-8 text (RFC 8259), got the byte 0xE9' "$err"; then
    fail "topo --json of a Latin-1 name" "exit $rc, $(head -c 300 "$err")"
fi

# command lines: NAME.args holds one argument a line, "@TMP@" standing for an empty directory
# that must stay empty; NAME.env optional VAR=VALUE lines for the environment
cli_cases=0
for argsf in bad-input-cli/*.args; do
    base=${argsf%.args}
    mapfile -t args < <(sed "s|@TMP@|$tmpdir|g" "$argsf")
    envs=()
    [ -f "$base.env" ] && mapfile -t envs <"$base.env"
    env "${envs[@]}" "$icsim" "${args[@]}" >"$out" 2>"$err"
    rc=$?
    cli_cases=$((cli_cases + 1))
    if [ $rc -ne 2 ]; then
        fail "$argsf" "exit status $rc, expected 2"
    elif [ -s "$out" ]; then
        fail "$argsf" "wrote $(wc -c <"$out") bytes to stdout"
    elif ! iconv -f UTF-8 -t UTF-8 "$err" >/dev/null 2>&1; then
        fail "$argsf" "stderr is not valid UTF-8"
    elif [ -n "$(ls -A "$tmpdir")" ]; then
        fail "$argsf" "wrote $(ls -A "$tmpdir" | head -1)"
    else
        while IFS= read -r line; do
            [ -z "$line" ] && continue
            line=${line//@TMP@/$tmpdir}
            if ! grep -qF -- "$line" "$err"; then
                fail "$argsf" "stderr lacks: $line"
                break
            fi
        done <"$base.expect"
    fi
    rm -rf "${tmpdir:?}"/* "$tmpdir"/.[!.]* 2>/dev/null
done

echo "cli_bad_input: $cases model cases, $cli_cases command lines, $fails failures"
[ $cases -ge 30 ] && [ $cli_cases -ge 30 ] && [ $fails -eq 0 ]
