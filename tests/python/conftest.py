"""Shared set-up of the Python tests: the cubby package from the source tree, a built libcubby
(CUBBY_LIBRARY, else a build folder of this checkout), and pytester runs of the plugin in a clean
environment with a private store."""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "pytest_plugin" / "src"
sys.path.insert(0, str(SRC))


def _find_library() -> str:
    explicit = os.environ.get("CUBBY_LIBRARY", "")
    if explicit:
        return explicit
    built = sorted(glob.glob(str(REPO / "build" / "*" / "core" / "libcubby.so")),
                   key=os.path.getmtime, reverse=True)
    return built[0] if built else ""


LIBRARY = _find_library()
if LIBRARY:
    os.environ["CUBBY_LIBRARY"] = LIBRARY


def cupy_on_a_gpu():
    """CuPy on a usable GPU with libcubby built: returns the cupy module, else skips the calling
    test module with the reason (call it at module level)."""
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no GPU", allow_module_level=True)
    except Exception as error:  # no driver
        pytest.skip(f"no usable GPU ({error})", allow_module_level=True)
    if not LIBRARY:
        pytest.skip("no libcubby: build cubby or set CUBBY_LIBRARY", allow_module_level=True)
    return cupy


def _find_cli() -> str:
    explicit = os.environ.get("CUBBY_CLI", "")
    if explicit:
        return explicit
    if LIBRARY:
        candidate = Path(LIBRARY).resolve().parent.parent / "cli" / "cubby"
        if candidate.exists():
            return str(candidate)
    return ""


CLI = _find_cli()

needs_library = pytest.mark.skipif(
    not LIBRARY, reason="no libcubby: build cubby or set CUBBY_LIBRARY to its libcubby.so")

# Settings the tests control; the developer's own must not leak into them.
_CLEARED = ("CUBBY_DIR", "CUBBY_DISABLE", "CUBBY_MAX_SIZE", "CUBBY_REMOTE", "CUBBY_BASE_DIR",
            "CUBBY_REQUIRE_WARM",
            "CUBBY_CLEAR", "CUBBY_NO_CUPY", "CUBBY_STATS_FILE", "CUBBY_READ_ONLY",
            "CUBBY_SUITE", "CUBBY_JOBS", "CUBBY_PREFETCH", "CUBBY_NO_PREFETCH",
            "PYTEST_ADDOPTS", "PYTEST_XDIST_AUTO_NUM_WORKERS")


@pytest.fixture
def store(tmp_path) -> Path:
    """A private, empty store folder."""
    path = tmp_path / "store"
    path.mkdir()
    return path


@pytest.fixture
def env(monkeypatch, tmp_path):
    """A clean environment for the code under test: plugin from the source tree, CUBBY_ARCH
    pinned, no autoloaded plugins (each run names its own with -p)."""
    for name in _CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(SRC)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("CUBBY_ARCH", "sm_90")
    if CLI:  # the tool prefetch runs (the library finds its own build tree's otherwise)
        monkeypatch.setenv("CUBBY_CLI", CLI)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return monkeypatch


@pytest.fixture
def run(pytester, env):
    """run(*args): pytest in a subprocess with the cubby plugin loaded."""

    def _run(*args: str):
        return pytester.runpytest_subprocess("-p", "cubby.plugin", "-p", "no:cacheprovider", *args)

    return _run


# A small templated kernel; KERNEL_TEST compiles it through the session fixture.
KERNEL = """
namespace ns {
template <typename T, int N>
__global__ void scale(T* data, T factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) data[i] *= factor;
}
}  // namespace ns
"""


def kernel_test(count: int = 1, offset: int = 0) -> str:
    """A test file with `count` tests, each compiling its own instantiation."""
    body = [f"KERNEL = {KERNEL!r}", ""]
    for index in range(offset, offset + count):
        body += [
            f"def test_kernel_{index}(cubby_cache):",
            f"    result = cubby_cache.compile(KERNEL, ['ns::scale<float, {index + 1}>'],"
            " ['-std=c++17'], 'sm_90')",
            f"    assert result.lowered_names['ns::scale<float, {index + 1}>'].startswith('_ZN2ns5scale')",
            "    assert result.cubin[:4] == b'\\x7fELF'",
            "",
        ]
    return "\n".join(body)
