#!/usr/bin/env bash
# Install what is missing, build, and run the default scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
ics_setup_packages
ics_build build
set -x
build/icsim topo -s hwmodels/dgx-h100.json --matrix
build/icsim collective all_reduce -s hwmodels/dgx-h100.json -b 8 -e 8G -f 4
build/icsim collective all_reduce -s hwmodels/superpod-h100-ndr.json -b 8 -e 8G -f 4
build/icsim train scenarios/gpt3-175b-h100-1024.json
build/icsim bench engine
