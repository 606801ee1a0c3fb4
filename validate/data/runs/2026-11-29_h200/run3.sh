#!/bin/bash
# Third device run: cold squares one at a time (boost clock), and the Llama GEMMs sustained.
cd "$(dirname "$0")/.."
V=.dev/icsim-validate
exec > >(tee -a "$OUT/log.txt") 2>&1
echo "== date"; date -u
dirs=$(find /usr/local /opt /usr/lib -xdev \( -name 'libcublasLt.so.13*' -o -name 'libnccl.so.2*' \) 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="${dirs}$PWD/.dev/lib"
$V --version
(nvidia-smi dmon -s pucm -d 1 > $OUT/dmon.txt 2>&1 &)
mkdir -p /tmp/sq
for d in bf16 fp8; do for s in 256 512 1024 2048 4096 8192 16384; do
  sleep 1.5
  echo "== cold $d $s"; timeout 60 $V compute --dtype $d --graph -n 10 -w 2 --shapes ${s}x${s}x${s} --json /tmp/sq/$d-$s.json | grep -v '^#'
done; done
python3 - "$OUT/cold_squares.json" /tmp/sq/*.json <<'PY'
import json,sys
docs=[json.load(open(f)) for f in sorted(sys.argv[2:], key=lambda f:(f.split('/')[-1].split('-')[0], int(f.split('-')[-1].split('.')[0])))]
out=dict(docs[0]); out['command']='each shape alone after 1.5 s idle: '+docs[0]['command']; out['rows']=[r for d in docs for r in d['rows']]
json.dump(out, open(sys.argv[1],'w'), indent='\t')
PY
sleep 2
echo "== Llama GEMMs sustained, graph, -n 200"; timeout 200 $V compute --graph -n 200 --shapes $(cat .dev/shapes_train.txt) --json $OUT/train_sustained.json; echo "rc=$?"
pkill -f 'nvidia-smi dmon'
echo "== done"; date -u
