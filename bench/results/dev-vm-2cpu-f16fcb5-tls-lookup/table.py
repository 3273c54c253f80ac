import json, glob, statistics, re, collections, sys
# Usage: python3 table.py DIR (the JSON files of run.sh: *-old-* before, the rest after).
root = sys.argv[1]
wall = collections.defaultdict(list); cpu = collections.defaultdict(list)
for f in sorted(glob.glob(root + '/*.json')):
    v = 'before' if '-old-' in f else 'after'
    try: doc = json.load(open(f))
    except Exception: continue
    for b in doc['benchmarks']:
        if b.get('run_type') != 'iteration' or b.get('error_occurred'): continue
        name = re.sub(r'/(iterations:\d+/)?real_time$', '', b['run_name'])
        wall[(v, name)].append(b['real_time']); cpu[(v, name)].append(b['cpu_time'])
print("| benchmark | tree | redis: median / min (us) | rediss: median / min (us) | rediss / redis: median, min | CPU (client) rediss / redis, median |")
print("|---|---|---|---|---|---|")
for n in sorted({n for (_, n) in wall}):
    if '/rediss' in n or '/redis' not in n: continue
    t = n.replace('/redis', '/rediss')
    for v in ('before', 'after'):
        a, b = wall.get((v, n)), wall.get((v, t))
        if not a or not b: continue
        ca, cb = statistics.median(cpu[(v, n)]), statistics.median(cpu[(v, t)])
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"| {n.replace('/redis','/<backend>')} | {v} | {ma:.1f} / {min(a):.1f} | {mb:.1f} / {min(b):.1f} | {mb/ma:.2f}x, {min(b)/min(a):.2f}x | {ca:.1f} -> {cb:.1f} ({cb/ca:.2f}x) |")
