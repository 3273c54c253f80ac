"""cubby.Cache: the persistent NVRTC cache through the C API."""

from __future__ import annotations

import ctypes
import json
import os
import threading
import weakref
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from . import _library
from ._errors import CompileError, Error

CUBBY_ERROR_COMPILE_FAILED = 5

# Handles still open in this process (the pytest plugin adds up their stats).
_live: "weakref.WeakSet[Cache]" = weakref.WeakSet()

# Called as observer(cache, result, request) after every compile() (the plugin's require-warm).
_compile_observers: List[Callable[["Cache", "CompileResult", "Request"], None]] = []


@dataclass(frozen=True)
class Request:
    """The arguments of one compile() call."""

    source: str
    name_expressions: Tuple[str, ...]
    options: Tuple[str, ...]
    arch: Optional[str]
    program_name: Optional[str]


@dataclass(frozen=True)
class CompileResult:
    """What Cache.compile returns."""

    key: str  # 32 hex digits
    hit: bool  # False when this call compiled
    tier: str  # "memory", "disk", "remote" or "compiled"
    lowered_names: Dict[str, str]  # name expression -> NVRTC's lowered (mangled) name
    cubin: bytes  # the payload (CUBIN, or PTX/LTO-IR for such options)
    payload_kind: str = "cubin"
    log: str = ""  # NVRTC's compile log (warnings)
    compile_ms: float = 0.0  # what the original compile cost
    elapsed_ms: float = 0.0  # this call
    extra: dict = field(default_factory=dict, compare=False, repr=False)


def _text(value: Optional[bytes]) -> str:
    return "" if value is None else value.decode("utf-8", "replace")


def _strings(values: Iterable[str], what: str):
    items = list(values)
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{what} must be a sequence of strings, not a single string")
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"{what} must hold strings, got {type(item).__name__}")
    array = (ctypes.c_char_p * max(len(items), 1))(*[item.encode() for item in items])
    return items, array, len(items)


def _check(status: int) -> None:
    if status != 0:
        lib = _library.lib()
        message = _text(lib.cubby_last_error())
        if status == CUBBY_ERROR_COMPILE_FAILED:
            raise CompileError(message, _text(lib.cubby_last_compile_log()), status)
        raise Error(message, status)


class Cache:
    """A handle on a cubby store.

    ``dir`` is the store folder (None: ``CUBBY_DIR``, else ``$XDG_CACHE_HOME/cubby``, else
    ``~/.cache/cubby``); every other setting comes from the ``CUBBY_*`` variables. Thread-safe.
    """

    def __init__(self, dir: Optional["os.PathLike[str] | str"] = None) -> None:
        self._lib = _library.lib()
        self._lock = threading.Lock()
        handle = ctypes.c_void_p()
        path = None if dir is None else os.fsencode(os.fspath(dir))
        _check(self._lib.cubby_open(path, ctypes.byref(handle)))
        self._handle: Optional[int] = handle.value
        _live.add(self)

    # -- lifetime ---------------------------------------------------------------------------
    def close(self) -> None:
        """Closes the handle (its stats go to CUBBY_STATS_FILE when that is set)."""
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is not None:
            _live.discard(self)
            self._lib.cubby_close(handle)

    def __enter__(self) -> "Cache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing useful to do
            pass

    def _h(self) -> int:
        handle = self._handle
        if handle is None:
            raise Error("this cubby.Cache is closed; open a new one")
        return handle

    # -- compiling --------------------------------------------------------------------------
    def _request_args(self, source, name_expressions, options, arch, program_name):
        if not isinstance(source, str):
            raise TypeError(f"source must be a str, not {type(source).__name__}")
        names, names_array, name_count = _strings(name_expressions, "name_expressions")
        opts, options_array, option_count = _strings(options, "options")
        request = Request(source, tuple(names), tuple(opts), arch, program_name)
        args = (
            source.encode(),
            None if program_name is None else program_name.encode(),
            names_array,
            name_count,
            options_array,
            option_count,
            None if arch is None else arch.encode(),
        )
        return request, args

    def compile(
        self,
        source: str,
        name_expressions: Sequence[str] = (),
        options: Sequence[str] = (),
        arch: Optional[str] = None,
        program_name: Optional[str] = None,
    ) -> CompileResult:
        """The compile result for a request: from the store, else compiled by NVRTC and stored.

        Raises CompileError (with NVRTC's log in ``.log``) when NVRTC rejects the program.
        """
        request, args = self._request_args(source, name_expressions, options, arch, program_name)
        out = ctypes.c_void_p()
        _check(self._lib.cubby_compile(self._h(), *args, ctypes.byref(out)))
        result = self._result(out.value)
        for observer in list(_compile_observers):
            observer(self, result, request)
        return result

    def key(self, source: str, name_expressions: Sequence[str] = (), options: Sequence[str] = (),
            arch: Optional[str] = None, program_name: Optional[str] = None) -> str:
        """The key of a request (32 hex digits), without compiling."""
        _, args = self._request_args(source, name_expressions, options, arch, program_name)
        buffer = (ctypes.c_char * 33)()
        _check(self._lib.cubby_key(self._h(), *args, buffer))
        return buffer.value.decode()

    def explain(self, source: str, name_expressions: Sequence[str] = (),
                options: Sequence[str] = (), arch: Optional[str] = None,
                program_name: Optional[str] = None) -> List[dict]:
        """Every field the key hashes: [{"label", "summary", "hash"}] (as `cubby compile --explain`)."""
        _, args = self._request_args(source, name_expressions, options, arch, program_name)
        text = self._lib.cubby_explain_json(self._h(), *args)
        if text is None:
            raise Error(_text(self._lib.cubby_last_error()))
        return json.loads(text)

    def _result(self, handle: Optional[int]) -> CompileResult:
        lib = self._lib
        try:
            size = ctypes.c_size_t()
            pointer = lib.cubby_result_payload(handle, ctypes.byref(size))
            payload = ctypes.string_at(pointer, size.value) if size.value else b""
            names = {}
            for index in range(lib.cubby_result_name_count(handle)):
                names[_text(lib.cubby_result_name_expression(handle, index))] = _text(
                    lib.cubby_result_lowered_name(handle, index))
            return CompileResult(
                key=_text(lib.cubby_result_key(handle)),
                hit=bool(lib.cubby_result_hit(handle)),
                tier=_text(lib.cubby_result_tier(handle)),
                lowered_names=names,
                cubin=payload,
                payload_kind=_text(lib.cubby_result_payload_kind(handle)),
                log=_text(lib.cubby_result_log(handle)),
                compile_ms=lib.cubby_result_compile_ms(handle),
                elapsed_ms=lib.cubby_result_elapsed_ms(handle),
            )
        finally:
            lib.cubby_result_free(handle)

    # -- blobs (opaque payloads of other tools, e.g. CuPy) ----------------------------------
    def blob_get(self, namespace: str, name: str) -> Optional[bytes]:
        """The payload stored as ``name`` in ``namespace``, byte for byte, or None."""
        out = ctypes.c_void_p()
        _check(self._lib.cubby_blob_get(self._h(), namespace.encode(), name.encode(),
                                        ctypes.byref(out)))
        if out.value is None:
            return None
        size = ctypes.c_size_t()
        try:
            pointer = self._lib.cubby_result_payload(out.value, ctypes.byref(size))
            return ctypes.string_at(pointer, size.value) if size.value else b""
        finally:
            self._lib.cubby_result_free(out.value)

    def blob_put(self, namespace: str, name: str, payload: bytes, compile_ms: float = 0.0) -> None:
        """Stores ``payload`` byte for byte as ``name`` in ``namespace``."""
        data = bytes(payload)
        _check(self._lib.cubby_blob_put(self._h(), namespace.encode(), name.encode(), data,
                                        len(data), float(compile_ms)))

    # -- the store --------------------------------------------------------------------------
    @property
    def dir(self) -> str:
        """The store folder."""
        return _text(self._lib.cubby_store_dir(self._h()))

    def stats(self) -> Dict[str, float]:
        """This handle's counters: hits_memory, hits_disk, hits_remote, misses, compiles,
        compile_failures, corrupt, failed_writes, bytes_read, bytes_written, compile_ms,
        compile_ms_saved."""
        text = self._lib.cubby_stats_json(self._h())
        if text is None:
            raise Error(_text(self._lib.cubby_last_error()))
        return json.loads(text)

    def usage(self) -> Tuple[int, int]:
        """(entries, bytes) in the store."""
        entries, size = ctypes.c_uint64(), ctypes.c_uint64()
        _check(self._lib.cubby_store_usage(self._h(), ctypes.byref(entries), ctypes.byref(size)))
        return entries.value, size.value

    def clear(self) -> int:
        """Removes every entry of the store; returns how many."""
        removed = ctypes.c_uint64()
        _check(self._lib.cubby_clear(self._h(), ctypes.byref(removed)))
        return removed.value

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else self.dir
        return f"cubby.Cache({state!r})"


def live_caches() -> List[Cache]:
    """The handles open in this process."""
    return [cache for cache in list(_live) if cache._handle is not None]
