"""cubby: a persistent, shared CUBIN cache for kernels compiled at run time with NVRTC.

    import cubby
    result = cubby.Cache().compile(source, name_expressions=["ns::k<float>"], arch="sm_90")
    result.key, result.hit, result.tier, result.lowered_names, result.cubin

The package is Python over libcubby's C API (ctypes). ``pip install ./pytest_plugin`` builds
libcubby and the ``cubby`` tool and bundles both; ``_library`` says how libcubby is found
(``CUBBY_LIBRARY`` overrides the bundled one), ``_cli`` how the tool is. The pytest plugin is
``cubby.plugin``.
"""

from __future__ import annotations

from ._cache import Cache, CompileResult, ReadAhead, Request
from ._cli import cli_path
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
    "ReadAhead",
    "Request",
    "cli_path",
    "library_path",
    "version",
]

__version__ = "0.1.0"


def version() -> str:
    """The version of the loaded libcubby."""
    from ._library import lib

    return lib().cubby_version().decode()
