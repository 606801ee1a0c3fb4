#!/bin/bash
# Second device run: GEMM sweeps with --shapes, and CUDA-graph timing (--graph).
cd "$(dirname "$0")/.."
V=.dev/icsim-validate
exec > >(tee -a "$OUT/log.txt") 2>&1
echo "== date"; date -u
dirs=$(find /usr/local /opt /usr/lib -xdev \( -name 'libcublasLt.so.13*' -o -name 'libnccl.so.2*' \) 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="${dirs}$PWD/.dev/lib"
nvidia-smi --query-gpu=name,driver_version,vbios_version,power.limit,clocks.sm,temperature.gpu --format=csv
$V --version
(nvidia-smi dmon -s pucm -d 1 > $OUT/dmon.txt 2>&1 &)
sleep 2
echo "== K sweep, cold"; timeout 100 $V compute --dtype bf16 --shapes $(cat .dev/shapes_k.txt) --json $OUT/ksweep_bf16.json; echo "rc=$?"
sleep 3
echo "== K sweep fp8"; timeout 100 $V compute --dtype fp8 --shapes $(cat .dev/shapes_k.txt) --json $OUT/ksweep_fp8.json; echo "rc=$?"
sleep 3
echo "== wave sweep"; timeout 150 $V compute --dtype bf16 -n 50 --shapes $(cat .dev/shapes_wave.txt) --json $OUT/wave_bf16.json; echo "rc=$?"
echo "== wave sweep fp8"; timeout 150 $V compute --dtype fp8 -n 50 --shapes $(cat .dev/shapes_wave.txt) --json $OUT/wave_fp8.json; echo "rc=$?"
sleep 3
echo "== training shapes"; timeout 150 $V compute --shapes $(cat .dev/shapes_train.txt) --json $OUT/train_shapes.json; echo "rc=$?"
sleep 3
echo "== default plan, graph"; timeout 150 $V compute --graph --json $OUT/compute_graph.json; echo "rc=$?"
pkill -f 'nvidia-smi dmon'
echo "== done"; date -u
