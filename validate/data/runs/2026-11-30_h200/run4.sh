#!/bin/bash
# Fourth device run: Megatron-Core's own MoE layer, profiled (megatron_probe.py). Megatron-Core
# (pure Python: torch, numpy, packaging) was carried in .dev/mcore from NVIDIA/Megatron-LM at the
# commit megatron_probe.json names. Output in $OUT.
cd "$(dirname "$0")/../../../.."
exec > >(tee -a "$OUT/log.txt") 2>&1
echo "== date"; date -u
cat .dev/mcore/COMMIT 2>/dev/null
PY=/opt/torch/.venv/bin/python
$PY -c "import numpy, packaging; print('numpy', numpy.__version__, 'packaging', packaging.__version__)"
(nvidia-smi dmon -s pucm -d 1 > $OUT/dmon.txt 2>&1 &)
echo "== megatron probe"; MEGATRON=$PWD/.dev/mcore OUT=$OUT timeout 300 $PY validate/data/runs/2026-11-30_h200/megatron_probe.py; echo "rc=$?"
pkill -f 'nvidia-smi dmon'
echo "== done"; date -u
