"""cubby.Prefetch: ``cubby warm --prefetch`` beside a test session (libcubby's cubby/prefetch.hpp).

The kernels a suite recorded in an earlier run compile in worker processes while its tests run; a
test that needs one a worker is compiling waits for it instead of compiling it again.
"""

from __future__ import annotations

import ctypes
from typing import Optional

from . import _library
from ._errors import Error


class Prefetch:
    """Starts the prefetch of ``suite`` on the store ``dir`` (None: CUBBY_DIR / default).

    With ``at_first_miss``, it reads the suite's recipes and waits until a process using the store
    for that suite (``CUBBY_SUITE``) misses a key; only then does it derive their keys and compile
    what is missing (a warm session so pays for no key checks beside it: the plugin's way). It
    does not wait where the run will miss: an entry of the suite's last run is gone, or a header
    its recipes read was written since that run.
    ``pid`` is 0 when nothing was started; ``note`` then says why when that is worth saying
    (prefetch off, read-only store, the cubby tool not found), "" otherwise (nothing recorded yet).
    It ends with this process, or with ``stop()`` (also on leaving a ``with`` block).
    """

    def __init__(self, suite: str, dir: Optional[str] = None, at_first_miss: bool = False) -> None:
        if not suite or "\0" in suite:
            raise Error("Prefetch: suite must be a non-empty string without NUL characters")
        lib = _library.lib()
        handle = ctypes.c_void_p()
        start = (lib.cubby_prefetch_start_at_first_miss if at_first_miss
                 else lib.cubby_prefetch_start)
        status = start(dir.encode() if dir else None, suite.encode(), ctypes.byref(handle))
        if status != 0:
            raise Error(lib.cubby_last_error().decode(errors="replace"))
        self._handle: Optional[ctypes.c_void_p] = handle
        self.pid: int = int(lib.cubby_prefetch_pid(handle))
        self.note: str = lib.cubby_prefetch_note(handle).decode(errors="replace")

    def stop(self) -> None:
        """Ends the prefetch (its workers are killed); idempotent."""
        if self._handle is not None:
            _library.lib().cubby_prefetch_stop(self._handle)
            self._handle = None
            self.pid = 0

    def __repr__(self) -> str:
        state = f"pid {self.pid}" if self.pid else (self.note or "nothing to prefetch")
        return f"cubby.Prefetch({state})"

    def __enter__(self) -> "Prefetch":
        return self

    def __exit__(self, *_exc) -> None:
        self.stop()

    def __del__(self) -> None:
        try:
            self.stop()
        except Exception:  # interpreter shutdown: the library may be gone
            pass
