#!/bin/bash
# Device run for icsim-validate on a one-GPU machine; everything goes to $OUT.
cd "$(dirname "$0")/.."
V=.dev/icsim-validate
L=$OUT/log.txt
exec > >(tee -a "$L") 2>&1
echo "== date"; date -u; uname -a; cat /etc/os-release | head -3
dirs=$(find /usr/local /opt /usr/lib -xdev \( -name 'libcublasLt.so.13*' -o -name 'libnccl.so.2*' \) 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="${dirs}$PWD/.dev/lib"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
ldd $V | grep -v 'x86_64-linux-gnu/lib[cmd]\|vdso\|ld-linux'
echo "== nvidia-smi"; nvidia-smi; nvidia-smi topo -m
nvidia-smi -q > $OUT/smi_q.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,vbios_version,power.limit,clocks.max.sm,clocks.max.mem,memory.total --format=csv
$V --version
(nvidia-smi dmon -s pucm -d 1 > $OUT/dmon.txt 2>&1 &)
echo "== compute A"; timeout 150 $V compute --json $OUT/compute.json; echo "rc=$?"
echo "== compute B (repeat)"; timeout 150 $V compute --json $OUT/compute_rep.json; echo "rc=$?"
echo "== compute bf16 -n 200"; timeout 150 $V compute --dtype bf16 -n 200 --json $OUT/compute_bf16_n200.json; echo "rc=$?"
echo "== p2p sm"; timeout 60 $V p2p --json $OUT/p2p.json; echo "rc=$?"
echo "== p2p ce"; timeout 60 $V p2p --kernel ce --json $OUT/p2p_ce.json; echo "rc=$?"
for c in 1 2 4 8 16 32; do echo "== p2p ctas $c"; timeout 40 $V p2p --ctas $c -b 256M; echo "rc=$?"; done
echo "== nvls"; timeout 40 $V nvls -b 8 -e 64M -f 8 -n 2; echo "rc=$?"
echo "== collective -g 1 all"; timeout 40 $V collective all_reduce -g 1 -b 8 -e 64M -f 8 -n 5 --kernel all; echo "rc=$?"
echo "== sanitizer p2p"; timeout 90 compute-sanitizer --tool memcheck $V p2p -b 1M -n 2 -w 1; echo "rc=$?"
pkill -f 'nvidia-smi dmon'
nvidia-smi -q -d CLOCK,POWER,PERFORMANCE,TEMPERATURE
echo "== done"; date -u
