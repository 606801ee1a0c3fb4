#!/usr/bin/env bash
# Fails if any C file differs from what clang-format makes of it (the committed .clang-format).
set -euo pipefail
cd "$1"
mapfile -t files < <(git ls-files '*.c' '*.h' 2>/dev/null || find sim tests validate -name '*.[ch]')
[ ${#files[@]} -gt 0 ] || { echo "no C files found" >&2; exit 1; }
clang-format --dry-run --Werror "${files[@]}"
echo "clang-format: ${#files[@]} files clean"
