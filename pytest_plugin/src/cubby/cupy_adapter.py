"""CuPy compiles through cubby: header-exact keys, PCH, recipes, prefetch, one compile per kernel.

Interception point (CuPy 14.0 to 14.2, and CuPy's main branch as of 15.0a1):
``cupy.cuda.compiler._NVRTCProgram``, the class every NVRTC compile of CuPy goes through
(``RawModule``, ``RawKernel``, ``ElementwiseKernel``, ``ReductionKernel``, ``cupy.fuse`` ... reach
it by ``_compile_module_with_cache`` -> ``_compile_with_cache_cuda`` ->
``_compile_using_nvrtc_no_warning``; CuPy's empty-program compile of ``_preprocess`` too). It is
constructed as ``_NVRTCProgram(source, name, headers, include_names, name_expressions, method)``
and ``compile(options, log_stream)`` returns ``(payload, mapping)``: the CUBIN (``method``
'cubin'), PTX ('ptx') or LTO-IR ('lto') bytes, and ``{name expression: lowered name}`` (None
without name expressions). ``options`` there are final: CuPy's ``-I`` folders (its own headers,
its CCCL), ``-ftz=true``, ``--device-as-default-execution-space``, ``-arch=sm_XX`` or
``-arch=compute_XX``, ``-std=...``. The adapter replaces the class by a subclass whose compile()
asks ``cubby.Cache.compile`` with the source, those options (the architecture option taken out and
passed as cubby's ``arch``), the name expressions and a stable program name, so the key covers
every header the source can include, and returns what CuPy's would: the same payload kind and
the same mapping (and the same bytes: CuPy's ``getCUBIN`` drops the CUBIN's last byte, see
cupys_payload). An NVRTC error raises ``cupy.cuda.compiler.CompileException`` with NVRTC's log,
as CuPy's own compile does.

CuPy's ``_compile_using_nvrtc_no_warning`` is wrapped so it makes no temporary folder (CuPy writes
each program's source into one and deletes it before NVRTC runs, only to name the program): the
wrapper asks CuPy's in-memory form and gives the program the name that folder would have led to
(make_nvrtc_compile), so keys are the ones before.

CuPy's own kernel cache is switched to a pass-through backend (every ``load`` misses, ``save``
stores nothing), so a kernel whose headers changed is never served from it: CuPy's cache names
hash the source and options but not the headers a source includes.

CuPy's own compiles of ``backend='nvcc'`` programs and jitify-mode programs (which carry jitify's
preprocessed headers) are stored in cubby's store as blobs (_cupy_own_way): they would otherwise
be compiled again in every run, CuPy's own cache being a pass-through. Compiles that go CuPy's
own way without the store, counted by reason in the plugin's summary (and in the Cache as programs
compiled without the store, reason ``compiled_elsewhere``): such a program without a storable key,
a payload kind cubby does not produce, options without exactly one architecture, a request cubby
rejects (an option it cannot key). On HIP the adapter is not installed.

A CuPy >= 14 without that class (its internals moved) gets the blob path instead: CuPy's own
payloads stored byte for byte in the cubby store under CuPy's names (``CubbyKernelCacheBackend``),
with one warning naming the CuPy version; those names do not cover headers. So does a CuPy whose
NVRTC is not cubby's (NVRTC versions differ: set CUBBY_NVRTC_LIBRARY to CuPy's libnvrtc), found at
its first program: the install does not wait for cubby's NVRTC (warm_up), and that first program
is compiled CuPy's way and saved on the blob path.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
import threading
import time
import warnings
from typing import Callable, Dict, List, Optional, Tuple

from . import _cupy_own_way
from ._cache import Cache, ReadAhead
from ._errors import CompileError, Error

NAMESPACE = "cupy"
MIN_CUPY_MAJOR = 14
# How long a miss waits for another process's compile of the same kernel (a mdspan module takes a
# few seconds; a dead compiler's claim ends with its process at once).
CLAIM_WAIT_S = 120.0
# The parameters _NVRTCProgram must have for the compile path (CuPy 14.0 - 14.2).
PROGRAM_PARAMETERS = ("src", "name", "headers", "include_names", "name_expressions", "method")
# CuPy's `method` -> cubby's payload kind and the architecture prefix it needs.
METHODS = {"cubin": ("cubin", "sm_"), "ptx": ("ptx", "compute_"), "lto": ("ltoir", "compute_")}
# The program name cubby gets for CuPy's temporary ones: CuPy names a program after a file in a
# temporary folder it has deleted by the time NVRTC runs (nothing is found beside it); a folder
# under /dev/null cannot exist either, and the name stays the same from run to run and machine to
# machine, so keys are stable and shareable. An empty name is NVRTC's "default_program" (beside
# it: the working folder), passed on as such.
ABSENT_PROGRAM_DIR = "/dev/null/cupy"
# The parameters of CuPy's _compile_using_nvrtc_no_warning the adapter wraps (CuPy 14.0 - 14.2).
NVRTC_COMPILE_PARAMETERS = ("source", "options", "arch", "filename", "name_expressions",
                            "log_stream", "cache_in_memory", "jitify", "method")
# The parameters of CuPy's compile_using_nvcc the adapter wraps (CuPy 14.0 - 14.2).
NVCC_COMPILE_PARAMETERS = ("source", "options", "arch", "filename", "code_type",
                           "separate_compilation", "log_stream")

# Called as observer(name) after every save() of the blob path (a compile CuPy did): require-warm.
_save_observers: List[Callable[[str], None]] = []
# Called as observer(reason, name) for every compile that goes CuPy's own way: require-warm.
_own_observers: List[Callable[[str, str], None]] = []


class CubbyKernelCacheBackend:
    """The blob path: CuPy's backend interface over a cubby.Cache, CuPy's payloads stored byte
    for byte under CuPy's names (for a CuPy whose compile path moved). Thread-safe."""

    def __init__(self, cache: Cache) -> None:
        self._cache = cache
        self._lock = threading.Lock()
        self._missed_at: Dict[str, float] = {}
        self._claims: Dict[int, str] = {}  # thread id -> the kernel it claimed and compiles
        self.hits = 0
        self.misses = 0
        self.saves = 0
        self.load_ms = 0.0  # time spent in load(), claim waits included

    def load(self, name: str) -> Optional[bytes]:
        thread = threading.get_ident()
        with self._lock:
            unanswered = self._claims.pop(thread, None)
        if unanswered is not None:  # its compile failed: let the others compile it
            self._cache.blob_release(NAMESPACE, unanswered)
        started = time.perf_counter()
        payload = self._cache.blob_get(NAMESPACE, name, claim_wait=CLAIM_WAIT_S)
        with self._lock:
            self.load_ms += (time.perf_counter() - started) * 1000.0
            if payload is None:
                self.misses += 1
                self._missed_at[name] = time.perf_counter()
                self._claims[thread] = name
            else:
                self.hits += 1
        return payload

    def save(self, name: str, cubin: bytes, source: str = "") -> None:
        with self._lock:
            started = self._missed_at.pop(name, None)
            if self._claims.get(threading.get_ident()) == name:
                del self._claims[threading.get_ident()]
            self.saves += 1
        # The time from the miss to the save is what CuPy's compile cost (credited on later hits).
        compile_ms = (time.perf_counter() - started) * 1000.0 if started is not None else 0.0
        self._cache.blob_put(NAMESPACE, name, bytes(cubin), compile_ms)  # gives the claim back
        for observer in list(_save_observers):
            observer(name)

    def counters(self) -> Dict[str, float]:
        with self._lock:
            return {"cupy_hits": self.hits, "cupy_misses": self.misses, "cupy_saves": self.saves,
                    "cupy_load_ms": self.load_ms}


class PassThroughBackend:
    """CuPy's kernel-cache backend while its compiles go through cubby: every load misses (CuPy
    then builds the program, which asks cubby), save stores nothing (cubby stored it).
    ``first_load(name)``, when given, answers the first load instead (install(): the NVRTC check,
    which may move CuPy to the blob path, whose load then answers)."""

    def __init__(self, first_load: Optional[Callable[[str], Optional[bytes]]] = None) -> None:
        self._first_load = first_load

    def load(self, name: str) -> Optional[bytes]:
        first, self._first_load = self._first_load, None
        return first(name) if first is not None else None

    def save(self, name: str, cubin: bytes, source: str = "") -> None:
        return None


class CompileRouter:
    """How CuPy's programs went: through cubby (served by the store, compiled into it, or compiled
    by cubby without it: CompileResult.uncached) or CuPy's own way (by reason; also counted in the
    Cache as compiled_elsewhere, so `cubby stats` and the summary's "compiled without the store"
    lines include them). Thread-safe."""

    def __init__(self, cache: Cache, check_nvrtc: Callable[[], str] = lambda: "") -> None:
        self.cache = cache
        self._lock = threading.Lock()
        self.served = 0  # hits
        self.compiled = 0  # compiled and stored (or failed to compile)
        self.uncached = 0  # compiled by cubby without the store
        self.own: Dict[str, int] = {}
        self._check_nvrtc = check_nvrtc
        self._nvrtc_note: Optional[str] = None
        self.on_nvrtc_mismatch: Callable[[str], None] = lambda note: None

    def nvrtc_differs(self) -> bool:
        """Whether CuPy's NVRTC is not cubby's: asked at the first program only (install() does
        not wait for cubby's NVRTC and toolkit listing, which a warm-up thread is doing), then
        remembered; on a difference ``on_nvrtc_mismatch(note)`` runs once, first."""
        with self._lock:
            first = self._nvrtc_note is None
            if first:
                self._nvrtc_note = self._check_nvrtc()
            note = self._nvrtc_note
        if first and note:
            self.on_nvrtc_mismatch(note)
        return bool(note)

    def count_own(self, reason: str, name: str) -> None:
        with self._lock:
            self.own[reason] = self.own.get(reason, 0) + 1
        try:
            self.cache.count_uncached("compiled_elsewhere",
                                      f"CuPy's own way: {reason} (program {name})")
        except Error:  # counting must never fail CuPy's compile
            pass
        for observer in list(_own_observers):
            observer(reason, name)

    def count_served(self) -> None:
        with self._lock:
            self.served += 1

    def count_compiled(self) -> None:
        with self._lock:
            self.compiled += 1

    def count_cubby(self, result=None) -> None:
        """A program through cubby: ``result`` its CompileResult (None: NVRTC rejected it)."""
        with self._lock:
            if result is not None and result.hit:
                self.served += 1
            elif result is not None and result.uncached:
                self.uncached += 1
            else:
                self.compiled += 1

    def counters(self) -> Dict[str, float]:
        with self._lock:
            counters: Dict[str, float] = {"cupy_served": self.served,
                                          "cupy_compiled": self.compiled,
                                          "cupy_uncached": self.uncached}
            for reason, count in self.own.items():
                counters[f"cupy_own:{reason}"] = count
            return counters


def cupys_payload(method: str, payload: bytes) -> bytes:
    """What CuPy's own compile returns for NVRTC's ``payload``: CuPy's ``getCUBIN``
    (cupy_backends/cuda/libs/nvrtc.pyx, CuPy 14.x and main) returns the CUBIN without its last
    byte ("strip the trailing NULL", as for PTX; measured on the H200: CuPy's own 7503 bytes,
    NVRTC's 7504 with the same options), so a CUBIN from cubby is cut the same way, byte for
    byte what CuPy's compile gives. Its ``getPTX`` drops PTX's terminating NUL, which cubby's PTX
    payload already lacks; LTO-IR is passed on whole."""
    return payload[:-1] if method == "cubin" and payload else payload


def split_arch(options) -> Tuple[List[str], Optional[str]]:
    """(options without the architecture option, its value); value None unless there is exactly
    one (-arch=X, -arch X, --gpu-architecture=X or --gpu-architecture X)."""
    rest: List[str] = []
    found: List[str] = []
    items = [o.decode() if isinstance(o, bytes) else str(o) for o in options]
    i = 0
    while i < len(items):
        option = items[i]
        name, eq, value = option.partition("=")
        if name in ("-arch", "--gpu-architecture"):
            if eq:
                found.append(value)
            elif i + 1 < len(items):
                i += 1
                found.append(items[i])
            else:
                found.append("")
        else:
            rest.append(option)
        i += 1
    return rest, (found[0] if len(found) == 1 and found[0] else None)


def stable_program_name(name: str) -> str:
    """The program name cubby keys for CuPy's `name` (see ABSENT_PROGRAM_DIR)."""
    if not name:
        return "default_program"
    if name.startswith(ABSENT_PROGRAM_DIR + "/"):  # make_nvrtc_compile's: no look needed
        return name
    folder = os.path.dirname(name)
    if os.path.isabs(name) and not os.path.isdir(folder):
        return f"{ABSENT_PROGRAM_DIR}/{os.path.basename(name)}"
    return name


# The name the wrapped _compile_using_nvrtc_no_warning gives the program it makes (per thread).
_program_name = threading.local()


def make_nvrtc_compile(original: Callable,
                       store: Optional[_cupy_own_way.OwnWayStore] = None) -> Callable:
    """CuPy's ``_compile_using_nvrtc_no_warning`` without its temporary folder: for each program
    CuPy creates a folder, writes the source into it and deletes it before NVRTC runs (only the
    program's name is used), about 0.5 ms a program on the H200 for nothing once cubby serves the
    compile. The wrapper asks CuPy's in-memory form (no folder) and hands the program the name
    the folder would have led to (ABSENT_PROGRAM_DIR/<CuPy's file name>: the same name, so the
    same key and the same NVRTC search as before). A jitify compile (which reads the name) is
    CuPy's, stored through ``store`` when given (_cupy_own_way); one already in memory is CuPy's
    as it was."""

    def compile_(source, options=(), arch=None, filename="kern.cu", name_expressions=None,
                 log_stream=None, cache_in_memory=False, jitify=None, method=None):
        if jitify and store is not None:
            return _cupy_own_way.jitify_compile(original, store, source, options, arch,
                                                filename, name_expressions, log_stream,
                                                cache_in_memory, method)
        if cache_in_memory or jitify or not filename:
            return original(source, options, arch, filename, name_expressions, log_stream,
                            cache_in_memory, jitify, method)
        _program_name.value = f"{ABSENT_PROGRAM_DIR}/{os.path.basename(filename)}"
        try:
            return original(source, options, arch, filename, name_expressions, log_stream, True,
                            jitify, method)
        finally:
            _program_name.value = None

    compile_.__wrapped__ = original  # type: ignore[attr-defined]
    return compile_


def wrappable(compiler, function_name: str, parameters: Tuple[str, ...]) -> bool:
    """Whether CuPy's ``function_name`` has the ``parameters`` its wrapper passes on (else it is
    left as it is: _compile_using_nvrtc_no_warning's temporary folder is made, CuPy's nvcc and
    jitify programs are compiled in every run, counted as CuPy's own way)."""
    function = getattr(compiler, function_name, None)
    try:
        return tuple(inspect.signature(function).parameters) == parameters
    except (TypeError, ValueError):
        return False


def make_program_class(base: type, router: CompileRouter, compiler) -> type:
    """A subclass of CuPy's _NVRTCProgram whose compile() goes through cubby where it can."""

    class CubbyNVRTCProgram(base):  # type: ignore[misc, valid-type]
        def __init__(self, src, name="default_program", headers=(), include_names=(),
                     name_expressions=None, method="ptx"):
            reason = ""
            if headers or include_names:
                reason = "jitify"
            elif method not in METHODS:
                reason = f"method {method}"
            self._cubby_own = reason
            if not name:  # made by make_nvrtc_compile's in-memory call: the name it would have had
                name = getattr(_program_name, "value", None) or name
            if reason:
                super().__init__(src, name, headers, include_names, name_expressions, method)
                return
            # CuPy's fields, without creating an NVRTC program (cubby does that on a miss).
            self.ptr = None
            self.src = src.decode("UTF-8") if isinstance(src, bytes) else src
            self.name = name.decode("UTF-8") if isinstance(name, bytes) else name
            self.name_expressions = name_expressions
            self.method = method

        def _own(self, reason: str, options, log_stream):
            router.count_own(reason, getattr(self, "name", ""))
            if self.ptr is None:  # created as cubby's: CuPy's program now
                super().__init__(self.src, self.name, (), (), self.name_expressions, self.method)
            return super().compile(options, log_stream)

        def compile(self, options=(), log_stream=None):
            if self._cubby_own:
                if not _cupy_own_way.counted_by_store():
                    router.count_own(self._cubby_own, getattr(self, "name", ""))
                return super().compile(options, log_stream)
            if router.nvrtc_differs():  # CuPy is on the blob path now: its compile is saved there
                if self.ptr is None:
                    super().__init__(self.src, self.name, (), (), self.name_expressions,
                                     self.method)
                return super().compile(options, log_stream)
            kind, prefix = METHODS[self.method]
            rest, arch = split_arch(options)
            if arch is None or not arch.startswith(prefix):
                return self._own("architecture option", options, log_stream)
            names = list(self.name_expressions or ())
            try:
                result = router.cache.compile(self.src, names, rest, arch,
                                              stable_program_name(self.name))
            except CompileError as error:
                router.count_cubby()
                raise compiler.CompileException(error.log or str(error), self.src, self.name,
                                                options, "nvrtc") from None
            except Error:
                return self._own("rejected by cubby", options, log_stream)
            if result.payload_kind != kind:
                return self._own(f"payload {result.payload_kind}", options, log_stream)
            router.count_cubby(result)
            if log_stream is not None:
                log_stream.write(result.log)
            mapping = {name: result.lowered_names[name] for name in names} if names else None
            return cupys_payload(self.method, result.cubin), mapping

    CubbyNVRTCProgram.__qualname__ = CubbyNVRTCProgram.__name__ = "CubbyNVRTCProgram"
    return CubbyNVRTCProgram


def _version(cupy) -> str:
    return str(getattr(cupy, "__version__", "0"))


def cupy_findable() -> bool:
    """Whether a CuPy is installed, without importing it (a few hundred ms)."""
    try:
        return "cupy" in sys.modules or importlib.util.find_spec("cupy") is not None
    except (ImportError, ValueError):
        return False


def cupy_status() -> Tuple[bool, str]:
    """(usable, why): whether an importable CuPy >= 14 offers _set_kernel_cache_backend."""
    if importlib.util.find_spec("cupy") is None:
        return False, "CuPy is not installed"
    try:
        cupy = importlib.import_module("cupy")
        compiler = importlib.import_module("cupy.cuda.compiler")
    except Exception as error:  # a broken CuPy must not break the test session
        return False, f"CuPy could not be imported ({type(error).__name__}: {error})"
    version = _version(cupy)
    try:
        major = int(version.split(".")[0])
    except ValueError:
        major = 0
    if major < MIN_CUPY_MAJOR:
        return False, f"CuPy {version} is older than {MIN_CUPY_MAJOR}"
    if not hasattr(compiler, "_set_kernel_cache_backend"):
        return False, f"CuPy {version} has no cupy.cuda.compiler._set_kernel_cache_backend"
    return True, f"CuPy {version}"


def compile_path_missing(compiler) -> str:
    """'' when CuPy's compile path is the one this adapter knows, else what moved."""
    program = getattr(compiler, "_NVRTCProgram", None)
    if not isinstance(program, type) or not callable(getattr(program, "compile", None)):
        return "cupy.cuda.compiler._NVRTCProgram is gone"
    if not hasattr(compiler, "CompileException"):
        return "cupy.cuda.compiler.CompileException is gone"
    try:
        parameters = tuple(inspect.signature(program.__init__).parameters)[1:]
    except (TypeError, ValueError):
        return "cupy.cuda.compiler._NVRTCProgram's signature cannot be read"
    if parameters != PROGRAM_PARAMETERS:
        return f"cupy.cuda.compiler._NVRTCProgram takes {parameters}, not {PROGRAM_PARAMETERS}"
    return ""


def warm_up(cache: Optional[Cache] = None, read_ahead: bool = False,
            then: Optional[Callable[[Optional[ReadAhead]], None]] = None) -> threading.Thread:
    """Starts, in a daemon thread, what install() and a process's first compile ask first: NVRTC
    located and the toolkit headers' identity (every file of NVRTC's include folder listed: about
    0.1 s on the H200 with CuPy's NVRTC wheel), memoized for the process, so any Cache opened
    later finds it done. ``cache``: the one to ask (None: the thread opens one on the store the
    environment names and closes it). With ``read_ahead`` (and a ``cache``), then the entries of
    the suite's recorded recipes (Cache.read_ahead): the session's lookups hit that Cache's memory
    and their header scans are done; ``then`` is called with what it did (None: it failed). The
    plugin starts it while pytest collects (ctypes runs the calls without the GIL). Never raises:
    a failure leaves the work to install()."""

    def run() -> None:
        done: Optional[ReadAhead] = None
        try:
            if cache is not None:
                cache.explain("", arch="sm_90")
                if read_ahead:
                    done = cache.read_ahead()
                return
            with Cache() as own:
                own.explain("", arch="sm_90")
        except Exception:  # a warm-up only: install() meets the same error and says it
            pass
        finally:
            if read_ahead and cache is not None and then is not None:
                then(done)

    thread = threading.Thread(target=run, name="cubby-cupy-warm-up", daemon=True)
    thread.start()
    return thread


def nvrtc_mismatch(compiler, cache: Cache) -> str:
    """'' when CuPy's NVRTC has cubby's version (or either cannot say), else both versions."""
    try:
        ours = next(field["summary"] for field in cache.explain("", arch="sm_90")
                    if field["label"] == "nvrtc_version")
    except (Error, StopIteration, KeyError):
        return ""
    get = getattr(compiler, "_get_nvrtc_version", None)
    try:
        theirs = ".".join(str(part) for part in get()) if get is not None else ""
    except Exception:  # no NVRTC in CuPy: its own compile would fail the same way
        return ""
    if not theirs or theirs in ours:
        return ""
    return f"CuPy's NVRTC is {theirs}, cubby's is {ours}"


def _on_cupys_base(cls: type) -> type:
    """``cls`` derived from CuPy's abstract kernel-cache backend too, when CuPy has one."""
    try:
        base = importlib.import_module("cupy.cuda._compiler_cache").KernelCacheBackend
    except Exception:
        return cls
    return type(cls.__name__, (cls, base), {})


_warned_versions: set = set()


class Installed:
    """An installed adapter; ``mode`` is "compile" (CuPy compiles through cubby) or "blob";
    ``note`` says why the blob path when it is; ``uninstall()`` puts CuPy back as it was."""

    def __init__(self, mode: str, note: str, backend, router: Optional[CompileRouter],
                 previous_backend: object, previous_program: Optional[type],
                 previous_nvrtc_compile: Optional[Callable] = None,
                 previous_nvcc_compile: Optional[Callable] = None) -> None:
        self.mode = mode
        self.note = note
        self.backend = backend
        self.router = router
        self._previous_backend = previous_backend
        self._previous_program = previous_program
        self._previous_nvrtc_compile = previous_nvrtc_compile
        self._previous_nvcc_compile = previous_nvcc_compile

    def counters(self) -> Dict[str, float]:
        if self.router is not None:
            return self.router.counters()
        return self.backend.counters()

    def _put_compile_path_back(self, compiler) -> None:
        if self._previous_program is not None:
            compiler._NVRTCProgram = self._previous_program
            self._previous_program = None
        if self._previous_nvrtc_compile is not None:
            compiler._compile_using_nvrtc_no_warning = self._previous_nvrtc_compile
            self._previous_nvrtc_compile = None
        if self._previous_nvcc_compile is not None:
            compiler.compile_using_nvcc = self._previous_nvcc_compile
            self._previous_nvcc_compile = None

    def to_blob(self, cache: Cache, note: str) -> None:
        """From the compile path to the blob path (CuPy's NVRTC turned out not to be cubby's)."""
        compiler = importlib.import_module("cupy.cuda.compiler")
        self._put_compile_path_back(compiler)
        self.backend = _on_cupys_base(CubbyKernelCacheBackend)(cache)
        compiler._set_kernel_cache_backend(self.backend)
        self.mode, self.note, self.router = "blob", note, None

    def uninstall(self) -> None:
        compiler = importlib.import_module("cupy.cuda.compiler")
        compiler._set_kernel_cache_backend(self._previous_backend)
        self._put_compile_path_back(compiler)


def _on_own_way_save(name: str) -> None:
    for observer in list(_save_observers):
        observer(name)


def install(cache: Cache) -> Installed:
    """Makes CuPy compile through ``cache`` (requires cupy_status()[0]); the blob path, with one
    warning naming the CuPy version, where CuPy's compile path moved. Whether CuPy's NVRTC is
    cubby's is asked at the first program (a different one: the blob path from then on), so
    the install does not wait for cubby's NVRTC and toolkit listing (see warm_up)."""
    cupy = importlib.import_module("cupy")
    compiler = importlib.import_module("cupy.cuda.compiler")
    previous = getattr(compiler, "_kernel_cache_backend", None)
    moved = compile_path_missing(compiler)
    if moved:
        version = _version(cupy)
        if version not in _warned_versions:
            _warned_versions.add(version)
            warnings.warn(f"cubby: CuPy {version}: {moved}; CuPy's kernels are stored as blobs "
                          "under CuPy's own names, which do not cover the headers they include",
                          RuntimeWarning, stacklevel=2)
        backend = _on_cupys_base(CubbyKernelCacheBackend)(cache)
        compiler._set_kernel_cache_backend(backend)
        return Installed("blob", moved, backend, None, previous, None)
    router = CompileRouter(cache, lambda: nvrtc_mismatch(compiler, cache))
    original = compiler._NVRTCProgram
    compiler._NVRTCProgram = make_program_class(original, router, compiler)

    def first_load(name: str) -> Optional[bytes]:  # CuPy asks its backend before compiling
        return installed.backend.load(name) if router.nvrtc_differs() else None

    compiler._set_kernel_cache_backend(_on_cupys_base(PassThroughBackend)(first_load))
    store = _cupy_own_way.OwnWayStore(router, NAMESPACE, _on_own_way_save, CLAIM_WAIT_S)
    nvrtc_compile = nvcc_compile = None
    if wrappable(compiler, "_compile_using_nvrtc_no_warning", NVRTC_COMPILE_PARAMETERS):
        nvrtc_compile = compiler._compile_using_nvrtc_no_warning
        compiler._compile_using_nvrtc_no_warning = make_nvrtc_compile(nvrtc_compile, store)
    if wrappable(compiler, "compile_using_nvcc", NVCC_COMPILE_PARAMETERS):
        nvcc_compile = compiler.compile_using_nvcc
        compiler.compile_using_nvcc = _cupy_own_way.make_nvcc_compile(nvcc_compile, store)
    installed = Installed("compile", "", None, router, previous, original, nvrtc_compile,
                          nvcc_compile)
    router.on_nvrtc_mismatch = lambda note: installed.to_blob(cache, note)
    return installed
