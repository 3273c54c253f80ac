"""A PEP 517 / PEP 660 build backend for the cubby package, standard library only.

``build_wheel`` builds libcubby and the ``cubby`` tool with CMake (``cubby_native``) and packs them
with src/cubby/ (Python files and py.typed) into a platform wheel (``py3-none-<platform>``: the
package is ctypes only, so any CPython 3 of that platform loads it): ``cubby/_native/lib/`` and
``cubby/_native/bin/cubby``, plus a ``cubby`` console command that runs the bundled tool.
``CUBBY_WHEEL_PURE=1`` packs the Python files alone into a pure wheel (``py3-none-any``; libcubby
then comes from ``CUBBY_LIBRARY`` or the library path). ``build_editable`` puts src/ on sys.path and
builds nothing (libcubby: ``CUBBY_LIBRARY``, or the checkout's build tree). Metadata comes from
pyproject.toml's [project] table; the license text is the checkout's LICENSE. No build
requirements, so an offline ``pip install ./pytest_plugin`` works.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import stat
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

try:
    import tomllib  # Python >= 3.11
except ImportError:  # pragma: no cover - Python 3.9/3.10
    tomllib = None

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "cubby"
SOURCE_ROOT = ROOT.parent  # the cubby checkout: CMakeLists.txt, core/, cli/, LICENSE

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cubby_native  # noqa: E402  (beside this file: backend-path)


def _project() -> dict:
    text = (ROOT / "pyproject.toml").read_text()
    if tomllib is not None:
        return tomllib.loads(text)["project"]
    return _mini_toml(text)


def _mini_toml(text: str) -> dict:
    """The subset of TOML pyproject.toml uses, for Pythons without tomllib."""
    import ast

    project: dict = {}
    table = None
    for raw in text.splitlines():
        line = raw.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            table = line.strip("[]").strip()
            continue
        key, _, value = line.partition("=")
        key, value = key.strip().strip('"'), value.strip()
        if value.startswith("{"):  # an inline table of strings: { text = "Apache-2.0" }
            pairs = (item.partition("=") for item in value.strip("{}").split(","))
            value = repr({k.strip(): ast.literal_eval(v.strip()) for k, _, v in pairs})
        parsed = ast.literal_eval(value.replace("true", "True").replace("false", "False"))
        if table == "project":
            project[key] = parsed
        elif table == "project.scripts":
            project.setdefault("scripts", {})[key] = parsed
        elif table and table.startswith("project.entry-points."):
            group = table[len("project.entry-points."):]
            project.setdefault("entry-points", {}).setdefault(group, {})[key] = parsed
    return project


def _license_file() -> Path:
    """The license text: pytest_plugin/LICENSE (an sdist), else the checkout's LICENSE."""
    for candidate in (ROOT / "LICENSE", SOURCE_ROOT / "LICENSE"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"no LICENSE in {ROOT} or {SOURCE_ROOT}; the wheel's metadata names "
                            "it (restore it from the repository)")


def _metadata(project: dict) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}"]
    if "description" in project:
        lines.append(f"Summary: {project['description']}")
    license = project.get("license", {})
    if isinstance(license, dict) and "text" in license:
        lines.append(f"License: {license['text']}")
    lines.append("License-File: LICENSE")
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    return "\n".join(lines) + "\n"


def _entry_points(project: dict, scripts: bool) -> str:
    groups = dict(project.get("entry-points", {}))
    if scripts and project.get("scripts"):
        groups["console_scripts"] = project["scripts"]
    out = []
    for group, entries in groups.items():
        out.append(f"[{group}]")
        out += [f"{name} = {target}" for name, target in entries.items()]
        out.append("")
    return "\n".join(out)


def _dist_info(project: dict) -> str:
    return f"{project['name']}-{project['version']}.dist-info"


def platform_tag() -> str:
    """This interpreter's platform as a wheel tag (linux_x86_64, linux_aarch64, ...)."""
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(directory: str, files: dict, native: bool, scripts: bool) -> str:
    """Writes the wheel; `files` maps a path in it to bytes, or to (bytes, executable)."""
    project = _project()
    dist_info = _dist_info(project)
    tag = f"py3-none-{platform_tag()}" if native else "py3-none-any"
    files = {name: data if isinstance(data, tuple) else (data, False)
             for name, data in files.items()}
    files[f"{dist_info}/METADATA"] = (_metadata(project).encode(), False)
    files[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: cubby_build\nRoot-Is-Purelib: {str(not native).lower()}"
        f"\nTag: {tag}\n".encode(), False)
    files[f"{dist_info}/entry_points.txt"] = (_entry_points(project, scripts).encode(), False)
    files[f"{dist_info}/LICENSE"] = (_license_file().read_bytes(), False)
    record = [_record_line(name, data) for name, (data, _) in files.items()]
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = (("\n".join(record) + "\n").encode(), False)
    name = f"{project['name']}-{project['version']}-{tag}.whl"
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, (data, executable) in files.items():
            info = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            # A regular file's mode: installers (pip) keep the executable bits only with S_IFREG.
            info.external_attr = (stat.S_IFREG | (0o755 if executable else 0o644)) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data)
    return name


def _package_files() -> dict:
    files = {}
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and (path.suffix in (".py", ".typed") or path.name == "py.typed"):
            if "__pycache__" in path.parts:
                continue
            files[f"cubby/{path.relative_to(PACKAGE).as_posix()}"] = path.read_bytes()
    return files


def _pure() -> bool:
    return os.environ.get("CUBBY_WHEEL_PURE", "").strip().lower() in ("1", "true", "yes", "on")


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    if _pure():
        return _write_wheel(wheel_directory, _package_files(), native=False, scripts=False)
    try:
        native = cubby_native.build(SOURCE_ROOT)
    except cubby_native.BuildError as error:
        # pip shows this (and the build's output above it) under "Building wheel ... did not run
        # successfully".
        raise SystemExit(f"cubby_build: error: {error}") from None
    files = _package_files()
    files.update(native)
    return _write_wheel(wheel_directory, files, native=True, scripts=True)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel holding a .pth file that puts src/ on sys.path (the console command included)."""
    pth = (str(ROOT / "src") + "\n").encode()
    return _write_wheel(wheel_directory, {"cubby_editable.pth": pth}, native=False, scripts=True)


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    base = f"{project['name']}-{project['version']}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as sdist:
        for path in sorted(ROOT.rglob("*")):
            relative = path.relative_to(ROOT)
            if path.is_file() and "__pycache__" not in relative.parts:
                sdist.add(str(path), arcname=f"{base}/{relative.as_posix()}")
        if not (ROOT / "LICENSE").is_file():
            sdist.add(str(_license_file()), arcname=f"{base}/LICENSE")
        pkg_info = _metadata(project).encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info)
        sdist.addfile(info, io.BytesIO(pkg_info))
    return name
