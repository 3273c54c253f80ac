"""Why CuPy's own CUBIN differs from cubby's (equality test), and the per-module cost of a warm hit."""
import hashlib, json, os, sys, time, tempfile, ctypes
mode = sys.argv[1]
import cupy
from cupy.cuda import compiler
src = """namespace ns {
template <class T, int N>
__global__ void fill(T* out, T value) {
  for (int i = 0; i < N; ++i) out[i] = value * T(i);
}
}
"""
names = ["ns::fill<float, 32>", "ns::fill<int, 16 + 16>"]
if mode == "eq":
    seen = []
    program = compiler._NVRTCProgram
    orig = program.compile
    def rec(self, options=(), log_stream=None):
        payload, mapping = orig(self, options, log_stream)
        seen.append({"name": self.name, "src_head": self.src[:80], "method": self.method,
                     "options": [o.decode() if isinstance(o, bytes) else o for o in options],
                     "sha": hashlib.sha256(payload).hexdigest()[:16], "len": len(payload), "mapping": bool(mapping)})
        return payload, mapping
    program.compile = rec
    cupy.RawModule(code=src, options=("--std=c++17",), name_expressions=names).get_function(names[0])
    print("OWN", json.dumps(seen))
    opts = [s for s in seen if s["mapping"]][0]["options"]
    L = ctypes.CDLL(os.environ["CUBBY_NVRTC_LIBRARY"])
    def raw(o, name=b"x.cu", text=src.encode()):
        p = ctypes.c_void_p(); L.nvrtcCreateProgram(ctypes.byref(p), text, name, 0, None, None)
        for n in names: L.nvrtcAddNameExpression(p, n.encode())
        arr = (ctypes.c_char_p * len(o))(*[x.encode() for x in o]); rc = L.nvrtcCompileProgram(p, len(o), arr)
        n = ctypes.c_size_t(); L.nvrtcGetCUBINSize(p, ctypes.byref(n)); b = ctypes.create_string_buffer(n.value); L.nvrtcGetCUBIN(p, b)
        print("RAW", rc, hashlib.sha256(b.raw).hexdigest()[:16], len(b.raw), o, name)
    raw(opts); raw(opts, [s for s in seen if s["mapping"]][0]["name"].encode())
    raw([o for o in opts if not o.startswith("-I")])
    raw(["--std=c++17", "-ftz=true", "-arch=sm_90"])
    import cubby
    from cubby import cupy_adapter
    for pch in ("0", "1"):
        os.environ["CUBBY_PCH"] = pch
        c = cubby.Cache(tempfile.mkdtemp())
        rest, arch = cupy_adapter.split_arch(opts)
        r = c.compile(src, names, rest, arch, "/dev/null/cupy/x.cu")
        print("CUBBY pch", pch, hashlib.sha256(r.cubin).hexdigest()[:16], len(r.cubin))
    print("EXPLAIN", c.explain_text(src, names, rest, arch, "/dev/null/cupy/x.cu")[:1200])
else:  # per-module warm cost: sys.argv[2] = store or "" (CuPy's own)
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "tests/python/gpu"))
    cache = None
    if sys.argv[2]:
        import cubby
        from cubby import cupy_adapter
        cache = cubby.Cache(sys.argv[2]); cupy_adapter.install(cache)
    import importlib.util
    spec = importlib.util.spec_from_file_location("w", os.path.join(os.path.dirname(__file__), "tests/python/gpu/test_cupy_mdspan.py"))
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    ts = []
    for i in range(25):
        t = time.perf_counter(); m.module_of(i); ts.append((time.perf_counter() - t) * 1000)
    print("PERMODULE", "cubby" if cache else "own", [round(x, 1) for x in ts], "sum", round(sum(ts), 1),
          json.dumps({k: v for k, v in cache.stats().items() if v}) if cache else "")
