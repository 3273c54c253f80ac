#!/usr/bin/env bash
# H200: why a configured pytest session with no kernels costs more than a plain one (the plugin's
# own cost), by import times and a profile; then 9 alternating timed pairs.
set -u
R="$(pwd)"; OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
mkdir -p build/gpu && tar -xJf .gpu/p4/b.tar.xz || exit 1
export LD_LIBRARY_PATH=$R/.carry/lib
export CUBBY_LIBRARY=$R/build/gpu/core/libcubby.so CUBBY_CLI=$R/build/gpu/cli/cubby PYTHONPATH=$R/pytest_plugin/src
W=/tmp/ov; mkdir -p $W; printf 'def test_nothing():\n    assert True\n' > $W/test_nothing.py
cd $W
plain() { python3 -m pytest test_nothing.py -q -p no:cacheprovider -p no:cubby "$@"; }
conf() { python3 -m pytest test_nothing.py -q -p no:cacheprovider -p cubby.plugin --cubby-dir=$W/store "$@"; }
conf >/dev/null 2>&1; plain >/dev/null 2>&1
python3 - <<'PY' > "$OUT/pairs.txt" 2>&1
import subprocess, time, os, statistics
W = "/tmp/ov"
base = ["python3", "-m", "pytest", "test_nothing.py", "-q", "-p", "no:cacheprovider"]
t = {"plain": [], "conf": [], "conf_env": []}
cmds = {"plain": base + ["-p", "no:cubby"], "conf": base + ["-p", "cubby.plugin", f"--cubby-dir={W}/store"],
        "conf_env": base + ["-p", "cubby.plugin"]}
for i in range(9):
    for k in (list(cmds) if i % 2 == 0 else list(cmds)[::-1]):
        env = dict(os.environ)
        if k == "conf_env": env["CUBBY_DIR"] = f"{W}/store"
        s = time.perf_counter(); subprocess.run(cmds[k], env=env, capture_output=True); t[k].append(time.perf_counter() - s)
for k, v in t.items(): print(k, "median", round(statistics.median(v), 3), [round(x, 3) for x in v])
PY
cat "$OUT/pairs.txt"
for i in 1 2; do conf -X importtime >/dev/null 2>"$OUT/imp_conf_$i.txt"; plain -X importtime >/dev/null 2>"$OUT/imp_plain_$i.txt"; done
python3 -X importtime -m pytest test_nothing.py -q -p no:cacheprovider -p cubby.plugin --cubby-dir=$W/store >/dev/null 2>"$OUT/imp_conf.txt"
python3 -X importtime -m pytest test_nothing.py -q -p no:cacheprovider -p no:cubby >/dev/null 2>"$OUT/imp_plain.txt"
sort -t'|' -k2 -n -r "$OUT/imp_conf.txt" | head -25
echo ---; grep -E 'cubby|ctypes' "$OUT/imp_conf.txt" | head -30
python3 -m cProfile -o $W/conf.prof -m pytest test_nothing.py -q -p no:cacheprovider -p cubby.plugin --cubby-dir=$W/store >/dev/null 2>&1
python3 -m cProfile -o $W/plain.prof -m pytest test_nothing.py -q -p no:cacheprovider -p no:cubby >/dev/null 2>&1
python3 - <<'PY' > "$OUT/prof.txt" 2>&1
import pstats
for k in ("conf", "plain"):
    print("=====", k)
    pstats.Stats(f"/tmp/ov/{k}.prof").strip_dirs().sort_stats("cumulative").print_stats(45)
PY
grep -E 'function calls|cubby|plugin.py|_library|ctypes|dlopen|Prefetch|activate|start' "$OUT/prof.txt" | head -40
