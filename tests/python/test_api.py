"""The Python API (pytest_plugin/src/cubby/_cache.py, _library.py) over a real libcubby."""

from __future__ import annotations

import pytest

import cubby
from conftest import KERNEL, needs_library

pytestmark = needs_library

NAMES = ["ns::scale<float, 256>", "ns::scale<double, 64>"]


@pytest.fixture
def cache(tmp_path, env):
    with cubby.Cache(tmp_path / "store") as handle:
        yield handle


def test_compile_then_hit(cache, tmp_path):
    first = cache.compile(KERNEL, NAMES, ["-std=c++17"], "sm_90")
    assert first.hit is False and first.tier == "compiled"
    assert set(first.lowered_names) == set(NAMES)
    assert first.lowered_names["ns::scale<float, 256>"].startswith("_ZN2ns5scaleIfLi256E")
    assert first.cubin[:4] == b"\x7fELF" and first.payload_kind == "cubin"
    assert len(first.key) == 32 and first.key == cache.key(KERNEL, NAMES, ["-std=c++17"], "sm_90")
    again = cache.compile(KERNEL, list(reversed(NAMES)), ["-std=c++17"], "sm_90")
    assert (again.hit, again.tier, again.key, again.cubin) == (True, "memory", first.key, first.cubin)
    with cubby.Cache(tmp_path / "store") as other:
        from_disk = other.compile(KERNEL, NAMES, ["-std=c++17"], "sm_90")
        assert from_disk.tier == "disk" and from_disk.lowered_names == first.lowered_names
        assert from_disk.compile_ms == pytest.approx(first.compile_ms)
    stats = cache.stats()
    assert (stats["compiles"], stats["hits_memory"], stats["misses"]) == (1, 1, 1)
    assert cache.usage()[0] == 1
    assert cache.clear() == 1 and cache.usage() == (0, 0)


def test_a_compile_error_carries_nvrtcs_log(cache):
    with pytest.raises(cubby.CompileError) as caught:
        cache.compile("__global__ void broken(float* d) { d[0] = undeclared_symbol; }",
                      arch="sm_90")
    assert "undeclared_symbol" in caught.value.log
    assert "undeclared_symbol" in str(caught.value)
    assert cache.stats()["compile_failures"] == 1


def test_blobs_round_trip_byte_for_byte(cache):
    payload = bytes(range(256)) * 3
    assert cache.blob_get("tool", "name") is None
    cache.blob_put("tool", "name", payload, compile_ms=5)
    assert cache.blob_get("tool", "name") == payload
    with pytest.raises(cubby.Error, match="namespace"):
        cache.blob_put("bad namespace", "name", b"x")


def test_arguments_are_checked(cache):
    with pytest.raises(TypeError, match="single string"):
        cache.compile(KERNEL, "ns::scale<float, 256>")
    with pytest.raises(TypeError, match="source must be a str"):
        cache.compile(b"bytes")


def test_a_closed_cache_says_so(tmp_path, env):
    handle = cubby.Cache(tmp_path)
    handle.close()
    handle.close()  # twice is fine
    with pytest.raises(cubby.Error, match="closed"):
        handle.stats()


def test_default_dir_follows_cubby_dir(tmp_path, env):
    env.setenv("CUBBY_DIR", str(tmp_path / "from-env"))
    with cubby.Cache() as handle:
        assert handle.dir == str(tmp_path / "from-env")


def test_the_library_version_and_path(env):
    assert cubby.version().count(".") == 2
    assert "libcubby" in cubby.library_path()
