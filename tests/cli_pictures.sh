#!/usr/bin/env bash
# Pictures: `sweep --plot`, `train --plot`, `topo --dot` (node and cluster levels, after
# failures) are well-formed (xmllint from libxml2-utils; Graphviz's dot for the DOT), and render
# (rsvg-convert from librsvg2-bin) where those tools are installed; bad options exit 2.
#   tests/cli_pictures.sh ICSIM_BINARY SOURCE_DIR
set -u
icsim=$1
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
    echo "FAIL: $1" >&2
    fails=$((fails + 1))
}
have() { command -v "$1" >/dev/null; }

# an SVG: well-formed, an <svg> root, and (where librsvg is) a picture
check_svg() { # file what
    [ -s "$1" ] || { fail "$2: no SVG written"; return; }
    grep -q '<svg' "$1" || fail "$2: no <svg> root"
    if have xmllint; then xmllint --noout "$1" 2>"$tmp/xml.err" || fail "$2: not well-formed: $(cat "$tmp/xml.err")"; fi
    if have rsvg-convert; then rsvg-convert "$1" -o "$tmp/x.png" 2>/dev/null && [ -s "$tmp/x.png" ] ||
        fail "$2: does not render"; fi
}

cat >"$tmp/study.json" <<JSON
{"kind": "study", "name": "plot <test> & co", "system": "$src/hwmodels/dgx-h100.json",
 "collective": {"op": "all_reduce", "min_bytes": "64K", "max_bytes": "64M", "factor": 8},
 "axes": [{"name": "failure", "fail": ["", "nvswitch:nvsw1", "nvswitch:nvsw9"]}]}
JSON
"$icsim" sweep "$tmp/study.json" -q --plot "$tmp/sweep.svg" >"$tmp/sweep.csv" || fail "sweep --plot exited $?"
check_svg "$tmp/sweep.svg" "sweep --plot"
[ "$(grep -c '<polyline' "$tmp/sweep.svg")" = 3 ] || fail "sweep --plot: expected 3 lines"
grep -q 'plot &lt;test&gt; &amp; co' "$tmp/sweep.svg" || fail "sweep --plot: title not escaped"
"$icsim" sweep "$tmp/study.json" -q --json "$tmp/only.jsonl" --plot "$tmp/x.svg" 2>"$tmp/err"
[ $? = 2 ] || fail "sweep --plot with only --json: expected exit 2"

"$icsim" train "$src/scenarios/llama3-70b-h100-64.json" --plot "$tmp/step.svg" >/dev/null ||
    fail "train --plot exited $?"
check_svg "$tmp/step.svg" "train --plot"
grep -q '>rank 0</text>' "$tmp/step.svg" || fail "train --plot: no bar for rank 0"
"$icsim" train "$src/scenarios/llama3-70b-h100-64.json" --plot "$tmp/no/dir/x.svg" >"$tmp/out" 2>&1
[ $? = 2 ] || fail "train --plot into a missing directory: expected exit 2"

"$icsim" topo -s "$src/hwmodels/dgx1-v100.json" --dot --fail nvlink:gpu0-gpu3 >"$tmp/dgx1.dot" ||
    fail "topo --dot --fail exited $?"
grep -q 'subgraph cluster_node0' "$tmp/dgx1.dot" || fail "topo --dot: no node cluster"
grep -q '"0:gpu0" -- "0:gpu3"' "$tmp/dgx1.dot" && fail "topo --dot --fail: the dead bond is drawn"
grep -q '"0:gpu0" -- "0:gpu4"' "$tmp/dgx1.dot" || fail "topo --dot: a live bond is missing"
"$icsim" topo -s "$src/hwmodels/superpod-h100-ndr.json" --dot-level cluster --fail switch:spine3 \
    >"$tmp/sp.dot" || fail "topo --dot-level cluster exited $?"
grep -q '"v0" \[label="nodes 0-31' "$tmp/sp.dot" || fail "cluster level: no unit vertex"
grep -q '"spine3" \[label="spine3".*dashed' "$tmp/sp.dot" || fail "cluster level: spine3 not drawn down"
if have dot; then
    for f in dgx1 sp; do
        dot -Tsvg "$tmp/$f.dot" >"$tmp/$f.svg" 2>"$tmp/dot.err" || fail "dot -Tsvg $f: $(cat "$tmp/dot.err")"
        check_svg "$tmp/$f.svg" "topo --dot $f"
    done
else
    echo "Graphviz not installed: DOT not laid out"
fi
"$icsim" topo -s "$src/hwmodels/dgx1-v100.json" --dot-level rack >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && [ ! -s "$tmp/out" ] && grep -q 'expected node or cluster' "$tmp/err" || fail "--dot-level rack"
"$icsim" topo -s "$src/hwmodels/dgx1-v100.json" --fail nvlink:gpu0-gpu5 >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && [ ! -s "$tmp/out" ] && grep -q 'no live NVLink link between 0:gpu0 and 0:gpu5' "$tmp/err" ||
    fail "topo --fail of a bond that is not there: $(cat "$tmp/err")"
# what the failure leaves: path classes and routes
"$icsim" topo -s "$src/hwmodels/dgx-h100.json" --matrix --fail nvswitch:nvsw1 >"$tmp/m.txt" || fail "topo --matrix --fail"
grep -q 'NV13' "$tmp/m.txt" || fail "topo --matrix --fail nvswitch:nvsw1: expected NV13"

[ $fails = 0 ] && echo "cli_pictures: all passed"
exit $((fails > 0))
