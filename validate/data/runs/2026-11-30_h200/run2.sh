#!/bin/bash
# Second device run: the expert GEMMs sustained (200 graph replays a shape: the power-bound clock
# a training step runs at), and what eager PyTorch's host costs (host_probe.py). Output in $OUT.
cd "$(dirname "$0")/../../../.."
V=.dev/icsim-validate
exec > >(tee -a "$OUT/log.txt") 2>&1
echo "== date"; date -u
dirs=$(find /usr/local /opt /usr/lib -xdev \( -name 'libcublasLt.so.13*' -o -name 'libnccl.so.2*' \) 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="${dirs}$PWD/.dev/lib"
$V --version
PY=/opt/torch/.venv/bin/python
echo "== python packages"; $PY -m pip list 2>/dev/null | grep -i -E "^(torch|triton|transformer|megatron|apex|flash|nvidia-(cublas|cudnn|nccl))" ; $PY -c "import transformer_engine as te; print('transformer_engine', te.__version__)" 2>&1 | tail -1
lscpu | grep -E "Model name|^CPU\(s\)|MHz|Thread|Socket" 
(nvidia-smi dmon -s pucm -d 1 > $OUT/dmon.txt 2>&1 &)
sleep 2
echo "== sustained groups"
while read name G m h f; do
  f2=$((2 * f))
  shapes="${m}x${f2}x${h},${m}x${h}x${f},${m}x${f}x${h},${f}x${h}x${m},${m}x${h}x${f2},${h}x${f2}x${m}"
  for d in bf16 fp8; do
    echo "== $name $d graph groups $G streams 4, -n 200"; timeout 60 $V compute --graph -n 200 --dtype $d --shapes $shapes --groups $G --streams 4 --json $OUT/${name}_${d}_g${G}s4_graph_n200.json; echo "rc=$?"
  done
done <<'CFG'
qwen3_30b_m4096 16 4096 2048 768
gptoss_120b_m4096 16 4096 2880 2880
deepseek_v3_m8192 4 8192 7168 2048
CFG
sleep 3
echo "== host probe"; OUT=$OUT timeout 240 $PY validate/data/runs/2026-11-30_h200/host_probe.py; echo "rc=$?"
pkill -f 'nvidia-smi dmon'
echo "== done"; date -u
