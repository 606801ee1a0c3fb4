#!/bin/bash
# Device run: the expert GEMMs of the MoE training rows (bench training), as a rank runs them:
# G experts' GEMMs at once on Transformer Engine's 4 compute streams (--groups G), against the
# same G on one stream and one GEMM alone; from a CUDA graph (the GPU) and from the stream (the
# host issuing them). Everything goes to $OUT.
cd "$(dirname "$0")/../../../.."
V=.dev/icsim-validate
exec > >(tee -a "$OUT/log.txt") 2>&1
echo "== date"; date -u
dirs=$(find /usr/local /opt /usr/lib -xdev \( -name 'libcublasLt.so.13*' -o -name 'libnccl.so.2*' \) 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="${dirs}$PWD/.dev/lib"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
ldd $V | grep -v 'x86_64-linux-gnu/lib[cmd]\|vdso\|ld-linux'
nvidia-smi --query-gpu=name,driver_version,vbios_version,power.limit,clocks.max.sm,clocks.max.mem,memory.total --format=csv
$V --version
nproc; grep -m1 'model name' /proc/cpuinfo
(nvidia-smi dmon -s pucm -d 1 > $OUT/dmon.txt 2>&1 &)
# name G m h f: a rank's G experts, m token copies each, hidden h, expert width f (SwiGLU: fc1 2f)
configs="qwen3_30b_m2048 16 2048 2048 768
qwen3_30b_m4096 16 4096 2048 768
qwen3_30b_m8192 16 8192 2048 768
gptoss_120b_m1024 16 1024 2880 2880
gptoss_120b_m4096 16 4096 2880 2880
qwen3_235b_m4096 4 4096 4096 1536
deepseek_v3_m8192 4 8192 7168 2048"
echo "$configs" > $OUT/configs.txt
echo "== sanity: one small group"; timeout 60 $V compute --graph -n 3 --dtype bf16 --shapes 256x256x256 --groups 4
rc=$?; echo "rc=$rc"; [ $rc = 0 ] || exit 1
echo "== sanitizer: groups, stream and graph"; timeout 90 compute-sanitizer --tool memcheck $V compute -n 2 -w 1 --dtype bf16 --shapes 256x512x256 --groups 6 --streams 4; echo "rc=$?"
timeout 90 compute-sanitizer --tool memcheck $V compute --graph -n 2 -w 1 --dtype fp8 --shapes 256x512x256 --groups 6 --streams 4; echo "rc=$?"
while read name G m h f; do
  f2=$((2 * f))
  # fc1 fwd, fc2 fwd, fc2 dgrad, fc2 wgrad, fc1 dgrad, fc1 wgrad (workload_cost.c: experts_block)
  shapes="${m}x${f2}x${h},${m}x${h}x${f},${m}x${f}x${h},${f}x${h}x${m},${m}x${h}x${f2},${h}x${f2}x${m}"
  echo "$name $shapes" >> $OUT/shapes.txt
  for d in bf16 fp8; do
    echo "== $name $d graph groups $G streams 4"; timeout 60 $V compute --graph -n 20 --dtype $d --shapes $shapes --groups $G --streams 4 --json $OUT/${name}_${d}_g${G}s4_graph.json; echo "rc=$?"
    echo "== $name $d graph groups $G streams 1"; timeout 60 $V compute --graph -n 20 --dtype $d --shapes $shapes --groups $G --streams 1 --json $OUT/${name}_${d}_g${G}s1_graph.json; echo "rc=$?"
    echo "== $name $d graph one GEMM"; timeout 60 $V compute --graph -n 20 --dtype $d --shapes $shapes --json $OUT/${name}_${d}_single_graph.json; echo "rc=$?"
    echo "== $name $d stream groups $G streams 4"; timeout 60 $V compute -n 20 --dtype $d --shapes $shapes --groups $G --streams 4 --json $OUT/${name}_${d}_g${G}s4_stream.json; echo "rc=$?"
  done
done <<< "$configs"
pkill -f 'nvidia-smi dmon'
nvidia-smi -q -d CLOCK,POWER,PERFORMANCE | head -60
echo "== done"; date -u
