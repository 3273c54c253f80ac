"""Finds and loads libcubby (the C API, cubby.h) through ctypes.

Search order: the file named by ``CUBBY_LIBRARY``; the one bundled in the wheel
(``cubby/_native/lib/libcubby.so.*``, built by ``pip install ./pytest_plugin``); a
``libcubby.so*`` next to this package; the dynamic linker's search path (``LD_LIBRARY_PATH``,
``ldconfig``); when the package runs from a cubby checkout (an editable install, the tests), the
newest ``build/*/core/libcubby.so`` of that checkout. The library is loaded on first use, so
``import cubby`` always works and a missing library is reported where it is needed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from pathlib import Path
from typing import Optional

from ._errors import LibraryError

_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None

c_char_p = ctypes.c_char_p
c_size_t = ctypes.c_size_t
c_int = ctypes.c_int
c_void_p = ctypes.c_void_p
c_double = ctypes.c_double
c_uint64 = ctypes.c_uint64
POINTER = ctypes.POINTER
c_char_pp = POINTER(c_char_p)

# name -> (restype, argtypes): every cubby.h function this package uses.
_REQUEST = [c_void_p, c_char_p, c_char_p, c_char_pp, c_size_t, c_char_pp, c_size_t, c_char_p]
_SIGNATURES = {
    "cubby_version": (c_char_p, []),
    "cubby_last_error": (c_char_p, []),
    "cubby_last_compile_log": (c_char_p, []),
    "cubby_open": (c_int, [c_char_p, POINTER(c_void_p)]),
    "cubby_close": (None, [c_void_p]),
    "cubby_compile": (c_int, _REQUEST + [POINTER(c_void_p)]),
    "cubby_key": (c_int, _REQUEST + [ctypes.c_char * 33]),
    "cubby_storable_key": (c_int, _REQUEST + [ctypes.c_char * 33]),
    "cubby_explain_json": (c_char_p, _REQUEST),
    "cubby_nearest_recorded_json": (c_char_p, _REQUEST),
    "cubby_explain_text": (c_char_p, _REQUEST),
    "cubby_result_free": (None, [c_void_p]),
    "cubby_result_key": (c_char_p, [c_void_p]),
    "cubby_result_hit": (c_int, [c_void_p]),
    "cubby_result_tier": (c_char_p, [c_void_p]),
    "cubby_result_payload_kind": (c_char_p, [c_void_p]),
    "cubby_result_payload": (c_void_p, [c_void_p, POINTER(c_size_t)]),
    "cubby_result_name_count": (c_size_t, [c_void_p]),
    "cubby_result_name_expression": (c_char_p, [c_void_p, c_size_t]),
    "cubby_result_lowered_name": (c_char_p, [c_void_p, c_size_t]),
    "cubby_result_log": (c_char_p, [c_void_p]),
    "cubby_result_compile_ms": (c_double, [c_void_p]),
    "cubby_result_elapsed_ms": (c_double, [c_void_p]),
    "cubby_result_get_fields": (None, [c_void_p, c_void_p]),
    "cubby_stats_json": (c_char_p, [c_void_p]),
    "cubby_stats_summary": (c_char_p, [c_char_p]),
    "cubby_uncached_count": (c_size_t, []),
    "cubby_uncached_name": (c_char_p, [c_size_t]),
    "cubby_uncached_label": (c_char_p, [c_size_t]),
    "cubby_uncached_first": (c_char_p, [c_char_p]),
    "cubby_count_uncached": (c_int, [c_void_p, c_char_p, c_char_p]),
    "cubby_store_dir": (c_char_p, [c_void_p]),
    "cubby_store_usage": (c_int, [c_void_p, POINTER(c_uint64), POINTER(c_uint64)]),
    "cubby_store_estimate": (c_int, [c_void_p, POINTER(c_uint64), POINTER(c_uint64)]),
    "cubby_clear": (c_int, [c_void_p, POINTER(c_uint64)]),
    "cubby_read_ahead": (c_int, [c_void_p, POINTER(c_int), POINTER(c_uint64),
                                  POINTER(c_uint64)]),
    "cubby_blob_get": (c_int, [c_void_p, c_char_p, c_char_p, POINTER(c_void_p)]),
    "cubby_blob_put": (c_int, [c_void_p, c_char_p, c_char_p, c_char_p, c_size_t, c_double]),
    "cubby_blob_get_or_claim": (c_int, [c_void_p, c_char_p, c_char_p, ctypes.c_uint,
                                        POINTER(c_void_p), POINTER(c_int)]),
    "cubby_blob_release": (c_int, [c_void_p, c_char_p, c_char_p]),
    "cubby_blob_remove": (c_int, [c_void_p, c_char_p, c_char_p, POINTER(c_int)]),
    "cubby_namespace_usage": (c_int, [c_void_p, c_char_p, POINTER(c_uint64), POINTER(c_uint64)]),
    "cubby_namespace_clear": (c_int, [c_void_p, c_char_p, POINTER(c_uint64)]),
    "cubby_prefetch_start": (c_int, [c_char_p, c_char_p, POINTER(c_void_p)]),
    "cubby_prefetch_start_at_first_miss": (c_int, [c_char_p, c_char_p, POINTER(c_void_p)]),
    "cubby_prefetch_pid": (ctypes.c_long, [c_void_p]),
    "cubby_prefetch_note": (c_char_p, [c_void_p]),
    "cubby_prefetch_stop": (None, [c_void_p]),
}

_HOW_TO_FIX = (
    "install the package with `pip install ./pytest_plugin` (it builds and bundles libcubby), "
    "set CUBBY_LIBRARY to the path of libcubby.so (e.g. build/<dir>/core/libcubby.so), "
    "put libcubby.so next to the cubby package, or add its folder to LD_LIBRARY_PATH"
)


HERE = Path(__file__).resolve().parent
BUNDLED = HERE / "_native" / "lib"  # cubby_build's layout (pytest_plugin/build_backend)


def _sanitized(build: Path) -> bool:
    """Whether a build folder is a sanitizer build (its libcubby would abort a plain Python)."""
    try:
        return "-fsanitize" in (build / "CMakeCache.txt").read_text(errors="replace")
    except OSError:
        return False


def checkout_builds() -> list:
    """libcubby.so of the build folders of the checkout this package runs from, newest first
    (none when it runs from an installed wheel); sanitizer builds are left out."""
    checkout = HERE.parent.parent.parent  # <checkout>/pytest_plugin/src/cubby
    if not (checkout / "core" / "include" / "cubby" / "cubby.h").is_file():
        return []
    built = [path for path in checkout.glob("build/*/core/libcubby.so")
             if path.is_file() and not _sanitized(path.parent.parent)]
    return sorted(built, key=lambda path: path.stat().st_mtime, reverse=True)


def _candidates() -> list:
    """Where to look after CUBBY_LIBRARY, in order, as (description, path-or-name) pairs."""
    found = [("the wheel", str(path)) for path in sorted(BUNDLED.glob("libcubby.so*"))]
    for path in sorted(HERE.glob("libcubby.so*")):
        found.append(("next to the cubby package", str(path)))
    found.append(("the library path", "libcubby.so.0"))
    found.append(("the library path", "libcubby.so"))
    name = ctypes.util.find_library("cubby")
    if name:
        found.append(("ldconfig", name))
    found += [("the checkout's build tree", str(path)) for path in checkout_builds()]
    return found


def _bind(lib: ctypes.CDLL, where: str) -> ctypes.CDLL:
    missing = [name for name in _SIGNATURES if not hasattr(lib, name)]
    if missing:
        raise LibraryError(
            f"{where} is not a usable libcubby: it lacks {', '.join(missing[:4])}"
            f"{' ...' if len(missing) > 4 else ''} (too old, or not libcubby); rebuild cubby or "
            + _HOW_TO_FIX
        )
    for name, (restype, argtypes) in _SIGNATURES.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    return lib


def _load() -> ctypes.CDLL:
    explicit = os.environ.get("CUBBY_LIBRARY", "")
    if explicit:
        try:
            lib = ctypes.CDLL(explicit)
        except OSError as error:
            raise LibraryError(
                f"CUBBY_LIBRARY={explicit} could not be loaded ({error}); point CUBBY_LIBRARY at "
                "a built libcubby.so (e.g. build/<dir>/core/libcubby.so) or unset it"
            ) from None
        return _bind(lib, f"CUBBY_LIBRARY={explicit}")
    errors = []
    for where, path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as error:
            errors.append(f"{path} ({where}): {error}")
            continue
        return _bind(lib, f"{path} (found on {where})")
    raise LibraryError("libcubby was not found; " + _HOW_TO_FIX + ". Tried: " + "; ".join(errors))


def lib() -> ctypes.CDLL:
    """The loaded libcubby; raises LibraryError (naming CUBBY_LIBRARY) when it cannot be loaded."""
    global _lib
    if _lib is None:
        with _lock:
            if _lib is None:
                _lib = _load()
    return _lib


def library_path() -> str:
    """The file the loaded libcubby came from (loads it if needed)."""
    return str(lib()._name)
