"""CuPy's own compiles stored in cubby: the programs that do not go through ``_NVRTCProgram`` into
cubby's compile (``backend='nvcc'``: cupyx.jit's thrust kernels, ``RawModule(backend='nvcc')``;
jitify-mode programs, which carry jitify's preprocessed headers).

While cubby compiles CuPy's programs, CuPy's own kernel cache is a pass-through (cupy_adapter):
without this module those programs would be compiled again in every run, nvcc ones at seconds
each (cupyx's jit tests: 54 thrust kernels compiled by nvcc in every warm run). Here CuPy's
``compile_using_nvcc`` and the jitify branch of ``_compile_using_nvrtc_no_warning`` are wrapped:
their payload is a blob of cubby's ``cupy`` namespace named

    own-<how>-<CuPy's cache name>-<cubby's key>

CuPy's cache name hashes the source, the options, the architecture, NVRTC's version and CuPy's
own headers (what CuPy's own cache trusts); cubby's key (``Cache.storable_key`` of the source and
the options) adds every header under the program's include folders, so an edited user header is a
miss, as for cubby's own compiles. A program without such a key (an option the key cannot cover,
an include the scan cannot name) is compiled CuPy's way without the store and counted so. Other
processes asking for a program being produced wait for it (a blob claim: bounded, and given up
on a stopped holder, see Cache.load_or_claim_blob).
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Callable, Dict, Optional, Sequence, Tuple

from ._errors import Error

# `active` while OwnWayStore.produce compiles (per thread): the store counts that program, so the
# program class does not count it again as CuPy's own way.
_producing = threading.local()


def counted_by_store() -> bool:
    """Whether the compile running in this thread is one OwnWayStore.produce counts."""
    return getattr(_producing, "active", False)


def _counted(compile_: Callable[[], Tuple[bytes, Optional[Dict[str, str]]]]
             ) -> Tuple[bytes, Optional[Dict[str, str]]]:
    _producing.active = True
    try:
        return compile_()
    finally:
        _producing.active = False


def encode(payload: bytes, mapping: Optional[Dict[str, str]]) -> bytes:
    """A blob: the mapping (name expression -> lowered name, or null) as one JSON line, then the
    payload byte for byte."""
    return json.dumps(mapping, sort_keys=True).encode() + b"\n" + bytes(payload)


def decode(blob: bytes) -> Optional[Tuple[bytes, Optional[Dict[str, str]]]]:
    """(payload, mapping) of an ``encode``d blob; None when it is not one (a miss: the program
    is compiled again and the blob replaced). The store is shared: nothing else is trusted."""
    line, newline, payload = blob.partition(b"\n")
    if not newline or not payload:
        return None
    try:
        mapping = json.loads(line)
    except ValueError:
        return None
    if mapping is not None and not (isinstance(mapping, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in mapping.items())):
        return None
    return payload, mapping


class OwnWayStore:
    """Looks CuPy's own compiles up in ``router.cache`` and stores them (thread-safe through the
    Cache). ``router`` counts them: served (a hit), compiled (stored), or CuPy's own way without
    the store (``count_own``); ``on_save(name)`` is called for every program compiled and stored
    (require-warm). A miss waits up to ``claim_wait`` seconds for another process producing the
    same program."""

    def __init__(self, router, namespace: str, on_save: Callable[[str], None],
                 claim_wait: float) -> None:
        self.router = router
        self.namespace = namespace
        self.on_save = on_save
        self.claim_wait = claim_wait

    def name_of(self, how: str, cupy_name: str, source: str, options: Sequence,
                name_expressions: Sequence[str], arch) -> Optional[str]:
        """The blob name of a program (module docstring); None when its cubby key cannot be
        derived."""
        try:
            key = self.router.cache.storable_key(source, list(name_expressions or ()),
                                                 [str(option) for option in options],
                                                 f"sm_{arch}" if arch else None)
        except Error:
            return None
        return f"own-{how}-{cupy_name}-{key}"

    def produce(self, how: str, blob_name: Optional[str], program: str,
                compile_: Callable[[], Tuple[bytes, Optional[Dict[str, str]]]],
                names: Sequence[str] = ()) -> Tuple[bytes, Optional[Dict[str, str]]]:
        """(payload, mapping): stored under ``blob_name`` (a mapping that lacks one of ``names``
        counts as none stored), else ``compile_()`` stored there (by this process, or by another
        it waited for). ``blob_name`` None: compile_() without the store, counted as CuPy's own
        way (``how``)."""
        if blob_name is None:
            self.router.count_own(how, program)
            return _counted(compile_)
        cache = self.router.cache
        try:
            stored = cache.blob_get(self.namespace, blob_name, claim_wait=self.claim_wait)
        except Error:
            stored = None
        found = decode(stored) if stored is not None else None
        if found is not None and all(name in (found[1] or {}) for name in names):
            self.router.count_served()
            return found
        started = time.perf_counter()
        try:
            payload, mapping = _counted(compile_)
        except BaseException:
            try:
                cache.blob_release(self.namespace, blob_name)
            except Error:
                pass
            raise
        compile_ms = (time.perf_counter() - started) * 1000.0
        try:
            cache.blob_put(self.namespace, blob_name, encode(payload, mapping), compile_ms)
        except Error:  # a store that cannot be written: counted there, the result is still used
            pass
        self.router.count_compiled()
        self.on_save(blob_name)
        return payload, mapping


def cupy_name_of(filename: str) -> str:
    """CuPy's cache name in a file name it made (``<name>.cu``, in a temporary folder or not);
    "" when it is not one."""
    base = os.path.basename(filename or "")
    return base[:-len(".cu")] if base.endswith(".cu") and len(base) > len(".cu") else ""


def make_nvcc_compile(original: Callable, store: OwnWayStore) -> Callable:
    """CuPy's ``compile_using_nvcc`` through ``store`` (the payload is CUBIN or PTX bytes)."""

    def compile_using_nvcc(source, options=(), arch=None, filename="kern.cu", code_type="cubin",
                           separate_compilation=False, log_stream=None):
        def compile_():
            return original(source, options, arch, filename, code_type, separate_compilation,
                            log_stream), None

        cupy_name = cupy_name_of(filename)
        if not cupy_name:  # not CuPy's cached path (a direct call): CuPy's, as it was
            return compile_()[0]
        how = f"nvcc-{code_type}{'-rdc' if separate_compilation else ''}"
        name = store.name_of(how, cupy_name, source, options, (), arch)
        return store.produce(how, name, filename, compile_)[0]

    compile_using_nvcc.__wrapped__ = original  # type: ignore[attr-defined]
    return compile_using_nvcc


def jitify_compile(original: Callable, store: OwnWayStore, source, options, arch, filename,
                   name_expressions, log_stream, cache_in_memory, method):
    """A jitify compile of ``_compile_using_nvrtc_no_warning`` through ``store``: (payload,
    mapping) as CuPy's returns them."""

    def compile_():
        return original(source, options, arch, filename, name_expressions, log_stream,
                        cache_in_memory, True, method)

    cupy_name = "" if cache_in_memory else cupy_name_of(filename)
    if not cupy_name:
        return compile_()
    how = "jitify"  # the payload kind follows from the architecture and -dlto: in CuPy's name
    name = store.name_of(how, cupy_name, source, options, name_expressions or (), arch)
    return store.produce(how, name, filename, compile_, list(name_expressions or ()))
