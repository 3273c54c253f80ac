"""Builds libcubby and the `cubby` tool with CMake for the wheel (standard library only).

Contract: ``build(source_root)`` returns ``{path in the wheel: (bytes, executable)}`` for
``cubby/_native/lib/libcubby.so.<SOVERSION>`` and ``cubby/_native/bin/cubby``, the layout in which
libcubby finds its tool (``<lib>/../bin/cubby``, see core/include/cubby/prefetch.hpp) and the Python
package finds both (``cubby/_library.py``, ``cubby/_cli.py``). On failure it raises ``BuildError``
with a message that says what to do.

Where it builds (``CUBBY_WHEEL_BUILD_DIR``):
  unset            ``$XDG_CACHE_HOME/cubby-wheel-build/<hash of source_root>`` (else
                   ``~/.cache/...``, else a temporary folder): out of the source tree, configured
                   as a Release build (``CMAKE_BUILD_TYPE`` in the environment names another,
                   as CMake's own default does), tests, benchmarks,
                   GoogleTest harness and fuzz targets off, installed run path ``$ORIGIN/../lib``;
                   rebuilt incrementally by later installs; installed with ``cmake --install``.
  a configured     an existing cubby build (has CMakeCache.txt), used as configured: only the
  build folder     ``libcubby`` and ``cubby`` targets are built, and the install rules of core/
                   and cli/ run (a fast path for CI and developers with a build at hand).
  any other path   configured there as for ``unset``.
``CMAKE_BUILD_PARALLEL_LEVEL`` sets the build's jobs (default: one per usable core);
``CMAKE_<LANG>_COMPILER_LAUNCHER`` is honoured, and ccache is used when it is on PATH;
``CUDAToolkit_ROOT`` / ``CUDA_HOME`` / ``CUDA_PATH`` name the CUDA toolkit; ``CMAKE`` names cmake.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

# The wheel's layout of the native parts (cubby/_library.py and cubby/_cli.py look here).
NATIVE = "cubby/_native"
TARGETS = ("libcubby", "cubby")  # core/CMakeLists.txt, cli/CMakeLists.txt
# Everything but the library and the tool off: the wheel build is the top-level project.
CONFIGURE_OPTIONS = (
    "-DCUBBY_BUILD_TESTS=OFF",
    "-DCUBBY_BUILD_BENCH=OFF",
    "-DCUBBY_BUILD_GTEST=OFF",
    "-DCUBBY_FUZZ=OFF",
    "-DCUBBY_BUILD_CLI=ON",
    "-DCMAKE_INSTALL_LIBDIR=lib",
    "-DCMAKE_INSTALL_BINDIR=bin",
    "-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib",
)


class BuildError(Exception):
    """The native build cannot go on; the message says what to do."""


def _log(message: str) -> None:
    print(f"cubby_build: {message}", file=sys.stderr, flush=True)


def find_cmake() -> str:
    explicit = os.environ.get("CMAKE", "")
    cmake = explicit or shutil.which("cmake")
    if not cmake or not os.access(cmake, os.X_OK):
        raise BuildError(
            (f"CMAKE={explicit} is not an executable; " if explicit
             else "cmake was not found on PATH; ")
            + "the wheel builds libcubby and the cubby tool with CMake >= 3.24: install it "
            "(Debian: apt-get install cmake) or set CMAKE to its path. CUBBY_WHEEL_PURE=1 builds a "
            "pure-Python wheel instead (libcubby then comes from CUBBY_LIBRARY)")
    return cmake


def find_cuda() -> Optional[str]:
    """The CUDA toolkit folder (it has include/nvrtc.h); None when only CMake's own search (nvcc on
    PATH) is left. Raises BuildError for a named folder without NVRTC, or no toolkit at all."""
    for variable in ("CUDAToolkit_ROOT", "CUDA_HOME", "CUDA_PATH"):
        named = os.environ.get(variable, "")
        if named:
            if not (Path(named) / "include" / "nvrtc.h").is_file():
                raise BuildError(
                    f"{variable}={named} has no include/nvrtc.h; point it at the CUDA toolkit "
                    "(e.g. /usr/local/cuda) or unset it")
            return named
    for folder in ("/usr/local/cuda",):
        if (Path(folder) / "include" / "nvrtc.h").is_file():
            return folder
    if shutil.which("nvcc"):
        return None
    raise BuildError(
        "the CUDA toolkit was not found (looked for include/nvrtc.h in CUDAToolkit_ROOT, "
        "CUDA_HOME, CUDA_PATH and /usr/local/cuda, and for nvcc on PATH); libcubby needs its "
        "headers to build: install the CUDA toolkit or set CUDA_HOME to it")


def _appends(pid: int, fd: int) -> bool:
    """Whether process `pid` opened its descriptor `fd` with O_APPEND (its fdinfo says)."""
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}", encoding="ascii") as info:
            for line in info:
                if line.startswith("flags:"):
                    return int(line.split()[1], 8) & os.O_APPEND != 0
    except (OSError, ValueError, IndexError):
        pass
    return False


def _progress_stream():
    """Where progress lines go past pip, which shows a backend's own output only with -v or on
    failure: the stderr of the process that runs this backend (pip's: its terminal, or the pipe or
    log file a CI job reads), else the terminal; None when neither can be written (the full log
    is still on this process's stderr). A log file pip writes without O_APPEND is left alone (a
    write of ours would be overwritten by pip's next line)."""
    parent = os.getppid()
    target = f"/proc/{parent}/fd/2"
    try:
        theirs, ours = os.stat(target), os.fstat(2)
        same = (theirs.st_dev, theirs.st_ino) == (ours.st_dev, ours.st_ino)
        if not same and (not stat.S_ISREG(theirs.st_mode) or _appends(parent, 2)):
            return open(target, "a", encoding="utf-8", errors="replace")
    except OSError:
        pass
    try:
        return open("/dev/tty", "w", encoding="utf-8", errors="replace")
    except OSError:
        return None


def progress(message: str) -> None:
    """Says `message` where the user sees it during `pip install` (see _progress_stream), and on
    this process's stderr."""
    _log(message)
    stream = _progress_stream()
    if stream is not None:
        with stream:
            print(f"cubby_build: {message}", file=stream, flush=True)


def _minutes_estimate() -> str:
    """The first build's expected time on this machine: about 10 core-minutes (measured: 5 min on
    2 cores), less with ccache hits or an incremental rebuild."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    minutes = max(1, round(10 / max(cores, 1)))
    return f"about {minutes} min on this machine's {cores} core(s) the first time"


def _is_step(line: str) -> bool:
    """A line that says how far the build is: CMake's "[ 42%] Building ..." / "Linking ..."."""
    return line.startswith("[") and "%]" in line[:7]


def _run(command: List[str], what: str) -> None:
    """Runs `command` with its whole output on this process's stderr (shown by `pip install -v`,
    and by pip on failure), and `what` and the build's steps ("[ 42%] Building ...") where the user
    of pip sees them (_progress_stream), so that a plain `pip install` shows progress, in a
    terminal or in a CI log."""
    _log(" ".join(command))
    sys.stderr.flush()
    stream = _progress_stream()
    try:
        if stream is not None:
            print(f"cubby_build: {what} ...", file=stream, flush=True)
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace") as process:
            assert process.stdout is not None
            for line in process.stdout:
                sys.stderr.write(line)
                if stream is not None and _is_step(line):
                    stream.write(f"cubby_build: {line}")
                    stream.flush()
        status = process.returncode
    finally:
        if stream is not None:
            stream.close()
    sys.stderr.flush()
    if status != 0:
        raise BuildError(f"{what} failed (exit status {status}; its output is above)")


def _launchers() -> List[str]:
    """CMAKE_<LANG>_COMPILER_LAUNCHER from the environment, else ccache when it is on PATH."""
    options = []
    for lang in ("C", "CXX"):
        variable = f"CMAKE_{lang}_COMPILER_LAUNCHER"
        launcher = os.environ.get(variable) or shutil.which("ccache")
        if launcher:
            options.append(f"-D{variable}={launcher}")
    return options


def build_type() -> str:
    """The build type of a build the backend configures: ``CMAKE_BUILD_TYPE`` from the environment
    (CMake's default for a new build folder; ci/test.sh gives ``None``, no optimisation, to its
    one-step test), else Release."""
    return os.environ.get("CMAKE_BUILD_TYPE", "").strip() or "Release"


def _jobs() -> List[str]:
    if os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL"):
        return []  # cmake --build reads it itself
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return ["-j", str(max(cores, 1))]


def _default_build_dir(source_root: Path) -> Tuple[Path, bool]:
    """(a folder of the user's cache for this checkout, False): out of the source tree, kept for
    incremental rebuilds by later installs; (a new temporary folder, True) when there is no
    writable cache folder."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    digest = hashlib.sha256(str(source_root.resolve()).encode()).hexdigest()[:16]
    folder = cache / "cubby-wheel-build" / digest
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return folder, False
    except OSError:
        return Path(tempfile.mkdtemp(prefix="cubby-wheel-build-")), True


def _configure_and_install(cmake: str, source_root: Path, build_dir: Path, stage: Path) -> None:
    cuda = find_cuda()
    kind = build_type()
    progress(f"building libcubby and the cubby tool (a {kind} build with CMake) in {build_dir}: "
             f"{_minutes_estimate()}, seconds when rebuilt; CUBBY_WHEEL_BUILD_DIR=<a configured "
             "cubby build folder> reuses a build you have instead")
    configure = [cmake, "-S", str(source_root), "-B", str(build_dir), f"-DCMAKE_BUILD_TYPE={kind}",
                 *CONFIGURE_OPTIONS, *_launchers()]
    if cuda:
        configure.append(f"-DCUDAToolkit_ROOT={cuda}")
    _run(configure, "configuring cubby with CMake")
    # The default target: with tests, benchmarks and the harness off, libcubby, the tool and what
    # their install rules need.
    _run([cmake, "--build", str(build_dir), *_jobs()], "building libcubby and the cubby tool")
    _run([cmake, "--install", str(build_dir), "--prefix", str(stage), "--strip"],
         "cmake --install")


def _reuse_and_install(cmake: str, build_dir: Path, stage: Path) -> None:
    progress(f"using the configured build {build_dir} (CUBBY_WHEEL_BUILD_DIR): building what it "
             "lacks of libcubby and the cubby tool, seconds when it is up to date")
    _run([cmake, "--build", str(build_dir), "--target", *TARGETS, *_jobs()],
         f"building {' '.join(TARGETS)} in {build_dir}")
    for folder in ("core", "cli"):
        script = build_dir / folder / "cmake_install.cmake"
        if not script.is_file():
            raise BuildError(f"{script} does not exist: CUBBY_WHEEL_BUILD_DIR={build_dir} is not "
                             "a cubby build with the cubby tool (CUBBY_BUILD_CLI=ON); unset it to "
                             "build one")
        _run([cmake, f"-DCMAKE_INSTALL_PREFIX={stage}", "-DCMAKE_INSTALL_DO_STRIP=1", "-P",
              str(script)],
             f"installing {folder}/ of {build_dir} (build the whole folder first: cmake --build "
             f"{build_dir})")


def _staged(stage: Path) -> Tuple[Path, Path]:
    """(libcubby's real file, the tool) in the staging prefix, whatever its lib folder's name."""
    libraries = sorted(p for p in stage.rglob("libcubby.so*") if p.is_file() and not p.is_symlink())
    tools = [p for p in stage.rglob("bin/cubby") if p.is_file()]
    if not libraries or not tools:
        raise BuildError(f"the install into {stage} holds no libcubby.so or no bin/cubby; "
                         "was the cubby tool turned off (CUBBY_BUILD_CLI)?")
    return libraries[0], tools[0]


def _soname(library: Path) -> str:
    """libcubby.so.<major> from libcubby.so.<major>.<minor>.<patch> (the name the tool links)."""
    parts = library.name.split(".")
    return ".".join(parts[:3]) if len(parts) >= 3 else library.name


def build(source_root: Path) -> Dict[str, Tuple[bytes, bool]]:
    if not (source_root / "CMakeLists.txt").is_file() or not (
            source_root / "core" / "include" / "cubby" / "cubby.h").is_file():
        raise BuildError(
            f"{source_root} is not a cubby source tree, which the native build needs (a source "
            "distribution of the Python package alone cannot build libcubby): install from a "
            "checkout (pip install ./pytest_plugin), or set CUBBY_WHEEL_PURE=1 for a pure-Python "
            "wheel that loads libcubby from CUBBY_LIBRARY")
    cmake = find_cmake()
    named = os.environ.get("CUBBY_WHEEL_BUILD_DIR", "")
    with tempfile.TemporaryDirectory(prefix="cubby-wheel-stage-") as stage_name:
        stage = Path(stage_name)
        if named and (Path(named) / "CMakeCache.txt").is_file():
            _reuse_and_install(cmake, Path(named).resolve(), stage)
        else:
            build_dir, temporary = ((Path(named).resolve(), False) if named
                                    else _default_build_dir(source_root))
            try:
                _configure_and_install(cmake, source_root, build_dir, stage)
            finally:
                if temporary:
                    shutil.rmtree(build_dir, ignore_errors=True)
        library, tool = _staged(stage)
        return {
            f"{NATIVE}/lib/{_soname(library)}": (library.read_bytes(), True),
            f"{NATIVE}/bin/cubby": (tool.read_bytes(), True),
        }
