"""cubby: a persistent, shared CUBIN cache for kernels compiled at run time with NVRTC.

    import cubby
    result = cubby.Cache().compile(source, name_expressions=["ns::k<float>"], arch="sm_90")
    result.key, result.hit, result.tier, result.lowered_names, result.cubin

The package is pure Python over libcubby's C API (ctypes); see ``_library`` for how libcubby is
found (``CUBBY_LIBRARY``). The pytest plugin is ``cubby.plugin``.
"""

from __future__ import annotations

from ._cache import Cache, CompileResult, Request
from ._errors import CompileError, Error, LibraryError
from ._library import library_path
from ._prefetch import Prefetch

__all__ = [
    "Cache",
    "CompileError",
    "CompileResult",
    "Error",
    "LibraryError",
    "Prefetch",
    "Request",
    "library_path",
    "version",
]

__version__ = "0.1.0"


def version() -> str:
    """The version of the loaded libcubby."""
    from ._library import lib

    return lib().cubby_version().decode()
