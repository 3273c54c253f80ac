"""One key dump (issue 14, part 5): the Python package's explain_text is the text of
`cubby compile --explain` for the same file, key included, and names come back in request order."""

from __future__ import annotations

import subprocess

import pytest

import cubby
from conftest import CLI, KERNEL, needs_library

pytestmark = needs_library

SOURCE = "#include <cuda/std/cstdint>\n" + KERNEL
NAMES = ["ns::scale<float, 256>", "ns::scale<double, 64>"]


@pytest.mark.skipif(not CLI, reason="no cubby CLI: build it or set CUBBY_CLI")
def test_cli_and_library_give_one_key_and_one_dump(tmp_path, env):
    kernel = tmp_path / "any_name.cu"
    kernel.write_text(SOURCE)
    store = tmp_path / "store"
    args = [CLI, "compile", str(kernel), "--dir", str(store), "--arch", "sm_90", "--explain"]
    for name in NAMES:
        args += ["--name-expr", name]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    with cubby.Cache(store) as cache:  # no program name: the library's default, as the CLI's
        dump = cache.explain_text(SOURCE, NAMES, arch="sm_90")
        key = cache.key(SOURCE, NAMES, arch="sm_90")
        result = cache.compile(SOURCE, list(reversed(NAMES)), arch="sm_90")
    assert dump.startswith("key fields (label, hash, value):\n")
    assert dump in out, f"the CLI's dump differs from the library's:\n{out}\n---\n{dump}"
    assert "toolkit (covered by the NVRTC identity)" in dump and "unresolved" not in dump
    assert f"key      {key}\n" in out
    assert result.hit and result.key == key
    assert list(result.lowered_names) == list(reversed(NAMES))
