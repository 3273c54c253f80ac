import os, resource, statistics, subprocess, sys, time
lib = os.environ["CUBBY_LIBRARY"]
work = sys.argv[1]
os.makedirs(f"{work}/t", exist_ok=True)
open(f"{work}/t/test_n.py", "w").write("def test_n():\n    assert True\n")
py = sys.executable
pt = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"{work}/t/test_n.py"]
arms = {
  "py-pass": [py, "-c", "pass"],
  "py-dlopen": [py, "-c", f"import ctypes; ctypes.CDLL({lib!r})"],
  "py-import-cubby": [py, "-c", "import cubby"],
  "py-cache": [py, "-c", f"import cubby; c = cubby.Cache({work + '/s'!r}); c.usage(estimate=True); c.close()"],
  "py-prefetch": [py, "-c", f"import cubby; p = cubby.Prefetch('x', {work + '/s'!r}); p.stop()"],
  "pytest-plain": pt,
  "pytest-unconf": pt + ["-p", "cubby.plugin"],
  "pytest-conf": pt + ["-p", "cubby.plugin", f"--cubby-dir={work}/s"],
  "pytest-conf-noprefetch": pt + ["-p", "cubby.plugin", f"--cubby-dir={work}/s", "--no-cubby-prefetch"],
}
res = {k: [] for k in arms}
for r in range(int(sys.argv[2])):
    names = list(arms)
    names = names[r % len(names):] + names[:r % len(names)]
    for n in names:
        b = resource.getrusage(resource.RUSAGE_CHILDREN); t = time.perf_counter()
        subprocess.run(arms[n], capture_output=True)
        w = time.perf_counter() - t; a = resource.getrusage(resource.RUSAGE_CHILDREN)
        res[n].append((w, a.ru_utime - b.ru_utime + a.ru_stime - b.ru_stime))
for n, v in res.items():
    print(f"{n:24} wall {statistics.median(x[0] for x in v)*1000:7.1f} ms  cpu {statistics.median(x[1] for x in v)*1000:7.1f} ms")
