"""`pip install ./pytest_plugin` (pytest_plugin/build_backend): the wheel carries libcubby and the
cubby tool, so a fresh virtual environment compiles with no variable set.

Two ways to the wheel: from the configured build the other tests use (CUBBY_WHEEL_BUILD_DIR,
seconds) and the one-step path a user takes (a Release build of libcubby and the tool in
the user's cache folder, minutes on two cores: run when CUBBY_TEST_WHEEL_ONE_STEP=1, as ci/test.sh
does; CUBBY_TEST_WHEEL_BUILD_TYPE=None, which ci/test.sh gives, builds it unoptimised through
CMake's CMAKE_BUILD_TYPE variable, a third less CPU). After either install, the README's Python example (its ```python readme-test block) runs in
the fresh venv as written: compiled first, then a disk hit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from conftest import KERNEL, LIBRARY, REPO, SRC, kernel_test

PLUGIN = SRC.parent  # pytest_plugin/
BACKEND = PLUGIN / "build_backend"
NAME = "ns::scale<float, 2>"


def _clean_env(tmp_path: Path, **extra: str) -> dict:
    """This environment without any cubby setting, PYTHONPATH or pytest options."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("CUBBY_", "PYTEST_")) and name != "PYTHONPATH"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(extra)
    return env


def _fresh_venv(tmp_path: Path) -> Path:
    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                          capture_output=True, text=True)
    if made.returncode != 0 and ("ensurepip" in made.stdout + made.stderr
                                 or "No module named venv" in made.stderr):
        pytest.skip("no venv module with pip for this interpreter (Debian: python3-venv)")
    assert made.returncode == 0, made.stdout + made.stderr
    return venv


# Run in the venv with no CUBBY_* variable: what a user's first script does.
PROBE = textwrap.dedent("""
    import json, sys
    from importlib import metadata
    import cubby
    store, source, name = sys.argv[1], sys.argv[2], sys.argv[3]
    with cubby.Cache(dir=store) as cache:
        result = cache.compile(source, [name], ["-std=c++17"], "sm_90")  # the CLI's default name too
    dist = metadata.distribution("cubby")
    print(json.dumps({
        "library": cubby.library_path(), "cli": cubby.cli_path(), "package": cubby.__file__,
        "key": result.key, "tier": result.tier, "magic": result.cubin[:4].hex(),
        "lowered": result.lowered_names[name],
        "license": dist.metadata["License"], "license_file": dist.metadata["License-File"],
        "license_text": (dist.read_text("LICENSE") or "")[:200],
        "wheel": dist.read_text("WHEEL"),
    }))
""")

# Prefetch (libcubby's own search for the tool) finds the bundled cubby: a recorded suite starts.
PREFETCH = textwrap.dedent("""
    import json, os, sys
    import cubby
    store, source = sys.argv[1], sys.argv[2]
    os.environ["CUBBY_SUITE"] = "wheel-suite"
    with cubby.Cache(dir=store) as cache:
        cache.compile(source, ["ns::scale<float, 5>"], ["-std=c++17"], "sm_90")
    del os.environ["CUBBY_SUITE"]
    with cubby.Prefetch("wheel-suite", store) as prefetch:
        print(json.dumps({"pid": prefetch.pid, "note": prefetch.note}))
""")


def _install_and_use(tmp_path: Path, **build_env: str) -> None:
    venv = _fresh_venv(tmp_path)
    python = venv / "bin" / "python"
    env = _clean_env(tmp_path, **build_env)
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-index", "--no-deps", str(PLUGIN)],
        capture_output=True, text=True, env=env)
    assert install.returncode == 0, install.stdout + install.stderr
    # pip shows a backend's output only with -v: the build's steps still reach its own output (a
    # pipe here, as in a CI log), with what to expect.
    said = install.stdout + install.stderr
    assert "cubby_build: " in said, said
    if "CUBBY_WHEEL_BUILD_DIR" not in build_env:
        assert " min on this machine's " in said and "CUBBY_WHEEL_BUILD_DIR=" in said, said
        kind = build_env.get("CMAKE_BUILD_TYPE") or "Release"
        assert f"(a {kind} build with CMake)" in said, said

    env = _clean_env(tmp_path)
    store = tmp_path / "store"
    probe = subprocess.run([str(python), "-c", PROBE, str(store), KERNEL, NAME],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
    assert probe.returncode == 0, probe.stdout + probe.stderr
    found = json.loads(probe.stdout)
    package = Path(found["package"]).parent
    assert package.is_relative_to(venv), found["package"]
    assert found["library"] == str(package / "_native" / "lib" / "libcubby.so.0")
    assert found["cli"] == str(package / "_native" / "bin" / "cubby")
    assert found["tier"] == "compiled" and found["magic"] == b"\x7fELF".hex()
    assert found["lowered"].startswith("_ZN2ns5scale")
    assert found["license"] == "Apache-2.0" and found["license_file"] == "LICENSE"
    assert "Apache License" in found["license_text"] and "Version 2.0" in found["license_text"]
    assert "Root-Is-Purelib: false" in found["wheel"]
    assert "Tag: py3-none-linux_" in found["wheel"]

    # The console command runs the bundled tool, which sees what the library stored.
    cli = venv / "bin" / "cubby"
    usage = subprocess.run([str(cli), "--help"], capture_output=True, text=True, env=env)
    assert usage.returncode == 0 and "Usage" in usage.stdout, usage.stdout + usage.stderr
    (tmp_path / "k.cu").write_text(KERNEL)
    compiled = subprocess.run(
        [str(cli), "compile", str(tmp_path / "k.cu"), "--dir", str(store), "--name-expr", NAME,
         "--option=-std=c++17", "--arch", "sm_90", "--json"],
        capture_output=True, text=True, env=env)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    answer = json.loads(compiled.stdout)
    assert (answer["key"], answer["hit"]) == (found["key"], True)

    prefetch = subprocess.run([str(python), "-c", PREFETCH, str(store), KERNEL],
                              capture_output=True, text=True, env=env, cwd=tmp_path)
    assert prefetch.returncode == 0, prefetch.stdout + prefetch.stderr
    started = json.loads(prefetch.stdout)
    assert started["pid"] > 0, started["note"]

    # The README's Python example, as written, in the fresh venv: compiled, then a disk hit.
    example = tmp_path / "readme_example.py"
    example.write_text(readme_snippet("python"))
    readme_env = _clean_env(tmp_path, CUBBY_DIR=str(tmp_path / "readme-store"))
    runs = [subprocess.run([str(python), str(example)], capture_output=True, text=True,
                           env=readme_env, cwd=tmp_path) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stdout + run.stderr
    first, second = (run.stdout.split() for run in runs)
    assert first[1:] == ["compiled", "_Z4fillIiEvPT_"], first
    assert second == [first[0], "disk", "_Z4fillIiEvPT_"], second

    if LIBRARY:  # CUBBY_LIBRARY still wins over the bundled library
        override = subprocess.run(
            [str(python), "-c", "import cubby; print(cubby.library_path())"],
            capture_output=True, text=True, env=_clean_env(tmp_path, CUBBY_LIBRARY=LIBRARY))
        assert override.returncode == 0, override.stderr
        assert override.stdout.strip() == LIBRARY


def readme_snippet(language: str, tag: str = "readme-test") -> str:
    """The body of README.md's one fenced block opened with "```<language> <tag>"."""
    blocks, inside = [], None
    for line in (REPO / "README.md").read_text().splitlines():
        if inside is None and line == f"```{language} {tag}":
            inside = []
        elif inside is not None and line.startswith("```"):
            blocks.append("\n".join(inside) + "\n")
            inside = None
        elif inside is not None:
            inside.append(line)
    assert len(blocks) == 1, f"README.md needs exactly one ```{language} {tag} block"
    return blocks[0]


def _configured_build() -> Path:
    build = Path(LIBRARY).resolve().parent.parent if LIBRARY else None
    if build is None or not (build / "CMakeCache.txt").is_file():
        pytest.skip("no configured cubby build: build cubby (or set CUBBY_LIBRARY to the "
                    "libcubby.so of a build folder)")
    return build


def test_pip_install_from_a_configured_build_into_a_fresh_venv_compiles(tmp_path):
    _install_and_use(tmp_path, CUBBY_WHEEL_BUILD_DIR=str(_configured_build()))


def test_the_readmes_venv_route_works_without_a_package_index(tmp_path):
    """README's Python route (its ```sh readme-venv block), line by line as written, with no
    package index (PIP_NO_INDEX) and the venv's folder in place of ~/venvs/cubby: a venv over
    /usr/bin/python3 that sees Debian's pytest, pip install ./pytest_plugin (from the configured
    build, which CUBBY_WHEEL_BUILD_DIR names: seconds; the one-step build is the test below), then
    `python -m pytest` runs a test that uses the plugin's fixture."""
    build = _configured_build()
    lines = [line for line in readme_snippet("sh", "readme-venv").splitlines() if line.strip()]
    assert len(lines) == 3 and lines[0].startswith("/usr/bin/python3 -m venv"), lines
    if not Path("/usr/bin/python3").is_file():
        pytest.skip("no /usr/bin/python3 (the README's route is Debian's Python)")
    venv = tmp_path / "venv"
    lines = [line.replace("~/venvs/cubby", str(venv)) for line in lines]
    env = _clean_env(tmp_path, CUBBY_WHEEL_BUILD_DIR=str(build), PIP_NO_INDEX="1")
    made = subprocess.run(["bash", "-c", lines[0]], capture_output=True, text=True, env=env)
    if made.returncode != 0 and "ensurepip" in made.stdout + made.stderr:
        pytest.skip("no venv module with pip for /usr/bin/python3 (Debian: python3-venv)")
    assert made.returncode == 0, made.stdout + made.stderr
    installed = subprocess.run(["bash", "-c", lines[1]], capture_output=True, text=True, env=env,
                               cwd=REPO)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "cubby_build: using the configured build" in installed.stdout + installed.stderr
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_k.py").write_text(kernel_test(1))
    ran = subprocess.run(["bash", "-c", lines[2]], capture_output=True,
                         text=True, env=_clean_env(tmp_path), cwd=project)
    assert ran.returncode == 0 and "1 passed" in ran.stdout, ran.stdout + ran.stderr
    assert "compiles: 1" in ran.stdout, ran.stdout


@pytest.mark.skipif(os.environ.get("CUBBY_TEST_WHEEL_ONE_STEP") != "1",
                    reason="the one-step wheel build (a Release build of libcubby and the tool, "
                           "minutes) runs with CUBBY_TEST_WHEEL_ONE_STEP=1, as in ci/test.sh")
def test_pip_install_in_one_step_into_a_fresh_venv_compiles(tmp_path):
    kind = os.environ.get("CUBBY_TEST_WHEEL_BUILD_TYPE", "")
    _install_and_use(tmp_path, **({"CMAKE_BUILD_TYPE": kind} if kind else {}))


def _backend(tmp_path: Path, hook: str, **env: str) -> subprocess.CompletedProcess:
    """Calls a hook of the build backend in a subprocess, as pip does."""
    code = (f"import sys; sys.path.insert(0, {str(BACKEND)!r}); import cubby_build; "
            f"print(cubby_build.{hook}({str(tmp_path)!r}))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_clean_env(tmp_path, **env), cwd=PLUGIN)


def test_the_pure_wheel_has_no_native_parts_and_keeps_the_license(tmp_path):
    built = _backend(tmp_path, "build_wheel", CUBBY_WHEEL_PURE="1")
    assert built.returncode == 0, built.stderr
    name = built.stdout.strip()
    assert name.endswith("-py3-none-any.whl"), name
    with zipfile.ZipFile(tmp_path / name) as wheel:
        names = wheel.namelist()
        text = {n.rsplit("/", 1)[-1]: wheel.read(n).decode() for n in names if ".dist-info/" in n}
    assert not [n for n in names if "_native" in n]
    assert "Root-Is-Purelib: true" in text["WHEEL"]
    assert "console_scripts" not in text["entry_points.txt"]  # no tool to run
    assert "License: Apache-2.0" in text["METADATA"]
    assert "Apache License" in text["LICENSE"]


@pytest.mark.parametrize("setting, message", [
    ({"CMAKE": "/nowhere/cmake"}, "CMAKE=/nowhere/cmake is not an executable"),
    ({"PATH": "/nowhere"}, "cmake was not found on PATH"),
    ({"CUDA_HOME": "/nowhere/cuda", "CUDAToolkit_ROOT": ""},
     "CUDA_HOME=/nowhere/cuda has no include/nvrtc.h"),
])
def test_a_missing_cmake_or_toolkit_says_what_to_do(tmp_path, setting, message):
    built = _backend(tmp_path, "build_wheel", CUBBY_WHEEL_BUILD_DIR=str(tmp_path / "build"),
                     **setting)
    assert built.returncode != 0
    assert f"cubby_build: error: {message}" in built.stderr, built.stderr
    assert not list(tmp_path.glob("*.whl"))


def test_the_build_uses_cmake_build_parallel_level_else_every_core(monkeypatch):
    sys.path.insert(0, str(BACKEND))
    try:
        import cubby_native
    finally:
        sys.path.remove(str(BACKEND))
    monkeypatch.setenv("CMAKE_BUILD_PARALLEL_LEVEL", "3")
    assert cubby_native._jobs() == []  # cmake --build reads it
    monkeypatch.delenv("CMAKE_BUILD_PARALLEL_LEVEL")
    assert cubby_native._jobs() == ["-j", str(len(os.sched_getaffinity(0)))]


def test_a_new_build_is_release_unless_cmake_build_type_names_another(tmp_path, monkeypatch):
    sys.path.insert(0, str(BACKEND))
    try:
        import cubby_native
    finally:
        sys.path.remove(str(BACKEND))
    commands = []
    monkeypatch.setattr(cubby_native, "_run", lambda command, what: commands.append(command))
    monkeypatch.setattr(cubby_native, "progress", lambda message: None)
    monkeypatch.setattr(cubby_native, "find_cuda", lambda: None)
    for kind in (None, "", "None"):
        if kind is None:
            monkeypatch.delenv("CMAKE_BUILD_TYPE", raising=False)
        else:
            monkeypatch.setenv("CMAKE_BUILD_TYPE", kind)
        cubby_native._configure_and_install("cmake", REPO, tmp_path / "build", tmp_path / "stage")
    types = [[option for option in command if option.startswith("-DCMAKE_BUILD_TYPE=")]
             for command in commands if "-S" in command]
    assert types == [["-DCMAKE_BUILD_TYPE=Release"], ["-DCMAKE_BUILD_TYPE=Release"],
                     ["-DCMAKE_BUILD_TYPE=None"]]


def test_an_editable_install_uses_the_checkouts_build(tmp_path):
    _configured_build()  # a build of this checkout exists
    venv = _fresh_venv(tmp_path)
    env = _clean_env(tmp_path)
    install = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--no-deps", "-e",
         str(PLUGIN)], capture_output=True, text=True, env=env)
    assert install.returncode == 0, install.stdout + install.stderr
    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import cubby; print(cubby.__file__, cubby.library_path(), cubby.cli_path())"],
        capture_output=True, text=True, env=env, cwd=tmp_path)
    assert probe.returncode == 0, probe.stderr
    package, library, cli = probe.stdout.split()
    assert Path(package).parent == SRC / "cubby"
    assert Path(library).is_relative_to(REPO / "build"), library
    assert Path(cli).is_relative_to(REPO / "build"), cli
    usage = subprocess.run([str(venv / "bin" / "cubby"), "--help"], capture_output=True,
                           text=True, env=env)
    assert usage.returncode == 0 and "Usage" in usage.stdout, usage.stdout + usage.stderr


def test_the_native_build_goes_to_the_users_cache_not_the_source_tree(tmp_path, monkeypatch):
    sys.path.insert(0, str(BACKEND))
    try:
        import cubby_native
    finally:
        sys.path.remove(str(BACKEND))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    folder, temporary = cubby_native._default_build_dir(REPO)
    assert not temporary
    assert folder.is_relative_to(tmp_path / "xdg" / "cubby-wheel-build"), folder
    assert not folder.is_relative_to(REPO)
    assert cubby_native._default_build_dir(REPO)[0] == folder  # the same checkout: incremental


def test_the_build_steps_reach_the_terminal_past_pip(tmp_path, monkeypatch, capfd):
    sys.path.insert(0, str(BACKEND))
    try:
        import cubby_native
    finally:
        sys.path.remove(str(BACKEND))
    terminal = tmp_path / "tty"
    monkeypatch.setattr(cubby_native, "_progress_stream", lambda: open(terminal, "w"))
    cubby_native._run(["sh", "-c", "echo '[ 42%] Building CXX object x.o'; echo '-- detail'"],
                      "building libcubby")
    shown = terminal.read_text()
    assert "cubby_build: building libcubby ..." in shown
    assert "cubby_build: [ 42%] Building CXX object x.o" in shown
    assert "detail" not in shown  # the whole log goes to stderr, for pip -v and failures
    assert "-- detail" in capfd.readouterr().err
