"""The cubby pytest plugin (entry point ``pytest11: cubby``).

Installed, it stays out of the way of sessions that do not use cubby: it is active only when the
session configures it (a ``--cubby-*`` option, a ``CUBBY_*`` variable or a ``cubby_*`` ini key of
``_SETTINGS``) or when a collected test uses the ``cubby_cache`` fixture or CuPy (>= 14, imported
by the test modules). An inactive session loads no libcubby, exports nothing and prints nothing
(one line with ``-v``). An active one works as follows.

Every setting has a command-line option, an ini key and a ``CUBBY_*`` variable; the command line
wins over the environment, which wins over the ini file. The resolved store settings are exported
into ``os.environ`` so that processes started by tests (C++ test binaries, ``cubby`` itself) use
the same store, and every process reports its counters to a per-session stats file
(``CUBBY_STATS_FILE``), which the summary adds up across pytest-xdist workers.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import pytest

from . import _cache, cupy_adapter
from ._errors import Error
from ._prefetch import Prefetch

# (name, flag, kind, variable, help): kind "path" | "str" | "bool".
_SETTINGS = [
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
_EXPORTED = ("CUBBY_DIR", "CUBBY_DISABLE", "CUBBY_MAX_SIZE", "CUBBY_REMOTE", "CUBBY_BASE_DIR",
             "CUBBY_STATS_FILE", "CUBBY_SUITE", "CUBBY_JOBS", "CUBBY_PREFETCH")
# Fields of a stats line (a CUBBY_STATS_FILE line, Cache.stats(), the CuPy backend's counters)
# that are not counters: every other number is summed, so the counters' names come from libcubby
# (its counter table, cubby/stats.hpp, as cubby_stats_json writes it) and are not listed here.
_NOT_COUNTERS = ("pid",)
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")
FIXTURE = "cubby_cache"  # the session fixture; a test that uses it activates the plugin


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cubby", "cubby: persistent NVRTC kernel cache")
    for name, flag, kind, variable, text in _SETTINGS:
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
    for name, flag, kind, variable, _ in _SETTINGS:
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


def _read_stats_file(path: Optional[str], offset: int = 0) -> Tuple[List[dict], int]:
    """The JSON lines of a stats file from byte `offset`, and the offset after them."""
    if not path or not os.path.exists(path):
        return [], offset
    with open(path, "rb") as file:
        file.seek(offset)
        data = file.read()
    end = data.rfind(b"\n") + 1  # a line still being written is read next time
    lines = []
    for raw in data[:end].splitlines():
        try:
            lines.append(json.loads(raw))
        except ValueError:
            continue
    return lines, offset + end


def _add(total: Dict[str, float], part: Dict[str, float]) -> None:
    for name, value in part.items():
        if name in _NOT_COUNTERS or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        total[name] = total.get(name, 0) + value


class CubbyPlugin:
    """One per pytest process (the controller and each xdist worker); does nothing until
    ``activate()``."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.worker = hasattr(config, "workerinput")
        self.active_because = ""  # "" until activate()
        self.saved_env: Dict[str, Optional[str]] = {}
        self.session_dir: Optional[str] = None
        self.stats_file: Optional[str] = None
        self.stats_offset = 0
        self.file_totals: Dict[str, float] = {}  # the stats file's lines read so far, added up
        self.file_pids: set = set()
        self.child_compiles_seen: List[dict] = []  # stats lines of other processes that compiled
        self.test_start: Dict[str, float] = {}  # local_totals() when the running test started
        self.cold: List[str] = []  # require-warm findings since the last report
        self.library_error: Optional[str] = None
        self.cleared: Optional[int] = None
        self.cupy_note = ""
        self.cupy: Optional[cupy_adapter.Installed] = None
        self.cupy_cache: Optional[_cache.Cache] = None
        self.cupy_pending = False  # active, CuPy not imported yet: start_cupy_if_imported
        self.fixture_cache: Optional[_cache.Cache] = None
        self.totals: Dict[str, float] = {}
        self.workers = 0
        self.prefetch: Optional[Prefetch] = None
        self.prefetch_note = ""

    # -- set-up and tear-down ---------------------------------------------------------------
    @property
    def active(self) -> bool:
        return bool(self.active_because)

    def activate(self, because: str) -> None:
        """Starts the plugin's work in this process (once): exports the settings, clears the store
        if asked, installs the CuPy backend, starts the prefetch."""
        if self.active:
            return
        self.active_because = because
        self.session_dir = tempfile.mkdtemp(prefix="cubby-pytest-")
        self.stats_file = os.path.join(self.session_dir, "stats.jsonl")
        self.start()

    def export(self) -> None:
        values = self.settings.values
        wanted = {
            "CUBBY_DIR": values["dir"],
            "CUBBY_DISABLE": "1" if values["disable"] else None,
            "CUBBY_MAX_SIZE": values["max_size"],
            "CUBBY_REMOTE": values["remote"],
            "CUBBY_BASE_DIR": values["base_dir"],
            "CUBBY_STATS_FILE": self.stats_file,
            "CUBBY_SUITE": self.suite(),
            "CUBBY_JOBS": values["jobs"],
            "CUBBY_PREFETCH": "0" if values["no_prefetch"] else None,
        }
        for variable, value in wanted.items():
            self.saved_env[variable] = os.environ.get(variable)
            if value is not None:
                os.environ[variable] = str(value)

    def suite(self) -> str:
        """The session's suite: --cubby-suite / CUBBY_SUITE, else pytest-<rootdir name>."""
        return str(self.settings.values["suite"] or f"pytest-{self.config.rootpath.name}")

    def restore(self) -> None:
        for variable, value in self.saved_env.items():
            if value is None:
                os.environ.pop(variable, None)
            else:
                os.environ[variable] = value

    def start(self) -> None:
        self.export()
        _cache._compile_observers.append(self.on_compile)
        cupy_adapter._save_observers.append(self.on_cupy_save)
        try:
            if self.settings.values["clear"] and not self.worker:
                with _cache.Cache() as cache:
                    self.cleared = cache.clear()
        except Error as error:
            self.library_error = str(error)
        self.start_cupy()
        self.start_prefetch()

    def start_prefetch(self) -> None:
        # The controller prefetches for the session (xdist workers share its compiles).
        if self.worker or self.settings.values["disable"]:
            return
        try:
            self.prefetch = Prefetch(self.suite())
            self.prefetch_note = (f"started for suite '{self.suite()}' (pid {self.prefetch.pid})"
                                  if self.prefetch.pid else self.prefetch.note)
        except Error as error:
            self.library_error = self.library_error or str(error)

    def start_cupy(self) -> None:
        """Installs the CuPy backend once CuPy is imported: now if it is, else at the end of
        collection or before a test (start_cupy_if_imported), so that a session that never uses
        CuPy never pays for importing it (a few hundred ms). A test that first imports CuPy in its
        own body gets the backend from the next test on."""
        if self.settings.values["no_cupy"]:
            self.cupy_note = "off (--no-cubby-cupy)"
            return
        if "cupy" not in sys.modules:
            self.cupy_pending = True
            self.cupy_note = "not installed: the tests did not import CuPy"
            return
        self.cupy_pending = False
        usable, why = cupy_adapter.cupy_status()
        if not usable:
            self.cupy_note = f"not installed: {why}"
            return
        if self.settings.values["disable"]:
            self.cupy_note = f"not installed: cubby is disabled ({why})"
            return
        try:
            self.cupy_cache = _cache.Cache()
            self.cupy = cupy_adapter.install(self.cupy_cache)
            self.cupy_note = (
                f"compiles through cubby ({why}, cupy.cuda.compiler._NVRTCProgram)"
                if self.cupy.mode == "compile" else
                f"blob path ({why}: {self.cupy.note}; namespace '{cupy_adapter.NAMESPACE}')")
        except Error as error:
            self.library_error = str(error)
            self.cupy_note = "not installed: libcubby unavailable"

    def start_cupy_if_imported(self) -> None:
        if self.cupy_pending and "cupy" in sys.modules:
            self.start_cupy()

    def stop(self) -> None:
        if self.prefetch is not None:
            self.prefetch.stop()
            self.prefetch = None
        if self.on_compile in _cache._compile_observers:
            _cache._compile_observers.remove(self.on_compile)
        if self.on_cupy_save in cupy_adapter._save_observers:
            cupy_adapter._save_observers.remove(self.on_cupy_save)
        if self.cupy is not None:
            self.cupy.uninstall()
            self.cupy = None
        if self.cupy_cache is not None:
            self.cupy_cache.close()
        self.restore()
        if self.session_dir is not None:
            shutil.rmtree(self.session_dir, ignore_errors=True)

    # -- counters ---------------------------------------------------------------------------
    def read_stats_file(self) -> None:
        """Adds the stats file's new lines (closed handles of this process and of its children)
        to file_totals; with require-warm, those of other processes that compiled wait in
        child_compiles_seen."""
        lines, self.stats_offset = _read_stats_file(self.stats_file, self.stats_offset)
        for line in lines:
            _add(self.file_totals, line)
            self.file_pids.add(line.get("pid"))
            if (self.settings.values["require_warm"] and line.get("compiles", 0)
                    and line.get("pid") != os.getpid()):
                self.child_compiles_seen.append(line)

    def local_totals(self) -> Dict[str, float]:
        """This process's counters: its open handles, the closed ones and its children."""
        self.read_stats_file()
        total: Dict[str, float] = dict(self.file_totals)
        pids = set(self.file_pids)
        for cache in _cache.live_caches():
            try:
                _add(total, cache.stats())
            except Error:
                continue
        total["processes"] = len(pids - {os.getpid()}) + 1
        if self.cupy is not None:
            _add(total, self.cupy.counters())
        return total

    # -- require-warm -----------------------------------------------------------------------
    def on_compile(self, cache, result, request) -> None:
        if result.hit or not self.settings.values["require_warm"]:
            return
        try:  # the one key-dump layout of `cubby compile --explain` (cubby_explain_text)
            dump = cache.explain_text(request.source, request.name_expressions, request.options,
                                      request.arch, request.program_name)
        except Error as error:
            dump = f"(key fields unavailable: {error})\n"
        self.cold.append(f"compiled {result.key} (store {cache.dir}); compare with that run's "
                         f"`cubby compile --explain`:\n{dump.rstrip()}")

    def on_cupy_save(self, name: str) -> None:
        if self.settings.values["require_warm"]:
            self.cold.append(f"CuPy compiled {name!r} (cubby namespace "
                             f"'{cupy_adapter.NAMESPACE}' had no entry for it)")

    def child_compiles(self) -> List[str]:
        self.read_stats_file()
        lines, self.child_compiles_seen = self.child_compiles_seen, []
        return [f"process {line.get('pid')} (started by this test) compiled "
                f"{line['compiles']} kernel(s); run it with `cubby compile --explain` "
                "or CUBBY_DIR set to see their key fields" for line in lines]

    # -- per-test properties ----------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        self.start_cupy_if_imported()
        self.test_start = self.local_totals() if self.active else {}

    def record_properties(self, item) -> None:
        """The test's cubby activity as record_property pairs (so --junitxml carries them, as
        the GoogleTest harness's RecordProperty does): cubby_hits and cubby_<counter> for every
        counter that moved; nothing for a test that did not use cubby."""
        now = self.local_totals()
        now.pop("processes", None)
        moved = {name: value - self.test_start.get(name, 0) for name, value in now.items()}
        moved = {name: value for name, value in sorted(moved.items()) if value}
        if not moved:
            return
        hits = sum(moved.get(n, 0) for n in ("hits_memory", "hits_disk", "hits_remote"))
        item.user_properties.append(("cubby_hits", int(hits)))
        for name, value in moved.items():
            shown = round(value, 1) if name.endswith("_ms") else int(value)
            item.user_properties.append((f"cubby_{name}", shown))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        if self.active and call.when == "teardown":
            self.record_properties(item)  # before the teardown report copies user_properties
        outcome = yield
        if not self.active or not self.settings.values["require_warm"]:
            return
        report = outcome.get_result()
        cold = self.cold + self.child_compiles()
        self.cold = []
        if cold and report.outcome != "failed":
            report.outcome = "failed"
            report.longrepr = (
                f"cubby: --cubby-require-warm: {len(cold)} compile(s) during {call.when}; the "
                "store was required to hold every kernel:\n" + "\n".join(cold))

    # -- activation by use, fixtures, summary, xdist ----------------------------------------
    def pytest_collection_finish(self, session):
        """Activates the plugin for a session whose tests use the fixture or CuPy."""
        if self.active:
            self.start_cupy_if_imported()
            return
        if any(FIXTURE in getattr(item, "fixturenames", ()) for item in session.items):
            self.activate(f"a test uses the {FIXTURE} fixture")
        elif "cupy" in sys.modules and cupy_adapter.cupy_status()[0]:
            self.activate("the tests use CuPy")

    @pytest.fixture(scope="session")
    def cubby_cache(self):
        """The session's cubby.Cache on the store this session uses."""
        self.activate(f"a test uses the {FIXTURE} fixture")  # requested dynamically
        if self.library_error is not None:
            pytest.fail(f"cubby: {self.library_error}", pytrace=False)
        try:
            cache = _cache.Cache()
        except Error as error:
            pytest.fail(f"cubby: {error}", pytrace=False)
        yield cache
        cache.close()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        if not self.active:
            return
        if self.prefetch is not None:  # what it has not compiled yet, no test of this run needs
            self.prefetch.stop()
        local = self.local_totals()
        if self.worker:
            self.config.workeroutput["cubby"] = json.dumps(local)
        else:
            _add(self.totals, local)

    def add_worker(self, output: Optional[str]) -> None:
        if output:
            self.workers += 1
            _add(self.totals, json.loads(output))

    def pytest_terminal_summary(self, terminalreporter):
        if self.worker:
            return
        if not self.active and not self.workers:
            if self.config.getoption("verbose") > 0:
                terminalreporter.write_line(
                    "cubby: inactive (no --cubby-* option, CUBBY_* variable or cubby_* ini key, "
                    f"and no test used the {FIXTURE} fixture or CuPy)")
            return
        t = self.totals
        write = terminalreporter.write_line
        terminalreporter.section("cubby")
        values, origin = self.settings.values, self.settings.origin
        store = values["dir"] or os.environ.get("CUBBY_DIR") or "(default)"
        usage = ""
        try:
            with _cache.Cache() as cache:
                store = cache.dir
                entries, size = cache.usage(estimate=True)  # no walk of a big store at exit
                usage = f", {entries} entries, {size / 2**20:.1f} MiB"
        except Error as error:
            self.library_error = self.library_error or str(error)
        write(f"store: {store} (from {origin['dir']}){usage}"
              + (", disabled (--no-cubby)" if values["disable"] else ""))
        if self.library_error is not None:
            write(f"error: {self.library_error}")
        if self.cleared is not None:
            write(f"cleared {self.cleared} entries before the session (--cubby-clear)")
        hits = int(t.get("hits_memory", 0) + t.get("hits_disk", 0) + t.get("hits_remote", 0))
        write(f"hits: {hits} (memory {int(t.get('hits_memory', 0))}, disk "
              f"{int(t.get('hits_disk', 0))}, remote {int(t.get('hits_remote', 0))}), misses: "
              f"{int(t.get('misses', 0))}, compiles: {int(t.get('compiles', 0))} "
              f"({t.get('compile_ms', 0) / 1000:.2f} s), compile time saved: "
              f"{t.get('compile_ms_saved', 0) / 1000:.2f} s")
        if t.get("waited_for_others", 0):
            write(f"duplicate compiles avoided: {int(t['waited_for_others'])} (lookups that waited "
                  "for another process compiling the same kernel and got its result)")
        extra = [f"corrupt {int(t[n])}" for n in ("corrupt",) if t.get(n)]
        extra += [f"failed writes {int(t[n])}" for n in ("failed_writes",) if t.get(n)]
        extra += [f"compile failures {int(t[n])}" for n in ("compile_failures",) if t.get(n)]
        if extra:
            write("problems: " + ", ".join(extra))
        remote_lookups = int(t.get("hits_remote", 0) + t.get("remote_misses", 0))
        if remote_lookups or t.get("remote_writes", 0):
            # Counts only: the URL may hold credentials, so it is never printed.
            why = [f"{n.replace('remote_', '').replace('_', ' ')} {int(t[n])}"
                   for n in ("remote_errors", "remote_timeouts", "remote_skipped",
                             "remote_rejected", "remote_writes_dropped") if t.get(n)]
            write(f"remote: {int(t.get('hits_remote', 0))}/{remote_lookups} hits, "
                  f"{t.get('remote_ms', 0) / max(remote_lookups, 1):.2f} ms per lookup, "
                  f"{int(t.get('remote_writes', 0))} writes, "
                  f"{t.get('remote_bytes_read', 0) / 2**20:.1f} MiB in, "
                  f"{t.get('remote_bytes_written', 0) / 2**20:.1f} MiB out"
                  + (" (" + ", ".join(why) + ")" if why else ""))
        write(f"processes: {int(t.get('processes', 0))} (xdist workers: {self.workers})")
        if self.prefetch_note:
            write(f"prefetch: {self.prefetch_note}")
        self.write_cupy_line(write, t)

    def write_cupy_line(self, write, t: Dict[str, float]) -> None:
        """The summary's one CuPy line: how CuPy's compiles went (through cubby, CuPy's own way by
        reason, or the blob path's loads)."""
        blob = t.get("cupy_hits", 0) or t.get("cupy_misses", 0) or t.get("cupy_saves", 0)
        own = {name[len("cupy_own:"):]: int(value) for name, value in sorted(t.items())
               if name.startswith("cupy_own:") and value}
        via = int(t.get("cupy_via_cubby", 0))
        note = self.cupy_note
        if self.cupy is None and (blob or via or own) and self.workers:
            note = "installed in the xdist workers"  # the workers imported CuPy, not this one
        if not note:
            return
        detail = ""
        if via or own:
            detail = f"; {via} program(s) through cubby"
            if own:
                detail += (f", {sum(own.values())} CuPy's own way ("
                           + ", ".join(f"{reason} {count}" for reason, count in own.items()) + ")")
        elif blob:
            detail = (f"; loads hit {int(t.get('cupy_hits', 0))}, missed "
                      f"{int(t.get('cupy_misses', 0))}, saved {int(t.get('cupy_saves', 0))}, "
                      f"{t.get('cupy_load_ms', 0):.0f} ms in lookups")
        write(f"cupy: {note}{detail}")


class _XdistHooks:
    """Controller side of pytest-xdist: adds up what each worker reports."""

    def __init__(self, plugin: CubbyPlugin) -> None:
        self.plugin = plugin

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        output = getattr(node, "workeroutput", None) or {}
        self.plugin.add_worker(output.get("cubby"))


def pytest_configure(config: pytest.Config) -> None:
    settings = resolve(config)
    plugin = CubbyPlugin(config, settings)
    config.pluginmanager.register(plugin, "cubby-session")
    if not plugin.worker:
        config.pluginmanager.register(_XdistHooks(plugin), "cubby-xdist")
    if settings.given():
        plugin.activate("configured: " + ", ".join(sorted(set(settings.given()))))


def pytest_unconfigure(config: pytest.Config) -> None:
    plugin = config.pluginmanager.get_plugin("cubby-session")
    if plugin is not None:
        plugin.stop()
        config.pluginmanager.unregister(plugin)
    hooks = config.pluginmanager.get_plugin("cubby-xdist")
    if hooks is not None:
        config.pluginmanager.unregister(hooks)
