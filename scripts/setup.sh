#!/usr/bin/env bash
# Shared set-up for demo.sh and test.sh: install the Debian packages the build needs (only those
# that are missing, with one `apt-get update` first), then configure and build with CMake.
# Sourced, not run: defines ics_setup_packages and ics_build.

ICS_PACKAGES=(build-essential cmake pkg-config libglib2.0-dev libcjson-dev
              libprotobuf-c-dev protobuf-c-compiler libgsl-dev libsimgrid-dev
              clang clang-format libclang-rt-14-dev
              graphviz libxml2-utils librsvg2-bin libopenmpi-dev openmpi-bin python3)

ics_missing_packages() {
    local p status
    for p in "$@"; do
        status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
        [ "$status" = "install ok installed" ] || printf '%s\n' "$p"
    done
}

ics_setup_packages() {
    local missing sudo=""
    mapfile -t missing < <(ics_missing_packages "${ICS_PACKAGES[@]}")
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "icsim set-up: installing ${missing[*]}"
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo="sudo"
        else
            echo "icsim set-up: cannot install packages (not root, no sudo)." >&2
            echo "Please run: apt-get update && apt-get install -y ${missing[*]}" >&2
            return 1
        fi
    fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -q && $sudo apt-get install -y -q "${missing[@]}"
}

# ics_build DIR [cmake args...]: configure (once) and build into DIR.
ics_build() {
    local dir=$1
    shift
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
    cmake --build "$dir" -j "$(nproc)"
}
