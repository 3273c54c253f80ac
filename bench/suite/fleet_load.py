#!/usr/bin/python3
"""Fleet load of the remote tier (issue 26's load goal): N fresh-store `cubby compile` processes,
P at a time, per backend; optionally a process killed (-9) midway (a cluster master).

Each process gets its own empty store folder (CUBBY_DIR) and compiles one of K small programs
(process i compiles program i % K), so after the first few every process is a remote hit. Per
process it records the exit status, the wall time, and the store's counters (`cubby stats
--json`: hits, remote misses, errors, timeouts, the time spent in remote lookups). A backend
passes when no process failed, no process saw a remote error or timeout (except in the kill
case, where errors are expected and only failed processes and late calls count), and no remote
lookup took longer than its deadline (CUBBY_REMOTE_TIMEOUT_MS, default 500 ms).

  fleet_load.py --cubby PATH --out DIR [--n 400] [--parallel 8] [--programs 8]
                --backend NAME=URL [--ca NAME=FILE] [--kill NAME=PIDFILE] ...

ci/fleet-load.sh starts the servers (ci/lib.sh) and runs this. Writes DIR/fleet_load.json and
DIR/fleet_load.md; exits 1 when a backend fails its check. Standard library only.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

KERNEL = """extern "C" __global__ void fleet_kernel_{i}(float* x, float a) {{
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  x[t] = x[t] * a + {i}.0f;
}}
"""


def pairs(values, what):
    out = {}
    for value in values or []:
        name, sep, rest = value.partition("=")
        if not sep or not name or not rest:
            sys.exit(f"error: {what} {value!r} is not NAME=VALUE")
        out[name] = rest
    return out


def one_process(cubby, program, env, work):
    store = tempfile.mkdtemp(prefix="store.", dir=work)
    env = dict(env, CUBBY_DIR=store)
    start = time.monotonic()
    proc = subprocess.run([cubby, "compile", "--json", program], env=env, capture_output=True,
                          text=True)
    wall_ms = (time.monotonic() - start) * 1000.0
    row = {"rc": proc.returncode, "wall_ms": round(wall_ms, 2)}
    try:
        row["tier"] = json.loads(proc.stdout).get("tier")
    except ValueError:
        row["tier"] = None
    if proc.returncode != 0:
        row["stderr"] = proc.stderr[-400:]
    stats = subprocess.run([cubby, "stats", "--json", "--dir", store], env=env,
                           capture_output=True, text=True)
    try:
        counters = json.loads(stats.stdout)
        counters = counters.get("counters", counters)
    except ValueError:
        counters = {}
    for key in ("hits_remote", "remote_misses", "remote_errors", "remote_timeouts",
                "remote_skipped", "remote_rejected", "remote_writes", "remote_writes_dropped",
                "remote_ms", "compiles"):
        value = counters.get(key)
        row[key] = value if isinstance(value, (int, float)) else 0
    shutil.rmtree(store, ignore_errors=True)
    return row


def percentile(values, q):
    values = sorted(values)
    if not values:
        return None
    return values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))]


def run_backend(args, name, url, ca, kill_pidfile, programs, work):
    env = dict(os.environ, CUBBY_REMOTE=url)
    for var in ("CUBBY_REMOTE_MODE", "CUBBY_READ_ONLY", "CUBBY_DISABLE"):
        env.pop(var, None)
    if ca:
        env["CUBBY_REMOTE_CA_FILE"] = ca
    timeout_ms = float(env.get("CUBBY_REMOTE_TIMEOUT_MS", "500"))
    rows = [None] * args.n
    killed = {"at": None}
    done = [0]
    lock = threading.Lock()
    start = time.monotonic()

    def task(i):
        row = one_process(args.cubby, programs[i % len(programs)], env, work)
        with lock:
            done[0] += 1
            if kill_pidfile and killed["at"] is None and done[0] >= args.n // 2:
                with open(kill_pidfile) as f:
                    pid = int(f.read().strip())
                os.kill(pid, signal.SIGKILL)
                killed["at"] = done[0]
                killed["pid"] = pid
        rows[i] = row

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.parallel) as pool:
        list(pool.map(task, range(args.n)))
    total_s = time.monotonic() - start
    lookups = [r for r in rows if r["hits_remote"] + r["remote_misses"] > 0]
    per_lookup_ms = [r["remote_ms"] / (r["hits_remote"] + r["remote_misses"])
                     for r in lookups]
    walls = [r["wall_ms"] for r in rows]
    result = {
        "backend": name, "url": url, "n": args.n, "parallel": args.parallel,
        "programs": len(programs), "total_s": round(total_s, 2), "timeout_ms": timeout_ms,
        "failed_processes": sum(r["rc"] != 0 for r in rows),
        "remote_hits": sum(r["hits_remote"] for r in rows),
        "remote_misses": sum(r["remote_misses"] for r in rows),
        "remote_errors": sum(r["remote_errors"] for r in rows),
        "remote_timeouts": sum(r["remote_timeouts"] for r in rows),
        "remote_skipped": sum(r["remote_skipped"] for r in rows),
        "remote_rejected": sum(r["remote_rejected"] for r in rows),
        "remote_writes": sum(r["remote_writes"] for r in rows),
        "remote_writes_dropped": sum(r["remote_writes_dropped"] for r in rows),
        "compiles": sum(r["compiles"] for r in rows),
        "wall_ms_median": percentile(walls, 0.5), "wall_ms_p99": percentile(walls, 0.99),
        "wall_ms_max": max(walls),
        "lookup_ms_median": round(percentile(per_lookup_ms, 0.5) or 0, 3),
        "lookup_ms_max": round(max(per_lookup_ms or [0]), 3),
        "killed_after": killed["at"],
        "failures": [r for r in rows if r["rc"] != 0][:5],
    }
    problems = []
    if result["failed_processes"]:
        problems.append(f"{result['failed_processes']} failed processes")
    if not kill_pidfile and (result["remote_errors"] or result["remote_timeouts"]):
        problems.append(f"{result['remote_errors']} remote errors, "
                        f"{result['remote_timeouts']} timeouts")
    if result["lookup_ms_max"] > timeout_ms:
        problems.append(f"a remote lookup took {result['lookup_ms_max']} ms > {timeout_ms} ms")
    if result["remote_hits"] == 0:
        problems.append("no remote hit at all")
    result["problems"] = problems
    result["status"] = "met" if not problems else "not met"
    return result


TABLE_HEAD = ("| backend | N / P | failed | remote hits / misses | errors / timeouts | "
              "lookup ms median / max (deadline) | process wall ms median / p99 / max | "
              "total s | goal |\n|---|---|---|---|---|---|---|---|---|\n")


def table_row(r):
    name = r["backend"] + (f" (master -9 after {r['killed_after']})" if r["killed_after"] else "")
    return (f"| {name} | {r['n']} / {r['parallel']} | {r['failed_processes']} | "
            f"{r['remote_hits']} / {r['remote_misses']} | "
            f"{r['remote_errors']} / {r['remote_timeouts']} | "
            f"{r['lookup_ms_median']} / {r['lookup_ms_max']} ({r['timeout_ms']:.0f}) | "
            f"{r['wall_ms_median']:.1f} / {r['wall_ms_p99']:.1f} / {r['wall_ms_max']:.1f} | "
            f"{r['total_s']} | {r['status']}{': ' + '; '.join(r['problems']) if r['problems'] else ''} |\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cubby", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--programs", type=int, default=8)
    parser.add_argument("--backend", action="append", required=True, help="NAME=URL")
    parser.add_argument("--ca", action="append", help="NAME=CA file for that backend")
    parser.add_argument("--kill", action="append", help="NAME=pid file to kill -9 midway")
    parser.add_argument("--n-for", action="append", help="NAME=N for that backend")
    args = parser.parse_args()
    backends = [(b.partition("=")[0], b.partition("=")[2]) for b in args.backend]
    cas, kills, ns = pairs(args.ca, "--ca"), pairs(args.kill, "--kill"), pairs(args.n_for, "--n-for")
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="cubby-fleet-load.")
    results = []
    try:
        programs = []
        for i in range(args.programs):
            path = os.path.join(work, f"fleet_{i}.cu")
            with open(path, "w") as f:
                f.write(KERNEL.format(i=i))
            programs.append(path)
        default_n = args.n
        for name, url in backends:
            base = name.split(":")[0]
            args.n = int(ns.get(name, default_n))
            result = run_backend(args, name, url, cas.get(base), kills.get(name), programs, work)
            results.append(result)
            sys.stdout.write(table_row(result))
            sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(args.out, "fleet_load.json"), "w") as f:
        json.dump({"command": " ".join(sys.argv), "results": results}, f, indent=1)
    with open(os.path.join(args.out, "fleet_load.md"), "w") as f:
        f.write(TABLE_HEAD + "".join(table_row(r) for r in results))
    return 0 if all(r["status"] == "met" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
