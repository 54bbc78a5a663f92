"""compare.py TAG…: medians over the rounds (r3_<tag>_<round>.json, each the median of 3 repetitions) of each
product's GFLOP/s per build, their share of the FMA peak (the median of every run's fma_peak/threads:1),
and each build's ratio to the first."""
import json,glob,os,statistics,sys,re
here=os.path.dirname(os.path.abspath(__file__))
tags=sys.argv[1:]
res={}; peak={}
for tag in tags:
    for f in sorted(glob.glob(os.path.join(here,f'r3_{tag}_*.json'))):
        d=json.load(open(f))
        for x in d['benchmarks']:
            if x.get('aggregate_name')!='median': continue
            n=x['run_name']
            if n.startswith('fma_peak'):
                peak.setdefault(tag,[]).append(x['GFLOP/s']/1e9 if x['GFLOP/s']>1e6 else x['GFLOP/s']); continue
            v=x['GFLOP/s']; v=v/1e9 if v>1e6 else v
            res.setdefault(n,{}).setdefault(tag,[]).append(v)
for t in tags: print(t,'peak',[round(p,1) for p in peak[t]])
P=statistics.median([p for t in tags for p in peak[t]])
print('| product | rows | '+' | '.join(tags)+' | '+' | '.join(f'{t}/{tags[0]}' for t in tags[1:])+' |')
for n in sorted(res):
    m=re.match(r'from_memory/(\w+)/(\w+)/(\w+)/rows:(\d+)',n)
    meds=[statistics.median(res[n][t]) for t in tags]
    print(f'| {m[1]}/{m[2]} {m[3]} | {m[4]} | '+' | '.join(f'{v:.1f} ({100*v/P:.0f} %)' for v in meds)+' | '+' | '.join(f'{v/meds[0]:.2f}×' for v in meds[1:])+' |')
