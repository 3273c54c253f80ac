"""A CuPy kernel-cache backend that keeps CuPy's payloads in the cubby store.

CuPy (>= 14) asks its kernel-cache backend ``load(name) -> bytes | None`` before compiling and
``save(name, payload, source)`` after; it is installed with
``cupy.cuda.compiler._set_kernel_cache_backend``. This backend stores each payload byte for byte
as blob ``name`` of the ``cupy`` namespace, so CuPy's kernels share the store's bound, checks,
sharing and remote tier. CuPy's names already hash everything its compile depends on.

One compile per kernel across processes (pytest-xdist workers): a miss claims the kernel, so a
worker asking for a kernel another one is compiling waits for that compile (up to
``CLAIM_WAIT_S``, then compiles it itself) instead of compiling it again. CuPy compiles on the
thread that asked, so a thread's claim that ``save`` never answered (the compile failed) is given
back at that thread's next ``load``.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
import time
from typing import Callable, Dict, List, Optional, Tuple

from ._cache import Cache

NAMESPACE = "cupy"
MIN_CUPY_MAJOR = 14
# How long a miss waits for another process's compile of the same kernel (a mdspan module takes a
# few seconds; a dead compiler's claim ends with its process at once).
CLAIM_WAIT_S = 120.0

# Called as observer(name) after every save() (a compile CuPy did): the plugin's require-warm.
_save_observers: List[Callable[[str], None]] = []


class CubbyKernelCacheBackend:
    """CuPy's backend interface over a cubby.Cache. Thread-safe."""

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


def cupy_status() -> Tuple[bool, str]:
    """(usable, why): whether an importable CuPy >= 14 offers _set_kernel_cache_backend."""
    if importlib.util.find_spec("cupy") is None:
        return False, "CuPy is not installed"
    try:
        cupy = importlib.import_module("cupy")
        compiler = importlib.import_module("cupy.cuda.compiler")
    except Exception as error:  # a broken CuPy must not break the test session
        return False, f"CuPy could not be imported ({type(error).__name__}: {error})"
    version = str(getattr(cupy, "__version__", "0"))
    try:
        major = int(version.split(".")[0])
    except ValueError:
        major = 0
    if major < MIN_CUPY_MAJOR:
        return False, f"CuPy {version} is older than {MIN_CUPY_MAJOR}"
    if not hasattr(compiler, "_set_kernel_cache_backend"):
        return False, f"CuPy {version} has no cupy.cuda.compiler._set_kernel_cache_backend"
    return True, f"CuPy {version}"


def _backend_class():
    """Our backend, derived from CuPy's abstract base class when CuPy has one."""
    try:
        base = importlib.import_module("cupy.cuda._compiler_cache").KernelCacheBackend
    except Exception:
        return CubbyKernelCacheBackend
    return type("CubbyKernelCacheBackend", (CubbyKernelCacheBackend, base), {})


class Installed:
    """An installed backend; ``uninstall()`` puts CuPy's previous backend back."""

    def __init__(self, backend: CubbyKernelCacheBackend, previous: object) -> None:
        self.backend = backend
        self._previous = previous

    def uninstall(self) -> None:
        compiler = importlib.import_module("cupy.cuda.compiler")
        compiler._set_kernel_cache_backend(self._previous)


def install(cache: Cache) -> Installed:
    """Makes CuPy use ``cache`` for its kernel cache (requires cupy_status()[0])."""
    compiler = importlib.import_module("cupy.cuda.compiler")
    previous = getattr(compiler, "_kernel_cache_backend", None)
    backend = _backend_class()(cache)
    compiler._set_kernel_cache_backend(backend)
    return Installed(backend, previous)
