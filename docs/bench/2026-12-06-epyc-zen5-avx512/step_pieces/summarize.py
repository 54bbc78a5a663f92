import json,sys,statistics,re
d=json.load(open(sys.argv[1])); err=open(sys.argv[2]).read()
ways=[float(x) for x in re.findall(r'way (\d): ([\d.]+)',err) and [m[1] for m in re.findall(r'way (\d): ([\d.]+)',err)]]
w=d['step_weights_bytes']
for e in d['decode']:
    steps=e['steps']; cache=e['cache_bytes_per_step']
    rates=[(w+cache)*steps/s/1e9 for s in e['seconds']]
    print('ctx',e['context'],'step ms',' '.join('%.2f'%(s/steps*1e3) for s in e['seconds']))
    print(' step GB/s',' '.join('%.1f'%r for r in rates))
    print(' read GB/s',' '.join('%.1f'%(r/1e9) for r in e.get('read_bytes_per_second',[])))
    print(' step-read GB/s',' '.join('%.1f'%(r/1e9) for r in e.get('step_read_bytes_per_second',[])))
    print(' share of read',' '.join('%.0f%%'%(100*a/(b/1e9)) for a,b in zip(rates,e.get('read_bytes_per_second',[]))))
    print(' share of step-read',' '.join('%.0f%%'%(100*a/(b/1e9)) for a,b in zip(rates,e.get('step_read_bytes_per_second',[]))))
# ways: per rep 2 passes x 3 ways
n=len(ways)//3
print(' ways (2 runs, 4 runs, 4 runs + next prefetched):')
for i in range(0,len(ways),6):
    chunk=ways[i:i+6]
    print('  rep', i//6, ' '.join('%.1f'%x for x in chunk))
