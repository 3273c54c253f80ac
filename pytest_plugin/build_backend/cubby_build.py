"""A PEP 517 / PEP 660 build backend for the cubby package, standard library only.

It packs src/cubby/ (Python files and py.typed) into a pure-Python wheel whose metadata comes from
pyproject.toml's [project] table (name, version, description, requires-python, classifiers,
entry points). No build requirements, so an offline `pip install ./pytest_plugin` works.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import zipfile
from pathlib import Path

try:
    import tomllib  # Python >= 3.11
except ImportError:  # pragma: no cover - Python 3.9/3.10
    tomllib = None

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "cubby"


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
        key, value = key.strip(), value.strip()
        if table == "project":
            if value.startswith("{"):
                continue
            project[key] = ast.literal_eval(value.replace("true", "True").replace("false", "False"))
        elif table and table.startswith("project.entry-points."):
            group = table[len("project.entry-points."):]
            project.setdefault("entry-points", {}).setdefault(group, {})[key] = ast.literal_eval(value)
    return project


def _metadata(project: dict) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}"]
    if "description" in project:
        lines.append(f"Summary: {project['description']}")
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    return "\n".join(lines) + "\n"


def _entry_points(project: dict) -> str:
    out = []
    for group, entries in project.get("entry-points", {}).items():
        out.append(f"[{group}]")
        out += [f"{name} = {target}" for name, target in entries.items()]
        out.append("")
    return "\n".join(out)


def _dist_info(project: dict) -> str:
    return f"{project['name']}-{project['version']}.dist-info"


def _wheel_name(project: dict) -> str:
    return f"{project['name']}-{project['version']}-py3-none-any.whl"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(directory: str, files: dict) -> str:
    project = _project()
    dist_info = _dist_info(project)
    files = dict(files)
    files[f"{dist_info}/METADATA"] = _metadata(project).encode()
    files[f"{dist_info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: cubby_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    files[f"{dist_info}/entry_points.txt"] = _entry_points(project).encode()
    record = [_record_line(name, data) for name, data in files.items()]
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    name = _wheel_name(project)
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
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


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _package_files())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel holding a .pth file that puts src/ on sys.path."""
    return _write_wheel(wheel_directory, {"cubby_editable.pth": (str(ROOT / "src") + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    base = f"{project['name']}-{project['version']}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as sdist:
        for path in sorted(ROOT.rglob("*")):
            relative = path.relative_to(ROOT)
            if path.is_file() and "__pycache__" not in relative.parts:
                sdist.add(str(path), arcname=f"{base}/{relative.as_posix()}")
        pkg_info = _metadata(project).encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info)
        sdist.addfile(info, io.BytesIO(pkg_info))
    return name
