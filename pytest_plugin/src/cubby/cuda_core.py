"""cuda.core programs through cubby: header-exact keys and name expressions that survive a hit.

    from cubby import cuda_core
    code = cuda_core.compile(source, ProgramOptions(arch="sm_90", include_path=[folder]),
                             name_expressions=["ns::k<float>"])
    kernel = code.get_kernel("ns::k<float>")

``compile`` takes what ``cuda.core.Program(source, "c++", options).compile(target_type,
name_expressions)`` takes and returns an ``ObjectCode`` like it, but through a ``cubby.Cache``:
the options are ``ProgramOptions.as_bytes("nvrtc", target_type)`` exactly (the architecture
option taken out and passed as cubby's ``arch``), the program name is ``ProgramOptions.name``,
and the key covers every header the source can include (``include_path`` folders, the program's
folder), so no ``extra_digest`` is needed. On a hit the ``ObjectCode`` carries the name mapping
NVRTC gave when it compiled (``symbol_mapping``), so ``get_kernel(name_expression)`` works.

``ProgramCache`` is a ``cuda.core.utils.ProgramCacheResource`` for keys cuda.core derives itself
(``Program.compile(..., cache=ProgramCache())``): bytes stored byte for byte as cubby blobs of the
``cuda-core`` namespace (bounded, checked and shared with the rest of the store); ``len`` and
``clear`` count and remove that namespace's entries (a scan of the store). Such keys are
cuda.core's: they cover what ``make_program_cache_key`` hashes, not headers; prefer ``compile``.

cuda.core (>= 1.2 for ``ProgramCacheResource``) is imported when these are used, not before.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ._cache import Cache
from .cupy_adapter import split_arch

NAMESPACE = "cuda-core"
# target_type -> (the ObjectCode constructor, the architecture prefix cubby needs)
TARGETS = {"cubin": ("from_cubin", "sm_"), "ptx": ("from_ptx", "compute_")}

_default_cache: Optional[Cache] = None


def default_cache() -> Cache:
    """The process's cubby.Cache for cuda.core (CUBBY_DIR / default store), opened once."""
    global _default_cache
    if _default_cache is None:
        _default_cache = Cache()
    return _default_cache


def compile(source: str, options=None, name_expressions: Sequence[str] = (),
            target_type: str = "cubin", cache: Optional[Cache] = None):
    """An ``ObjectCode`` for a C++ ``source`` compiled with cuda.core ``ProgramOptions``
    (None: ``ProgramOptions()``), from cubby's store or compiled by NVRTC and stored.

    Raises ``cubby.CompileError`` (NVRTC's log in ``.log``) when NVRTC rejects the program,
    ``ValueError`` for a ``target_type`` other than "cubin" or "ptx" or options without exactly
    one architecture of the target's kind."""
    from cuda.core import ObjectCode, ProgramOptions

    if target_type not in TARGETS:
        raise ValueError(f"target_type {target_type!r}: cubby.cuda_core compiles 'cubin' or 'ptx'; "
                         "use cuda.core.Program for others")
    options = ProgramOptions() if options is None else options
    rest, arch = split_arch(options.as_bytes("nvrtc", target_type))
    constructor, prefix = TARGETS[target_type]
    if arch is None or not arch.startswith(prefix):
        raise ValueError(f"ProgramOptions.arch {getattr(options, 'arch', None)!r} does not give "
                         f"one {prefix}XX architecture for target_type {target_type!r}")
    names = list(name_expressions)
    result = (cache or default_cache()).compile(source, names, rest, arch, options.name)
    # As cuda.core's own compile gives it: expression -> lowered name as bytes.
    mapping = {name: result.lowered_names[name].encode() for name in names}
    return getattr(ObjectCode, constructor)(result.cubin, name=options.name,
                                            symbol_mapping=mapping)


def _key_name(key) -> str:
    if isinstance(key, str):
        key = key.encode("utf-8")
    if not isinstance(key, (bytes, bytearray)):
        raise TypeError(f"cache keys must be bytes or str, got {type(key).__name__}")
    return bytes(key).hex()


def _value_bytes(value) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    code = getattr(value, "code", None)  # an ObjectCode
    if isinstance(code, (bytes, bytearray)):
        return bytes(code)
    if isinstance(code, str):
        with open(code, "rb") as file:
            return file.read()
    raise TypeError(f"cache values must be bytes-like or ObjectCode, got {type(value).__name__}")


def _program_cache_class():
    from cuda.core.utils import ProgramCacheResource

    class ProgramCache(ProgramCacheResource):
        """cuda.core's ProgramCacheResource over cubby's store (blobs of ``NAMESPACE``).

        ``del cache[key]`` removes an entry (KeyError when there is none). ``len(cache)`` counts
        the namespace's entries in the local store and ``clear()`` removes them (and drops them
        from the handle's memory); neither touches the remote tier. Both read and decode every
        entry of the store (blob keys are hashes of (namespace, name)): a cost that grows with
        the whole store."""

        def __init__(self, cache: Optional[Cache] = None) -> None:
            self._cache = cache or default_cache()

        def __getitem__(self, key) -> bytes:
            payload = self._cache.blob_get(NAMESPACE, _key_name(key))
            if payload is None:
                raise KeyError(key)
            return payload

        def __setitem__(self, key, value) -> None:
            self._cache.blob_put(NAMESPACE, _key_name(key), _value_bytes(value))

        def __delitem__(self, key) -> None:
            if not self._cache.blob_remove(NAMESPACE, _key_name(key)):
                raise KeyError(key)

        def __len__(self) -> int:
            """The entries of ``NAMESPACE`` in the local store (cubby_namespace_usage)."""
            return self._cache.usage(namespace=NAMESPACE)[0]

        def clear(self) -> None:
            """Removes the entries of ``NAMESPACE`` from the local store and the handle's memory
            (cubby_namespace_clear); the remote tier keeps its copies. Raises cubby.Error for a
            read-only store."""
            self._cache.clear(namespace=NAMESPACE)

    return ProgramCache


def ProgramCache(cache: Optional[Cache] = None):
    """A ``cuda.core.utils.ProgramCacheResource`` on ``cache`` (None: the default store)."""
    return _program_cache_class()(cache)
