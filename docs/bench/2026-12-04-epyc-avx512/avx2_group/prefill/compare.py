import json,glob,statistics,os,sys
here=os.path.dirname(os.path.abspath(__file__))
rows={}
for f in glob.glob(os.path.join(here,'*.json')):
    m,b,t,r=os.path.basename(f)[:-5].split('_')
    d=json.load(open(f))
    for p in d['prefill']:
        rows.setdefault((m,t,p['tokens']),{}).setdefault(b,[]).append(p['tokens']/statistics.median(p['seconds']))
print('| model | threads | prefill | before (tokens/s) | after | after/before |')
print('|---|---:|---:|---:|---:|---:|')
for k in sorted(rows):
    v=rows[k]; a=statistics.median(v['base']); g=statistics.median(v['group'])
    print(f"| {'GPT-2 small F32' if k[0]=='gpt2' else 'SmolLM2-135M BF16'} | {k[1][1:]} | {k[2]} | {a:.0f} | {g:.0f} | {g/a:.2f}× |")
