#!/bin/bash
# Third device run: run 2's one odd file again (Qwen3-30B's expert GEMMs in fp8, 200 replays on
# 4 streams: two shapes 1.5x and 2.8x slower than at 20 replays): is it the machine, the clock,
# or the 4 streams? Output in $OUT.
cd "$(dirname "$0")/../../../.."
V=.dev/icsim-validate
exec > >(tee -a "$OUT/log.txt") 2>&1
echo "== date"; date -u
dirs=$(find /usr/local /opt /usr/lib -xdev \( -name 'libcublasLt.so.13*' -o -name 'libnccl.so.2*' \) 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="${dirs}$PWD/.dev/lib"
(nvidia-smi dmon -s pucm -d 1 > $OUT/dmon.txt 2>&1 &)
sleep 2
S=4096x1536x2048,4096x2048x768,4096x768x2048,768x2048x4096,4096x2048x1536,2048x1536x4096
for t in a b; do
  for s in 4 1; do
    echo "== qwen3_30b_m4096 fp8 -n 200 streams $s ($t)"; timeout 60 $V compute --graph -n 200 --dtype fp8 --shapes $S --groups 16 --streams $s --json $OUT/qwen3_30b_m4096_fp8_g16s${s}_graph_n200_$t.json; echo "rc=$?"
  done
  echo "== qwen3_30b_m4096 fp8 -n 20 streams 4 ($t)"; timeout 60 $V compute --graph -n 20 --dtype fp8 --shapes $S --groups 16 --streams 4 --json $OUT/qwen3_30b_m4096_fp8_g16s4_graph_n20_$t.json; echo "rc=$?"
done
pkill -f 'nvidia-smi dmon'
echo "== done"; date -u
