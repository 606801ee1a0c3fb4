#!/bin/bash
# Fifth device run: megatron_probe.py's sweep: the MoE layer at 4, 8, 16 and 32 local experts
# (4,096 tokens), 16 at 1,024 tokens, and the dense MLP, twice. Output in $OUT.
cd "$(dirname "$0")/../../../.."
exec > >(tee -a "$OUT/log.txt") 2>&1
echo "== date"; date -u
cat .dev/mcore/COMMIT
PY=/opt/torch/.venv/bin/python
for t in ${TRIES:-a b}; do
  mkdir -p $OUT/$t
  echo "== megatron probe sweep ($t)"; PROBE=sweep MEGATRON=$PWD/.dev/mcore OUT=$OUT/$t timeout 200 $PY validate/data/runs/2026-11-30_h200/megatron_probe.py 2>&1 | grep -v Warning; echo "rc=$?"
done
echo "== done"; date -u
