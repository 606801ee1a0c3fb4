#!/usr/bin/env bash
# The accuracy ratchet, per log: `icsim bench accuracy` must print every log of the ratchet table
# with median busbw errors (below and from 1 MiB) no larger than the table's, and no log the
# table lacks. Lower a figure when a model improves; raising one needs a reason in the commit.
#   tests/accuracy_ratchet.sh ICSIM_BINARY TABLE [bench accuracy options, e.g. --all]
set -u
icsim=$1
table=$2
shift 2
out=$("$icsim" bench accuracy "$@") || { echo "FAIL: icsim bench accuracy exited $?" >&2; exit 1; }
echo "$out"
# bench line: id model n x g rows <1M-med <1M-max >=1M-med >=1M-max ("-": no rows)
echo "$out" | awk -v table="$table" '
    function pct(s) { sub(/%$/, "", s); return s }
    BEGIN {
        while ((getline line < table) > 0) {
            if (line ~ /^#/ || line ~ /^[[:space:]]*$/) continue
            split(line, f)
            small[f[1]] = f[2]; large[f[1]] = f[3]; want[f[1]] = 1
        }
    }
    /^#/ || /^median/ { next }
    {
        id = $1; seen[id] = 1
        if (!(id in want)) { printf "FAIL: %s is not in the ratchet table\n", id; bad++; next }
        if ($7 != "-" && pct($7) + 0 > small[id] + 0) {
            printf "FAIL: %s: median error below 1 MiB %s > %s%%\n", id, $7, small[id]; bad++
        }
        if ($9 != "-" && pct($9) + 0 > large[id] + 0) {
            printf "FAIL: %s: median error from 1 MiB %s > %s%%\n", id, $9, large[id]; bad++
        }
    }
    END { exit bad > 0 }' >&2
