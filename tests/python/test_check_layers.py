"""Tests of ci/check_layers.py: a tree whose core/src folder includes a higher folder, directly or
through a public header (core/include/cubby/) of a higher layer, fails with file:line and both
layers; so does a public header that includes a higher layer's header, and one the check cannot
place; a tree whose includes all point down passes; the repository's own tree passes (the same
check ci/lint.sh runs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHECK = REPO / "ci" / "check_layers.py"

ARCHITECTURE = """# arch

```
  src/               the layers
```
<!-- layers: lowest first (ci/check_layers.py reads the folder lines of this block) -->
```
    util/            bytes
    key/             keys; uses util/ (a word/ in a description is no folder)
    storage/         tiers
    storage/local/   a sub-folder: not a layer of its own
```
<!-- end layers -->
"""


def make_tree(root: Path, files: dict[str, str], architecture: str = ARCHITECTURE) -> Path:
    """`files`: paths under core/src, or under core/include when they start with "cubby/"."""
    (root / "ARCHITECTURE.md").write_text(architecture)
    for name, text in files.items():
        path = root / "core" / ("include" if name.startswith("cubby/") else "src") / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def run_check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK), str(root)], capture_output=True, text=True,
                          check=False)


CLEAN = {
    "util/bytes.hpp": "#pragma once\n#include <string>\n",
    "util/error.cpp": '#include "cubby/error.hpp"\n#include "cubby/types.hpp"\n',
    "key/key.cpp": '#include "key/key.hpp"\n#include "util/bytes.hpp"\n#include "cubby/key.hpp"\n',
    "key/key.hpp": "#pragma once\n",
    "storage/local/disk.cpp": '#include "storage/tier.hpp"\n#include "key/key.hpp"\n'
                              '#include "util/bytes.hpp"\n#include "cubby/key.hpp"\n',
    "storage/tier.hpp": "#pragma once\n",
    # Public headers: export.h and types.hpp are the bottom layer, error.hpp is util's, key.hpp
    # key's (ci/check_layers.py's PUBLIC_HEADERS); version.hpp is made from version.hpp.in.
    "cubby/export.h": "#pragma once\n",
    "cubby/types.hpp": '#pragma once\n#include <map>\n#include "cubby/export.h"\n',
    "cubby/version.hpp.in": "#pragma once\n",
    "cubby/error.hpp": '#pragma once\n#include "cubby/export.h"\n',
    "cubby/key.hpp": '#pragma once\n#include "cubby/error.hpp"\n#include "cubby/types.hpp"\n'
                     '#include "cubby/version.hpp"\n',
}


def test_includes_that_point_down_pass(tmp_path):
    result = run_check(make_tree(tmp_path, CLEAN))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_a_lower_folder_including_a_higher_one_fails_naming_the_line_and_both_folders(tmp_path):
    files = dict(CLEAN)
    files["util/io.cpp"] = '#include <vector>\n\n#include "storage/local/disk.hpp"\n'
    files["key/scan.hpp"] = '#pragma once\n  #  include "storage/tier.hpp"  // spaced\n'
    result = run_check(make_tree(tmp_path, files))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert any(line.startswith("core/src/util/io.cpp:3: util/ includes storage/") for line in lines)
    assert any(line.startswith("core/src/key/scan.hpp:2: key/ includes storage/") for line in lines)
    assert "2 include(s) against the folder order (util < key < storage)" in result.stderr


def test_a_folder_including_a_public_header_of_a_higher_layer_fails(tmp_path):
    files = dict(CLEAN)
    files["util/io.cpp"] = '#include "util/bytes.hpp"\n#include "cubby/key.hpp"\n'
    result = run_check(make_tree(tmp_path, files))
    assert result.returncode == 1
    assert result.stderr.startswith(
        "core/src/util/io.cpp:2: util/ includes cubby/key.hpp of key/, a higher layer")
    assert "1 include(s) against the folder order" in result.stderr


def test_a_public_header_including_a_higher_layers_public_header_fails(tmp_path):
    files = dict(CLEAN)
    files["cubby/error.hpp"] = '#pragma once\n#include "cubby/export.h"\n#include "cubby/key.hpp"\n'
    files["cubby/types.hpp"] = '#pragma once\n#include "cubby/error.hpp"\n'
    result = run_check(make_tree(tmp_path, files))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert any(line.startswith("core/include/cubby/error.hpp:3: util/ includes cubby/key.hpp of "
                               "key/, a higher layer") for line in lines)
    assert any(line.startswith("core/include/cubby/types.hpp:2: the bottom layer includes "
                               "cubby/error.hpp of util/, a higher layer") for line in lines)
    assert "2 include(s) against the folder order" in result.stderr


def test_a_public_header_the_check_cannot_place_fails(tmp_path):
    files = dict(CLEAN)
    files["cubby/shiny.hpp"] = "#pragma once\n"  # in no layer of PUBLIC_HEADERS
    files["key/scan.cpp"] = '#include "cubby/missing.hpp"\n'
    files["cubby/cache.hpp"] = "#pragma once\n"  # cache/ is not in this tree's list
    result = run_check(make_tree(tmp_path, files))
    assert result.returncode == 1
    assert "core/include/cubby/shiny.hpp: a public header with no layer" in result.stderr
    assert ("core/src/key/scan.cpp:1: includes cubby/missing.hpp, which has no layer"
            in result.stderr)
    assert "core/include/cubby/cache.hpp: its layer cache/" in result.stderr


def test_a_folder_missing_from_the_list_fails(tmp_path):
    files = dict(CLEAN)
    files["store/store.cpp"] = '#include "storage/tier.hpp"\n'
    result = run_check(make_tree(tmp_path, files))
    assert result.returncode == 1
    assert "core/src/store/: not in ARCHITECTURE.md's folder list" in result.stderr


def test_a_missing_or_empty_list_is_an_error_of_its_own(tmp_path):
    assert run_check(make_tree(tmp_path, CLEAN, "# no list\n")).returncode == 2
    empty = "<!-- layers: lowest first -->\n<!-- end layers -->\n"
    assert run_check(make_tree(tmp_path, CLEAN, empty)).returncode == 2


def test_the_repository_tree_follows_its_own_order():
    result = run_check(REPO)
    assert result.returncode == 0, result.stderr
