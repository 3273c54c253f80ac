"""The cubby pytest plugin (entry point ``pytest11: cubby``).

Installed, it stays out of the way of sessions that do not use cubby: it is active only when the
session configures it (a ``--cubby-*`` option, a ``CUBBY_*`` variable or a ``cubby_*`` ini key of
``_settings.SETTINGS``) or when a collected test uses the ``cubby_cache`` fixture or CuPy (>= 14, imported
by the test modules). An inactive session loads no libcubby, exports nothing and prints nothing
(one line with ``-v``). An active one works as follows.

Every setting has a command-line option, an ini key and a ``CUBBY_*`` variable; the command line
wins over the environment, which wins over the ini file. The resolved store settings are exported
into ``os.environ`` so that processes started by tests (C++ test binaries, ``cubby`` itself) use
the same store, and every process reports its counters to a per-session stats file
(``CUBBY_STATS_FILE``), which the summary adds up across pytest-xdist workers.

The parts: _settings (options, ini keys, variables and their precedence), _summary (the counters
and the terminal summary section), _require_warm (``--cubby-require-warm``'s findings); this
module holds the plugin's life in a session: activation, the exported environment, CuPy and the
prefetch, per-test properties, xdist.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
from typing import Dict, Optional, Tuple

import pytest

from . import _cache, cupy_adapter
from ._errors import Error
from ._prefetch import Prefetch
from ._require_warm import RequireWarm
from ._settings import Settings, add_options, resolve
from ._summary import UNCACHED_FIRST, Section, StatsFile, add_counters, write_section

FIXTURE = "cubby_cache"  # the session fixture; a test that uses it activates the plugin
# How long the session's end waits for CuPy's warm-up thread (its read-ahead was told to stop):
# past it the thread is left to end with the process, and its Cache is not closed under it.
WARM_UP_JOIN_S = 30.0


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def _within(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies under it (both absolute, as given)."""
    return path == folder or path.startswith(folder + os.sep)


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
        self.stats_file: Optional[StatsFile] = None  # set by activate()
        # (counters_mark(), totals_as_read()) when the running test started, and at the last test's
        # teardown (the next test's start: nothing of cubby's runs between two tests).
        self.test_start: Tuple[tuple, Dict[str, float]] = ((), {})
        self.test_end: Optional[Tuple[tuple, Dict[str, float]]] = None
        self.require_warm = RequireWarm() if settings.values["require_warm"] else None
        self.library_error: Optional[str] = None
        self.cleared: Optional[int] = None
        self.cupy_note = ""  # why CuPy is not installed, when it is not
        self.cupy_why = ""  # cupy_status()'s "CuPy <version>" once installed
        self.cupy: Optional[cupy_adapter.Installed] = None
        self.cupy_cache: Optional[_cache.Cache] = None
        self.cupy_pending = False  # active, CuPy not imported yet: start_cupy_if_imported
        self.cupy_warm_up: Optional[threading.Thread] = None  # cupy_adapter.warm_up's
        self.cupy_warm_up_reads = False  # cupy_warm_up reads the suite ahead
        self.totals: Dict[str, float] = {}
        self.workers = 0
        self.prefetch: Optional[Prefetch] = None
        self.prefetch_note = ""
        self.prefetch_started = False
        # The warm-up thread may start the prefetch (after_read_ahead): the lock orders that with
        # the session's end, after which none starts.
        self.prefetch_lock = threading.Lock()
        self.prefetch_closed = False
        self.read_ahead_done: Optional[_cache.ReadAhead] = None  # the warm-up's, once it read
        # The configured store's folder, as given and with links resolved (pytest_ignore_collect);
        # none when the store holds the rootdir (a store there would hide every test).
        configured = settings.values["dir"]  # --cubby-dir, CUBBY_DIR or the ini's, made absolute
        self.store_folders = ({os.path.abspath(str(configured)), os.path.realpath(str(configured))}
                              if configured else set())
        root = str(config.rootpath)
        if any(_within(root, store) for store in self.store_folders):
            self.store_folders = set()

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
        self.stats_file = StatsFile(os.path.join(self.session_dir, "stats.jsonl"))
        self.start()

    def export(self) -> None:
        values = self.settings.values
        wanted = {
            "CUBBY_DIR": values["dir"],
            "CUBBY_DISABLE": "1" if values["disable"] else None,
            "CUBBY_MAX_SIZE": values["max_size"],
            "CUBBY_REMOTE": values["remote"],
            "CUBBY_BASE_DIR": values["base_dir"],
            "CUBBY_STATS_FILE": self.stats_file.path if self.stats_file else None,
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
        if self.require_warm is not None:
            _cache._compile_observers.append(self.require_warm.on_compile)
            cupy_adapter._save_observers.append(self.require_warm.on_cupy_save)
            cupy_adapter._own_observers.append(self.require_warm.on_cupy_own)
        try:
            if self.settings.values["clear"] and not self.worker:
                with _cache.Cache() as cache:
                    self.cleared = cache.clear()
        except Error as error:
            self.library_error = str(error)
        self.start_cupy()
        self.start_prefetch()

    def start_prefetch(self) -> None:
        """The controller prefetches for the session (xdist workers share its compiles), from the
        session's first miss in any of its processes (at once when a recorded header is newer
        than the last session): a warm session pays for no key checks. Where the CuPy warm-up
        reads the suite ahead, that thread decides once it has (after_read_ahead)."""
        with self.prefetch_lock:
            if not self.cupy_warm_up_reads and not self.prefetch_closed:
                self.start_prefetch_locked()

    def after_read_ahead(self, done: Optional[_cache.ReadAhead]) -> None:
        """The warm-up thread's read-ahead ended: no prefetch process when the store has the
        entry of every recipe the suite recorded (a run of those programs misses nothing, and
        the prefetch would find nothing to compile: a warm session starts no process beside it),
        else the prefetch as start_prefetch starts it (``done`` None: the read-ahead failed)."""
        with self.prefetch_lock:
            self.read_ahead_done = done
            if not self.prefetch_closed and (done is None or done.lacking != 0):
                self.start_prefetch_locked()

    def stop_prefetch(self) -> None:
        """Ends the prefetch, if any, and lets none start after this."""
        with self.prefetch_lock:
            self.prefetch_closed = True
            if self.prefetch is not None:
                self.prefetch.stop()

    def start_prefetch_locked(self) -> None:
        if self.worker or self.settings.values["disable"]:
            return
        try:
            self.prefetch = Prefetch(self.suite(), at_first_miss=True)
            self.prefetch_started = bool(self.prefetch.pid)
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
            self.start_cupy_warm_up()
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
            if self.cupy_cache is None:
                self.cupy_cache = _cache.Cache()
            self.cupy = cupy_adapter.install(self.cupy_cache)
            self.cupy_why = why
            # CuPy imported before activation (a conftest.py, as CuPy's own tests have): the
            # warm-up (its first key's work done by the install) reads the suite ahead.
            self.start_cupy_warm_up()
        except Error as error:
            self.library_error = str(error)
            self.cupy_note = "not installed: libcubby unavailable"

    def installed_cupy_note(self) -> str:
        """The summary's word on CuPy: how it is installed (its mode may have changed since the
        install: cupy_adapter.Installed.to_blob), else why not."""
        if self.cupy is None:
            return self.cupy_note
        if self.cupy.mode == "compile":
            return f"compiles through cubby ({self.cupy_why}, cupy.cuda.compiler._NVRTCProgram)"
        return (f"blob path ({self.cupy_why}: {self.cupy.note}; "
                f"namespace '{cupy_adapter.NAMESPACE}')")

    def start_cupy_if_imported(self) -> None:
        if self.cupy_pending and "cupy" in sys.modules:
            self.start_cupy()

    def stop(self) -> None:
        self.stop_prefetch()
        self.prefetch = None
        if self.require_warm is not None:
            if self.require_warm.on_compile in _cache._compile_observers:
                _cache._compile_observers.remove(self.require_warm.on_compile)
            if self.require_warm.on_cupy_save in cupy_adapter._save_observers:
                cupy_adapter._save_observers.remove(self.require_warm.on_cupy_save)
            if self.require_warm.on_cupy_own in cupy_adapter._own_observers:
                cupy_adapter._own_observers.remove(self.require_warm.on_cupy_own)
        if self.cupy is not None:
            self.cupy.uninstall()
            self.cupy = None
        if self.cupy_warm_up is not None:
            if self.cupy_cache is not None:
                self.cupy_cache.stop_read_ahead()
            self.cupy_warm_up.join(WARM_UP_JOIN_S)
            if self.cupy_warm_up.is_alive():
                sys.stderr.write(f"cubby: CuPy's warm-up did not end within "
                                 f"{WARM_UP_JOIN_S:.0f} s; it is left to end with the process\n")
                self.cupy_cache = None  # closing would wait for the call it is in
            self.cupy_warm_up = None
            self.cupy_warm_up_reads = False
        if self.cupy_cache is not None:
            self.cupy_cache.close()
        self.restore()
        if self.session_dir is not None:
            shutil.rmtree(self.session_dir, ignore_errors=True)

    # -- counters ---------------------------------------------------------------------------
    def read_stats_file(self) -> None:
        """Adds the stats file's new lines (closed handles of this process and of its children)
        to its totals; with require-warm, those of other processes that compiled are findings."""
        if self.stats_file is None:
            return
        for line in self.stats_file.read():
            if self.require_warm is not None:
                self.require_warm.saw_stats_line(line)

    def local_totals(self, exact: bool = True) -> Dict[str, float]:
        """This process's counters: its open handles, the closed ones and its children (not
        `exact`: a handle not called since it was last read counts as then, Cache.recent_stats)."""
        self.read_stats_file()
        return self.totals_as_read(exact)

    def totals_as_read(self, exact: bool) -> Dict[str, float]:
        """local_totals() with the stats file as last read (counters_mark has just read it)."""
        total: Dict[str, float] = dict(self.stats_file.totals) if self.stats_file else {}
        pids = set(self.stats_file.pids) if self.stats_file else set()
        for cache in _cache.live_caches():
            try:
                add_counters(total, cache.stats() if exact else cache.recent_stats())
            except Error:
                continue
        total["processes"] = len(pids - {os.getpid()}) + 1
        if self.cupy is not None:
            add_counters(total, self.cupy.counters())
        return total

    def counters_mark(self) -> tuple:
        """What moves whenever totals_as_read(exact=False) may have: the stats file's lines read and
        each open handle's calls (the CuPy adapter counts only beside a call of its handle). Taken
        before the totals it stands for, so a call between the two only costs a later recount."""
        self.read_stats_file()
        offset = self.stats_file.offset if self.stats_file else 0
        return offset, tuple((id(cache), cache.uses) for cache in _cache.live_caches())

    def counters_now(self) -> Tuple[tuple, Dict[str, float]]:
        """(counters_mark(), totals_as_read(exact=False)): this process's counters for per-test
        figures, the stats file read once."""
        mark = self.counters_mark()
        return mark, self.totals_as_read(exact=False)

    # -- per-test properties and require-warm -----------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        self.start_cupy_if_imported()
        if not self.active:
            self.test_start = ((), {})
        elif self.test_end is not None:  # nothing of cubby's runs between two tests
            self.test_start, self.test_end = self.test_end, None
        else:
            self.test_start = self.counters_now()

    def record_properties(self, item) -> None:
        """The test's cubby activity as record_property pairs (so --junitxml carries them, as
        the GoogleTest harness's RecordProperty does): cubby_hits and cubby_<counter> for every
        counter that moved; nothing for a test that did not use cubby (then no counter is read:
        the counters' mark has not moved)."""
        start_mark, start = self.test_start
        mark = self.counters_mark()
        if mark == start_mark:
            self.test_end = self.test_start
            return
        now = self.totals_as_read(exact=False)
        self.test_end = (mark, now)
        moved = {name: value - start.get(name, 0) for name, value in now.items()
                 if name not in ("processes", UNCACHED_FIRST)}  # UNCACHED_FIRST: details
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
        if not self.active or self.require_warm is None:
            return
        report = outcome.get_result()
        self.read_stats_file()
        failure = self.require_warm.failure(call.when)
        if failure is not None and report.outcome != "failed":
            report.outcome = "failed"
            report.longrepr = failure

    def start_cupy_warm_up(self) -> None:
        """The first key's work (cupy_adapter.warm_up) in a thread while pytest collects (about
        0.1 s on the H200 that the install would otherwise spend on the main thread), once, when
        CuPy is installed (found, not imported: a session that never imports it pays that
        thread's work only; an xdist controller, which runs no test, does not start it). Active,
        on this session's Cache (install() uses it), which it then reads the suite's recorded
        entries into (Cache.read_ahead; not in an xdist worker, which runs a share of the tests:
        it would read the other workers' too). Not active yet (a session that activates when
        collection ends because its tests import CuPy), on a Cache of the thread's own: the
        settings are exported only then, the memoized work is the process's; the activation's
        install then starts a second thread that reads ahead."""
        reads = self.active and not self.worker
        if (self.cupy_warm_up_reads or (self.cupy_warm_up is not None and not reads)
                or self.settings.values["disable"] or self.distributes()
                or not cupy_adapter.cupy_findable()):
            return
        try:
            if self.active and self.cupy_cache is None:
                self.cupy_cache = _cache.Cache()
            # A first thread, on a Cache of its own, is done or nearly: it closes its Cache.
            self.cupy_warm_up = cupy_adapter.warm_up(self.cupy_cache if self.active else None,
                                                     read_ahead=reads,
                                                     then=self.after_read_ahead)
            self.cupy_warm_up_reads = reads
        except Error:
            pass  # install() meets it again and says it

    def distributes(self) -> bool:
        """Whether this process is a pytest-xdist controller: its workers run every test."""
        return not self.worker and getattr(self.config.option, "dist", "no") not in ("no", None)

    def pytest_collectreport(self, report):
        """A collected module imported a CuPy the adapter serves before the session is active: it
        activates when collection ends (pytest_collection_finish), so the first key's work starts
        now. Any other CuPy leaves the session inactive, with no libcubby loaded."""
        if (not self.active and self.cupy_warm_up is None and "cupy" in sys.modules
                and not self.settings.values["no_cupy"] and cupy_adapter.cupy_status()[0]):
            self.start_cupy_warm_up()

    def pytest_ignore_collect(self, collection_path):
        """The store folder is never collected: a relative cubby_dir may put it under the rootdir,
        and its lock and temporary files come and go while pytest walks it (a file that vanished
        between pytest's listing and its look fails the collection)."""
        path = str(collection_path)
        return True if any(_within(path, store) for store in self.store_folders) else None

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
        self.stop_prefetch()  # what it has not compiled yet, no test of this run needs
        local = self.local_totals()
        if self.worker:
            self.config.workeroutput["cubby"] = json.dumps(local)
        else:
            add_counters(self.totals, local)

    def add_worker(self, output: Optional[str]) -> None:
        if output:
            self.workers += 1
            add_counters(self.totals, json.loads(output))

    def pytest_terminal_summary(self, terminalreporter):
        if self.worker:
            return
        if not self.active and not self.workers:
            if self.config.getoption("verbose") > 0:
                terminalreporter.write_line(
                    "cubby: inactive (no --cubby-* option, CUBBY_* variable or cubby_* ini key, "
                    f"and no test used the {FIXTURE} fixture or CuPy)")
            return
        terminalreporter.section("cubby")
        values = self.settings.values
        write_section(terminalreporter.write_line, self.totals, Section(
            store=values["dir"] or os.environ.get("CUBBY_DIR") or "(default)",
            store_origin=self.settings.origin["dir"], disabled=bool(values["disable"]),
            library_error=self.library_error, cleared=self.cleared, workers=self.workers,
            prefetch_note=self.prefetch_note, cupy_note=self.installed_cupy_note(),
            cupy_installed=self.cupy is not None, prefetch_started=self.prefetch_started))


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
