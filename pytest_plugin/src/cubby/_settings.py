"""The plugin's settings: each has a command-line option, an ini key and a ``CUBBY_*`` variable;
the command line wins over the environment, which wins over the ini file."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List

import pytest

# (name, flag, kind, variable, help): kind "path" | "str" | "bool".
SETTINGS = [
    ("dir", "--cubby-dir", "path", "CUBBY_DIR", "the store folder"),
    ("disable", "--no-cubby", "bool", "CUBBY_DISABLE",
     "always compile; neither read nor write the store"),
    ("max_size", "--cubby-max-size", "str", "CUBBY_MAX_SIZE",
     "size bound of the store (500M, 5G, bytes)"),
    ("remote", "--cubby-remote", "str", "CUBBY_REMOTE", "remote tier URL (redis://host:port/db)"),
    ("base_dir", "--cubby-base-dir", "path", "CUBBY_BASE_DIR",
     "paths under this folder enter keys relative to it (checkouts in other folders share "
     "entries; in an ini file, '.' is the ini file's folder)"),
    ("require_warm", "--cubby-require-warm", "bool", "CUBBY_REQUIRE_WARM",
     "fail every test that compiles a kernel (the store must already hold it)"),
    ("clear", "--cubby-clear", "bool", "CUBBY_CLEAR", "empty the store before the session"),
    ("no_cupy", "--no-cubby-cupy", "bool", "CUBBY_NO_CUPY",
     "CuPy compiles its own way: cubby neither keys nor stores CuPy's kernels"),
    ("suite", "--cubby-suite", "str", "CUBBY_SUITE",
     "name under which the session records its kernels for `cubby warm` and prefetch "
     "(default: pytest-<rootdir name>)"),
    ("jobs", "--cubby-jobs", "str", "CUBBY_JOBS",
     "worker processes of the prefetch (default: one per core)"),
    ("no_prefetch", "--no-cubby-prefetch", "bool", "CUBBY_NO_PREFETCH",
     "do not compile the kernels an earlier session recorded in worker processes at the start"),
]
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def add_options(parser: pytest.Parser) -> None:
    """Registers every setting's option and ini key (the plugin's pytest_addoption)."""
    group = parser.getgroup("cubby", "cubby: persistent NVRTC kernel cache")
    for name, flag, kind, variable, text in SETTINGS:
        help_text = f"{text} (ini: cubby_{name}, env: {variable})"
        if kind == "bool":
            group.addoption(flag, action="store_true", default=None, dest=f"cubby_{name}",
                            help=help_text)
        else:
            group.addoption(flag, action="store", default=None, dest=f"cubby_{name}",
                            metavar="VALUE", help=help_text)
        parser.addini(f"cubby_{name}", help_text, default=None)


def _parse_bool(value: str, where: str) -> bool:
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise pytest.UsageError(f"cubby: {where}={value!r} is not a boolean; use 1/0, true/false, "
                            "yes/no or on/off")


@dataclass
class Settings:
    values: Dict[str, object] = field(default_factory=dict)
    origin: Dict[str, str] = field(default_factory=dict)  # name -> "--cubby-dir", "CUBBY_DIR", ...

    def given(self) -> List[str]:
        """Where the session configured cubby: the origins of the settings it gave."""
        return [origin for origin in self.origin.values() if origin != "default"]


def resolve(config: pytest.Config) -> Settings:
    """Each setting from the command line, else the environment, else the ini file."""
    settings = Settings()
    ini_dir = str(config.inipath.parent) if config.inipath else str(config.rootpath)
    for name, flag, kind, variable, _ in SETTINGS:
        cli = config.getoption(f"cubby_{name}")
        env = os.environ.get(variable, "")
        ini = config.getini(f"cubby_{name}") or ""
        if cli is not None:
            value, origin = cli, flag
        elif env != "":
            value, origin = env, variable
        elif ini != "":
            value, origin = ini, f"ini cubby_{name}"
        else:
            value, origin = None, "default"
        if kind == "bool":
            value = False if value is None else (value if isinstance(value, bool)
                                                 else _parse_bool(str(value), origin))
        elif kind == "path" and value is not None:
            base = ini_dir if origin.startswith("ini") else os.getcwd()
            value = os.path.abspath(os.path.join(base, os.path.expanduser(str(value))))
        settings.values[name] = value
        settings.origin[name] = origin
    return settings
