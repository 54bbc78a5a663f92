"""Medians per round of run.sh's JSON files (attn_bench_checkpoint's peer mode), before (base) and after (keep):
    python3 compare.py [FOLDER]   # rounds/ by default; rounds_smollm2_1/ holds a rerun of SmolLM2, 1 thread"""
import json, glob, statistics, re, sys, collections
folder = sys.argv[1] if len(sys.argv) > 1 else 'rounds'
data = collections.defaultdict(list)
for path in sorted(glob.glob(folder + '/*.json')):
    m = re.match(r'.*/(.+)-(\d)-(base|keep)-(\d)\.json', path)
    model, threads, binary, rnd = m.groups()
    d = json.load(open(path))
    for p in d['prefill']:
        data[(model, threads, f"prefill {p['tokens']} ms", binary)].append(1e3 * statistics.median(p['seconds']))
    for p in d['decode']:
        data[(model, threads, f"decode @{p['context']} ms/token", binary)].append(1e3 * statistics.median(p['seconds']) / p['steps'])
keys = sorted({k[:3] for k in data})
print('| model | threads | what | before (rounds) | after (rounds) | before / after |')
print('|---|---:|---|---|---|---:|')
for k in keys:
    b, a = data[k + ('base',)], data[k + ('keep',)]
    if not a or not b: continue
    print(f"| {k[0].split('-hf')[0]} | {k[1]} | {k[2]} | {' '.join(f'{x:.1f}' for x in b)} | {' '.join(f'{x:.1f}' for x in a)} | {statistics.median(b)/statistics.median(a):.2f}× |")
