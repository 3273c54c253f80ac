"""CuPy's module loads done ahead: the kernels a warm session needs, loaded onto the GPU while
pytest collects, handed to CuPy when it asks.

A warm CuPy session spends about 1 ms of its main thread per program in ``cuModuleLoadData``
(measured on the H200: 0.46 s for CuPy's own test files' 401 modules, a tenth of the run). The
plugin's warm-up thread, after reading the suite's entries ahead, loads their CUBINs into device
0's primary context (``Cache.preload_modules``), the context CuPy's runtime uses. CuPy's compile
path then asks the adapter's program class for each program's payload; that class takes the
module loaded for the result's key (``Cache.take_module``: only in the context it was loaded in)
and leaves it with the payload's bytes object (``HandOver.leave``). CuPy loads those bytes next
with ``mod.load(cubin)`` on a ``cupy.cuda.function.Module`` it has just made in
``_compile_with_cache_cuda``: compiler.py's ``function`` is replaced by a view of it whose
``Module`` is a subclass (``module_class``) whose ``load`` takes the module left for exactly that
bytes object (identity, not equality) and loads any other itself. CuPy's Module owns and unloads
it as it would its own load's.
"""

from __future__ import annotations

import threading
from typing import Callable, Optional, Tuple


class HandOver:
    """Modules taken for payloads, one per thread until its next load. Thread-safe (a thread's
    own hand-over is its own)."""

    def __init__(self, unload: Callable[[int], None]) -> None:
        self._unload = unload
        self._local = threading.local()
        self.handed = 0  # modules CuPy took (counted by the loading threads)
        self._lock = threading.Lock()

    def leave(self, payload: bytes, module: int) -> None:
        """``module`` for the load of ``payload`` (this very object) on this thread; one left
        before and not taken (CuPy loaded other bytes, as after linking) is unloaded."""
        self.drop()
        self._local.value = (payload, module)

    def take(self, payload: bytes) -> int:
        """The module left for ``payload`` on this thread, handed over (0: none)."""
        left: Optional[Tuple[bytes, int]] = getattr(self._local, "value", None)
        if left is None or left[0] is not payload:
            return 0
        self._local.value = None
        with self._lock:
            self.handed += 1
        return left[1]

    def drop(self) -> None:
        """Unloads the module left on this thread and not taken, if any."""
        left = getattr(self._local, "value", None)
        self._local.value = None
        if left is not None:
            try:
                self._unload(left[1])
            except Exception:  # a context gone at exit: nothing left to free
                pass


def module_class(base: type, hand_over: HandOver) -> type:
    """CuPy's Module class whose load() takes a module handed over for its bytes."""

    class CubbyModule(base):  # type: ignore[misc, valid-type]
        def load(self, cubin):
            module = hand_over.take(cubin)
            if module:
                self.ptr = module
                return None
            return base.load(self, cubin)

    CubbyModule.__qualname__ = CubbyModule.__name__ = "CubbyModule"
    return CubbyModule


class FunctionView:
    """``cupy.cuda.function`` as compiler.py sees it once the adapter is installed: the same
    module, with ``Module`` replaced."""

    def __init__(self, function, module: type) -> None:
        self._function = function
        self.Module = module

    def __getattr__(self, name: str):
        return getattr(self._function, name)


def replace_module_class(compiler) -> Tuple[object, Optional[HandOver]]:
    """Makes compiler.py's Modules take the modules handed over: (the ``function`` module it
    replaced, the HandOver to leave them with), or (None, None) where CuPy's Module or driver is
    not as expected (CuPy then loads every module itself)."""
    function = getattr(compiler, "function", None)
    base = getattr(function, "Module", None)
    unload = getattr(getattr(compiler, "driver", None), "moduleUnload", None)
    if not isinstance(base, type) or not callable(unload):
        return None, None
    hand_over = HandOver(unload)
    try:
        module = module_class(base, hand_over)
    except TypeError:  # a Module class that cannot be derived from
        return None, None
    compiler.function = FunctionView(function, module)
    return function, hand_over
