import os, pstats, subprocess, sys
work = sys.argv[1]; n = int(sys.argv[2]); out = sys.argv[3]
os.makedirs(f"{work}/t", exist_ok=True)
open(f"{work}/t/test_n.py", "w").write("def test_n():\n    assert True\n")
base = [sys.executable, "-m", "cProfile", "-o", None, "-m", "pytest", "-q", "-p", "no:cacheprovider",
        "-p", "cubby.plugin", f"{work}/t/test_n.py"]
stats = {}
for r in range(n):
    for mode in ("unconf", "conf"):
        command = list(base); command[4] = f"{work}/p-{mode}-{r}.out"
        if mode == "conf": command.append(f"--cubby-dir={work}/s")
        subprocess.run(command, capture_output=True)
        s = pstats.Stats(command[4])
        if mode in stats: stats[mode].add(s)
        else: stats[mode] = s
def table(s):
    return {f"{k[0].split('/')[-1]}:{k[1]}:{k[2]}": v[3] / n for k, v in s.stats.items()}
u, c = table(stats["unconf"]), table(stats["conf"])
diff = sorted(((c.get(k, 0) - u.get(k, 0), k) for k in set(u) | set(c)), reverse=True)
with open(out, "w") as f:
    for d, k in diff[:60]:
        f.write(f"{d*1000:8.2f} ms  {k}  (conf {c.get(k,0)*1000:.2f}, unconf {u.get(k,0)*1000:.2f})\n")
    rows = sorted(((v, k) for k, v in c.items() if "cubby" in k), reverse=True)[:30]
    f.write("--- cubby functions, configured (mean per run)\n")
    for v, k in rows: f.write(f"{v*1000:8.2f} ms  {k}\n")
