#!/bin/bash
# Fourth device run: the refactored --graph path, and the Llama GEMMs from idle (boost clock).
cd "$(dirname "$0")/.."
V=.dev/icsim-validate
exec > >(tee -a "$OUT/log.txt") 2>&1
echo "== date"; date -u
dirs=$(find /usr/local /opt /usr/lib -xdev \( -name 'libcublasLt.so.13*' -o -name 'libnccl.so.2*' \) 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="${dirs}$PWD/.dev/lib"
$V --version
(nvidia-smi dmon -s pucm -d 1 > $OUT/dmon.txt 2>&1 &)
echo "== sanity"; timeout 60 $V compute --graph -n 3 --shapes 256x256x256,1536x1409x8192; echo "rc=$?"
timeout 20 $V compute --graph -n 10001; echo "rc=$? (2 expected)"
for d in bf16 fp16 fp8; do
  sleep 3
  echo "== Llama GEMMs from idle, $d"; timeout 60 $V compute --graph -n 5 -w 1 --dtype $d --shapes $(cat .dev/shapes_train.txt) --json $OUT/train_cold_$d.json; echo "rc=$?"
done
pkill -f 'nvidia-smi dmon'
echo "== done"; date -u
