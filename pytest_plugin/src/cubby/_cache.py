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


def _size(count: int, unit: str) -> str:
    return f"{count} {unit}" if count == 1 else f"{count} {unit}s"


@dataclass(frozen=True, repr=False)
class Request:
    """The arguments of one compile() call. Its repr shows the source's size, not the source."""

    source: str
    name_expressions: Tuple[str, ...]
    options: Tuple[str, ...]
    arch: Optional[str]
    program_name: Optional[str]

    def __repr__(self) -> str:
        return (f"cubby.Request(source=<{_size(len(self.source), 'character')}>, "
                f"name_expressions={_size(len(self.name_expressions), 'name')}, "
                f"options={list(self.options)!r}, arch={self.arch!r}, "
                f"program_name={self.program_name!r})")


@dataclass(frozen=True)
class ReadAhead:
    """What Cache.read_ahead did: ``read`` entries read into memory; ``lacking``: how many of the
    suite's recipes the store may lack an entry for now (those not looked at included; None: its
    manifest could not be read). 0 lacking: a run of the recorded programs misses nothing."""

    read: int
    lacking: Optional[int]


@dataclass(frozen=True, repr=False)
class CompileResult:
    """What Cache.compile returns. Its repr is one short line (key, tier, hit, sizes), never the
    payload, the names or the log."""

    key: str  # 32 hex digits
    hit: bool  # False when this call compiled
    tier: str  # "memory", "disk", "remote" or "compiled"
    lowered_names: Dict[str, str]  # name expression -> NVRTC's lowered (mangled) name
    cubin: bytes  # the payload (CUBIN, or PTX/LTO-IR for such options)
    payload_kind: str = "cubin"
    log: str = ""  # NVRTC's compile log (warnings)
    compile_ms: float = 0.0  # what the original compile cost
    elapsed_ms: float = 0.0  # this call
    # Why it was compiled without the store ("" when it was not: a hit, or a compile stored): a
    # reason of libcubby's table (uncached_reasons()), and what of this program (the directive the
    # header scan cannot name, the option the key cannot cover, or the program).
    uncached: str = ""
    uncached_detail: str = ""
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    def lowered_name(self, name_expression: str) -> str:
        """NVRTC's lowered (mangled) name of one of the request's name expressions, as the C++
        API's CacheResult::lowered_name; KeyError naming the expressions when it was not one."""
        try:
            return self.lowered_names[name_expression]
        except KeyError:
            known = ", ".join(repr(name) for name in self.lowered_names) or "none"
            raise KeyError(f"{name_expression!r} is not a name expression of this compile "
                           f"(its name expressions: {known}); pass it in name_expressions") from None

    def __repr__(self) -> str:
        log = f", log={_size(len(self.log), 'character')}" if self.log else ""
        return (f"cubby.CompileResult(key={self.key!r}, tier={self.tier!r}, hit={self.hit}, "
                f"{self.payload_kind}={_size(len(self.cubin), 'byte')}, "
                f"lowered_names={_size(len(self.lowered_names), 'name')}{log}, "
                f"compile_ms={self.compile_ms:.1f}, elapsed_ms={self.elapsed_ms:.3f})")


def _text(value: Optional[bytes]) -> str:
    return "" if value is None else value.decode("utf-8", "replace")


def _no_nul(value: bytes, what: str) -> bytes:
    if b"\0" in value:
        raise ValueError(f"{what} contains a NUL character, which the C API would take as its end; "
                         "remove it")
    return value


def _c_string(value: str, what: str, index: Optional[int] = None) -> bytes:
    """``value`` as UTF-8 for a C string argument: TypeError unless a str, ValueError on a NUL;
    ``index``: its place in the sequence ``what`` (said in the error only: no string is built for
    a good value)."""
    if not isinstance(value, str):
        label = what if index is None else f"{what}[{index}]"
        raise TypeError(f"{label} must be a str, not {type(value).__name__}")
    encoded = value.encode()
    if b"\0" in encoded:
        _no_nul(encoded, what if index is None else f"{what}[{index}]")
    return encoded


def _optional_c_string(value: Optional[str], what: str) -> Optional[bytes]:
    return None if value is None else _c_string(value, what)


def _strings(values: Iterable[str], what: str):
    """(items, C array, count) of a sequence of strings; TypeError for a bare str or bytes (a
    classic slip for a one-item list) or a non-str item, ValueError for a NUL inside one."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{what} must be a sequence of strings, not a single string; "
                        f"wrap it in a list: [{values!r}]")
    try:
        items = list(values)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of strings, not {type(values).__name__}"
                        ) from None
    encoded = [_c_string(item, what, index) for index, item in enumerate(items)]
    array = (ctypes.c_char_p * max(len(items), 1))(*encoded)
    return items, array, len(items)


def _check(status: int) -> None:
    if status != 0:
        lib = _library.lib()
        message = _text(lib.cubby_last_error())
        if status == CUBBY_ERROR_COMPILE_FAILED:
            raise CompileError(message, _text(lib.cubby_last_compile_log()), status)
        raise Error(message, status)


class _ResultFields(ctypes.Structure):
    """cubby_result_fields (cubby.h): a result's fields in one call."""

    _fields_ = [("size", ctypes.c_size_t), ("key", ctypes.c_char_p), ("hit", ctypes.c_int),
                ("tier", ctypes.c_char_p), ("payload_kind", ctypes.c_char_p),
                ("payload", ctypes.c_void_p), ("payload_size", ctypes.c_size_t),
                ("name_count", ctypes.c_size_t), ("log", ctypes.c_char_p),
                ("compile_ms", ctypes.c_double), ("elapsed_ms", ctypes.c_double),
                ("uncached", ctypes.c_char_p), ("uncached_detail", ctypes.c_char_p)]


class _Call:
    """Cache._call's context: counts the call in flight (a class, not a generator: a warm hit is
    a few microseconds and a generator-based context costs one of them)."""

    __slots__ = ("_cache",)

    def __init__(self, cache: "Cache") -> None:
        self._cache = cache

    def __enter__(self) -> int:
        cache = self._cache
        with cache._state:
            handle = cache._handle
            if handle is None:
                raise Error("this cubby.Cache is closed; open a new one")
            cache._calls += 1
            cache.uses += 1
        return handle

    def __exit__(self, *_exc) -> None:
        cache = self._cache
        with cache._state:
            cache._calls -= 1
            if cache._calls == 0:
                cache._state.notify_all()


class Cache:
    """A handle on a cubby store.

    ``dir`` is the store folder (None: ``CUBBY_DIR``, else ``$XDG_CACHE_HOME/cubby``, else
    ``~/.cache/cubby``); every other setting comes from the ``CUBBY_*`` variables. Thread-safe:
    any number of threads may call it at once, and ``close()`` from one of them waits for the
    calls in flight on the others; calls after ``close()`` raise ``cubby.Error`` ("closed").
    """

    def __init__(self, dir: Optional["os.PathLike[str] | str"] = None) -> None:
        self._lib = _library.lib()
        self._state = threading.Condition()  # guards _handle and _calls
        self._handle: Optional[int] = None
        self._calls = 0  # calls into libcubby in flight on this handle
        self.uses = 0  # calls into libcubby begun on this handle (stats_since)
        self._stats: Optional[Tuple[int, Dict[str, float]]] = None  # (uses, stats()) last read
        self._read_ahead_stop = ctypes.c_int(0)  # read by cubby_read_ahead before each recipe
        handle = ctypes.c_void_p()
        path = None if dir is None else _no_nul(os.fsencode(os.fspath(dir)), "dir")
        _check(self._lib.cubby_open(path, ctypes.byref(handle)))
        self._dir = os.fsdecode(self._lib.cubby_store_dir(handle.value) or b"")
        self._handle = handle.value
        _live.add(self)

    # -- lifetime ---------------------------------------------------------------------------
    def close(self) -> None:
        """Closes the handle (its stats go to CUBBY_STATS_FILE when that is set). Calls in flight
        on other threads finish first; later calls raise cubby.Error. Closing twice is fine."""
        self._read_ahead_stop.value = 1  # a read-ahead in flight ends at its next recipe
        with self._state:
            handle, self._handle = self._handle, None
            if handle is None:
                return
            self._state.wait_for(lambda: self._calls == 0)
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

    def _call(self) -> "_Call":
        """The open handle, for one call into libcubby (``with self._call() as handle``);
        close() waits until the call has ended."""
        return _Call(self)

    # -- compiling --------------------------------------------------------------------------
    def _request_args(self, source, name_expressions, options, arch, program_name):
        encoded_source = _c_string(source, "source")
        names, names_array, name_count = _strings(name_expressions, "name_expressions")
        opts, options_array, option_count = _strings(options, "options")
        request = Request(source, tuple(names), tuple(opts), arch, program_name)
        args = (
            encoded_source,
            _optional_c_string(program_name, "program_name"),
            names_array,
            name_count,
            options_array,
            option_count,
            _optional_c_string(arch, "arch"),
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
        with self._call() as handle:
            _check(self._lib.cubby_compile(handle, *args, ctypes.byref(out)))
        result = self._result(out.value)
        for observer in list(_compile_observers):
            observer(self, result, request)
        return result

    def key(self, source: str, name_expressions: Sequence[str] = (), options: Sequence[str] = (),
            arch: Optional[str] = None, program_name: Optional[str] = None) -> str:
        """The key of a request (32 hex digits), without compiling."""
        return self._key("cubby_key", source, name_expressions, options, arch, program_name)

    def storable_key(self, source: str, name_expressions: Sequence[str] = (),
                     options: Sequence[str] = (), arch: Optional[str] = None,
                     program_name: Optional[str] = None) -> str:
        """``key``, for a request ``compile`` would store under it; Error saying why for one it
        compiles without the store (an include the scan cannot name, an option the key cannot
        cover, a disabled store). What a front end compiles itself and stores under this key is
        as header-exact as ``compile``."""
        return self._key("cubby_storable_key", source, name_expressions, options, arch,
                         program_name)

    def _key(self, function: str, source, name_expressions, options, arch, program_name) -> str:
        _, args = self._request_args(source, name_expressions, options, arch, program_name)
        buffer = (ctypes.c_char * 33)()
        with self._call() as handle:
            _check(getattr(self._lib, function)(handle, *args, buffer))
        return buffer.value.decode()

    def explain(self, source: str, name_expressions: Sequence[str] = (),
                options: Sequence[str] = (), arch: Optional[str] = None,
                program_name: Optional[str] = None) -> List[dict]:
        """Every field the key hashes: [{"label", "summary", "hash"}] (as `cubby compile --explain`)."""
        return json.loads(self._request_text("cubby_explain_json", source, name_expressions,
                                             options, arch, program_name))

    def nearest_recorded(self, source: str, name_expressions: Sequence[str] = (),
                         options: Sequence[str] = (), arch: Optional[str] = None,
                         program_name: Optional[str] = None) -> dict:
        """The recorded recipe of this handle's suite nearest to a request (cubby.h's
        ``cubby_nearest_recorded_json``): {"suite", "program", "same_request", "same_source",
        "line", "recorded", "now"}; {} without a suite, its manifest or a recipe."""
        return json.loads(self._request_text("cubby_nearest_recorded_json", source,
                                             name_expressions, options, arch, program_name))

    def explain_text(self, source: str, name_expressions: Sequence[str] = (),
                     options: Sequence[str] = (), arch: Optional[str] = None,
                     program_name: Optional[str] = None) -> str:
        """The key fields as text, in the one layout of `cubby compile --explain` and the harnesses."""
        return self._request_text("cubby_explain_text", source, name_expressions, options, arch,
                                  program_name)

    def _request_text(self, function: str, source, name_expressions, options, arch,
                      program_name) -> str:
        """The text a C function of a request returns (cubby_explain_json, ...); Error with
        cubby_last_error when it returns NULL."""
        _, args = self._request_args(source, name_expressions, options, arch, program_name)
        with self._call() as handle:
            text = getattr(self._lib, function)(handle, *args)
        if text is None:
            raise Error(_text(self._lib.cubby_last_error()))
        return _text(text)

    def read_ahead(self) -> ReadAhead:
        """Reads ahead, into this handle's memory, the entries the recipes of its suite
        (CUBBY_SUITE: what earlier runs of the suite recorded) have now, so that the run's
        lookups hit memory (cubby_read_ahead: keys derived as compile() derives them, entries
        checked as disk hits are; nothing compiled, no miss counted). For a background thread
        while the run gets ready; returns how many entries were read and how many recipes the
        store may lack (both 0 without a suite or a recorded run). stop_read_ahead() and close()
        end it at its next recipe."""
        count, lacking = ctypes.c_uint64(), ctypes.c_uint64()
        with self._call() as handle:
            _check(self._lib.cubby_read_ahead(handle, ctypes.byref(self._read_ahead_stop),
                                              ctypes.byref(count), ctypes.byref(lacking)))
        return ReadAhead(count.value, None if lacking.value == 2**64 - 1 else lacking.value)

    def stop_read_ahead(self) -> None:
        """Ends a read_ahead() in flight on another thread at its next recipe; a later one on
        this handle reads nothing."""
        self._read_ahead_stop.value = 1

    def _result(self, handle: Optional[int]) -> CompileResult:
        lib = self._lib
        try:
            fields = _ResultFields(size=ctypes.sizeof(_ResultFields))
            lib.cubby_result_get_fields(handle, ctypes.byref(fields))
            payload = (ctypes.string_at(fields.payload, fields.payload_size)
                       if fields.payload_size else b"")
            names = {}
            for index in range(fields.name_count):
                names[_text(lib.cubby_result_name_expression(handle, index))] = _text(
                    lib.cubby_result_lowered_name(handle, index))
            return CompileResult(
                key=_text(fields.key),
                hit=bool(fields.hit),
                tier=_text(fields.tier),
                lowered_names=names,
                cubin=payload,
                payload_kind=_text(fields.payload_kind),
                log=_text(fields.log),
                compile_ms=fields.compile_ms,
                elapsed_ms=fields.elapsed_ms,
                uncached=_text(fields.uncached),
                uncached_detail=_text(fields.uncached_detail),
            )
        finally:
            lib.cubby_result_free(handle)

    # -- blobs (opaque payloads of other tools, e.g. CuPy) ----------------------------------
    def blob_get(self, namespace: str, name: str,
                 claim_wait: Optional[float] = None) -> Optional[bytes]:
        """The payload stored as ``name`` in ``namespace``, byte for byte, or None.

        With ``claim_wait`` (seconds), a miss also claims the blob: the caller is to produce it and
        ``blob_put`` it (or ``blob_release`` it when it cannot), and other processes asking for
        it meanwhile wait up to their ``claim_wait`` for that instead of producing it again (a
        waiter that finds it stored gets it). See ``cubby_blob_get_or_claim`` in cubby.h."""
        ns, key = _c_string(namespace, "namespace"), _c_string(name, "name")
        out = ctypes.c_void_p()
        with self._call() as handle:
            if claim_wait is None:
                _check(self._lib.cubby_blob_get(handle, ns, key, ctypes.byref(out)))
            else:
                wait_ms = max(0, min(int(claim_wait * 1000), 2**32 - 1))
                claimed = ctypes.c_int()
                _check(self._lib.cubby_blob_get_or_claim(handle, ns, key, wait_ms,
                                                         ctypes.byref(out), ctypes.byref(claimed)))
        if out.value is None:
            return None
        size = ctypes.c_size_t()
        try:
            pointer = self._lib.cubby_result_payload(out.value, ctypes.byref(size))
            return ctypes.string_at(pointer, size.value) if size.value else b""
        finally:
            self._lib.cubby_result_free(out.value)

    def blob_release(self, namespace: str, name: str) -> None:
        """Gives back the claim ``blob_get(..., claim_wait=...)`` took, without storing."""
        ns, key = _c_string(namespace, "namespace"), _c_string(name, "name")
        with self._call() as handle:
            _check(self._lib.cubby_blob_release(handle, ns, key))

    def blob_remove(self, namespace: str, name: str) -> bool:
        """Removes ``name`` of ``namespace`` from this handle's memory, the store and the remote
        tier; whether the store held it. Raises Error for a read-only store."""
        ns, key = _c_string(namespace, "namespace"), _c_string(name, "name")
        removed = ctypes.c_int(0)
        with self._call() as handle:
            _check(self._lib.cubby_blob_remove(handle, ns, key, ctypes.byref(removed)))
        return bool(removed.value)

    def blob_put(self, namespace: str, name: str, payload: bytes, compile_ms: float = 0.0) -> None:
        """Stores ``payload`` byte for byte as ``name`` in ``namespace``."""
        ns, key = _c_string(namespace, "namespace"), _c_string(name, "name")
        if isinstance(payload, str) or not isinstance(payload, (bytes, bytearray, memoryview)):
            raise TypeError(f"payload must be bytes, not {type(payload).__name__}")
        data = bytes(payload)
        with self._call() as handle:
            _check(self._lib.cubby_blob_put(handle, ns, key, data, len(data), float(compile_ms)))

    # -- the store --------------------------------------------------------------------------
    @property
    def dir(self) -> str:
        """The store folder."""
        return self._dir

    def stats(self) -> Dict[str, float]:
        """This handle's counters by name: every counter of libcubby's table (cubby/stats.hpp):
        hits_memory, hits_disk, hits_remote, misses, compiles, compile_ms, ... (times in ms)."""
        with self._call() as handle:
            text = self._lib.cubby_stats_json(handle)
        if text is None:
            raise Error(_text(self._lib.cubby_last_error()))
        return json.loads(text)

    def count_uncached(self, reason: str, detail: str = "") -> None:
        """Counts a program compiled without asking compile() (e.g. CuPy's own compile) under
        ``reason`` (a name of uncached_reasons(), e.g. "compiled_elsewhere"): in the counters
        "programs" and "uncached_<reason>", with ``detail`` kept as this process's first of the
        reason when it is. Raises Error for a name that is no reason."""
        text = _c_string(detail, "detail")
        with self._call() as handle:
            _check(self._lib.cubby_count_uncached(handle, _c_string(reason, "reason"), text))

    def recent_stats(self) -> Dict[str, float]:
        """stats() as last read, read again only when this handle was called since: for per-test
        figures (a counter moved by libcubby's own threads, such as a back-fill, shows at the next
        call; use stats() for exact totals)."""
        last = self._stats
        if last is not None and last[0] == self.uses:
            return last[1]
        counters = self.stats()
        self._stats = (self.uses, counters)
        return counters

    def usage(self, estimate: bool = False, namespace: Optional[str] = None) -> Tuple[int, int]:
        """(entries, bytes) in the store, counted by walking it; with ``estimate``, the store's
        size estimate instead (its persisted counters: no walk, see cubby_store_estimate); with
        ``namespace`` ("programs" or a blob namespace such as "cupy"), those of that namespace
        on disk, every entry read and decoded to know its namespace (cubby_namespace_usage)."""
        if namespace is None:
            function = self._lib.cubby_store_estimate if estimate else self._lib.cubby_store_usage
            args: tuple = ()
        elif estimate:
            raise ValueError("usage(estimate=True) has no per-namespace figure; "
                             "pass estimate or namespace, not both")
        else:
            function, args = self._lib.cubby_namespace_usage, (_c_string(namespace, "namespace"),)
        entries, size = ctypes.c_uint64(), ctypes.c_uint64()
        with self._call() as handle:
            _check(function(handle, *args, ctypes.byref(entries), ctypes.byref(size)))
        return entries.value, size.value

    def clear(self, namespace: Optional[str] = None) -> int:
        """Removes every entry of the store, or with ``namespace`` those of that namespace (every
        entry read and decoded: cubby_namespace_clear), from the store and this handle's memory,
        not the remote tier; returns how many left the store. Raises Error for a bad namespace
        or a read-only store."""
        ns, removed = _optional_c_string(namespace, "namespace"), ctypes.c_uint64()
        with self._call() as handle:
            if ns is None:
                _check(self._lib.cubby_clear(handle, ctypes.byref(removed)))
            else:
                _check(self._lib.cubby_namespace_clear(handle, ns, ctypes.byref(removed)))
        return removed.value

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else self.dir
        return f"cubby.Cache({state!r})"


def summary_lines(counters: Dict[str, float]) -> List[str]:
    """The end-of-run summary of ``counters`` (by name, as Cache.stats() gives them, or sums of
    those; other members are ignored): libcubby's lines (cubby_stats_summary), the wording the
    GoogleTest harness and `cubby stats` print too."""
    lib = _library.lib()
    text = lib.cubby_stats_summary(json.dumps(counters).encode())
    if text is None:
        raise Error(_text(lib.cubby_last_error()))
    return _text(text).split("\n")


def uncached_reasons() -> Dict[str, str]:
    """Why a program is compiled without the store: each reason of libcubby's table
    (cubby/stats.hpp, CUBBY_UNCACHED) by name, with its label; its counter is "uncached_<name>"
    and a process's first such program is in the "uncached_first" member of its stats."""
    lib = _library.lib()
    return {_text(lib.cubby_uncached_name(i)): _text(lib.cubby_uncached_label(i))
            for i in range(lib.cubby_uncached_count())}


def live_caches() -> List[Cache]:
    """The handles open in this process."""
    return [cache for cache in list(_live) if cache._handle is not None]
