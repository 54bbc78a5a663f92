#!/bin/sh
# usage: ab.sh OLD NEW ROUNDS MODELDIR WEIGHTS THREADS -> prints per-round ms/step
OLD=$1; NEW=$2; R=$3; D=$4; W=$5; T=$6
for r in $(seq 1 $R); do
  for b in old new; do
    if [ $b = old ]; then B=$OLD; else B=$NEW; fi
    $B $D peer --threads $T --prefill 16 --decode 128 --steps 32 --reps 3 --weights $W --read-bandwidth 1 2>/dev/null | /usr/bin/python3 -c "
import json,sys; r=json.load(sys.stdin); d=r['decode'][0]; w=r['step_weights_bytes']
ms=[1e3*s/d['steps'] for s in d['seconds']]; sh=[w*d['steps']/s/b for s,b in zip(d['seconds'], d['read_bytes_per_second'])]
print('$r $b', ' '.join('%.2f'%m for m in ms), 'best %.2f'%min(ms), 'shares', ' '.join('%.0f%%'%(100*x) for x in sh))"
  done
done
