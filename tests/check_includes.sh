#!/usr/bin/env bash
# Checks every `#include "..."` under SIM_DIR (default: the checkout's sim/) against
# SIM_DIR/include-rules.txt: which module may include which, through which face, and what a
# file compiles against through the headers it includes (the closure). Prints one line per
# violation, "file:line: why", and exits 1 if there is any.
#   tests/check_includes.sh [SIM_DIR]
set -euo pipefail
sim=${1:-"$(dirname "$0")/../sim"}
sim=${sim%/}
rules="$sim/include-rules.txt"
[ -r "$rules" ] || { echo "$rules: cannot read the include rules" >&2; exit 2; }

declare -A faces=() deps=() known=() direct=()
while IFS= read -r line; do
    line=${line%%#*}
    [[ $line =~ ^[[:space:]]*$ ]] && continue
    mod=${line%%:*}
    rest=${line#*:}
    known[$mod]=1
    faces[$mod]=" $(echo ${rest%%|*}) "
    deps[$mod]=" $(echo ${rest#*|}) "
done <"$rules"

module_of() { # PATH under sim/ -> its module: the first folder, "icsim" for sim/icsim.h
    case $1 in
    */*) echo "${1%%/*}" ;;
    *) echo icsim ;;
    esac
}
may_reach() { # FROM-MODULE HEADER: may code of the module compile against the header?
    local to
    to=$(module_of "$2")
    [ "$to" = "$1" ] || [[ ${deps[$1]} == *" $to "* ]] || [[ ${deps[$1]} == *" $2 "* ]]
}

bad=0
violation() {
    echo "$1"
    bad=1
}

check_direct() { # FILE LINE FROM-MODULE TARGET
    local file=$1 ln=$2 from=$3 target=$4 to
    to=$(module_of "$target")
    [ "$to" = "$from" ] && return 0
    if [ -z "${known[$to]:-}" ]; then
        violation "$file:$ln: \"$target\": folder $to is not a module (add a line for it to include-rules.txt)"
    elif [[ $target == *_internal.h ]]; then
        violation "$file:$ln: \"$target\" is $to's internal header"
    elif [ "$to" = cli ]; then
        violation "$file:$ln: \"$target\": nothing outside cli/ includes cli/"
    elif ! may_reach "$from" "$target"; then
        violation "$file:$ln: \"$target\": $from may not include $to (it may include:${deps[$from]% })"
    elif [[ ${deps[$from]} != *" $target "* ]] && [[ ${faces[$to]} != *" $target "* ]]; then
        violation "$file:$ln: \"$target\" is not a face of $to (include one of:${faces[$to]% })"
    fi
}

# Every file's includes of files under sim/, checked directly, and remembered for the closure.
mapfile -d '' paths < <(find "$sim" -name '*.[ch]' -print0 | sort -z)
for path in "${paths[@]}"; do
    rel=${path#"$sim"/}
    from=$(module_of "$rel")
    direct[$rel]=""
    if [ -z "${known[$from]:-}" ]; then
        violation "$sim/$rel: folder $from is not a module (add a line for it to include-rules.txt)"
        continue
    fi
    while IFS=: read -r ln target; do
        if [ ! -e "$sim/$target" ]; then
            [[ $target == */* ]] && violation "$sim/$rel:$ln: \"$target\" does not exist under $sim"
            continue
        fi
        direct[$rel]+=" $target"
        check_direct "$sim/$rel" "$ln" "$from" "$target"
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$path" |
             sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1:\2/')
done

# The closure: a file of module M compiles only against headers M may reach, whatever chain
# of includes brings them in (trace may include collectives/coll.h; if coll.h included
# net/net.h, every trace file would compile against the network).
for rel in "${!direct[@]}"; do
    from=$(module_of "$rel")
    [ -n "${known[$from]:-}" ] || continue
    declare -A seen=()
    for h in ${direct[$rel]}; do seen[$h]=1; done # checked above
    stack=()
    for h in ${direct[$rel]}; do stack+=(${direct[$h]:-}); done
    while [ ${#stack[@]} -gt 0 ]; do
        h=${stack[-1]}
        unset 'stack[-1]'
        [ -n "${seen[$h]:-}" ] && continue
        seen[$h]=1
        may_reach "$from" "$h" || violation "$sim/$rel: compiles against \"$h\" through its includes, which $from may not (it may include:${deps[$from]% })"
        stack+=(${direct[$h]:-})
    done
    unset seen
done

[ $bad -eq 0 ] && echo "include rules: ${#paths[@]} files clean"
exit $bad
