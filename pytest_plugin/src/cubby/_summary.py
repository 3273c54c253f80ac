"""The plugin's counters and its ``cubby`` section of the terminal summary.

Every process of a session reports its counters to a per-session stats file
(``CUBBY_STATS_FILE``); StatsFile reads its new lines, add_counters sums stats lines by name (the
names come from libcubby's counter table, cubby/stats.hpp, as cubby_stats_json writes them: none
is listed here), and write_section prints the section: the store, libcubby's own summary lines
(cubby_stats_summary: the wording of the GoogleTest harness and `cubby stats`), then what only
a pytest session has (processes, xdist workers, prefetch, CuPy)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from . import _cache
from ._errors import Error

# Fields of a stats line (a CUBBY_STATS_FILE line, Cache.stats(), the CuPy backend's counters)
# that are not counters: every other number is summed.
_NOT_COUNTERS = ("pid",)
# The member of a stats line that holds, per reason a program was compiled without the store, the
# first such program of its process ({reason: detail}; cubby_stats_json): the first seen is kept.
UNCACHED_FIRST = "uncached_first"


def add_counters(total: Dict[str, Any], part: Dict[str, Any]) -> None:
    """``total += part``, number by number (``pid`` and anything not a number left out); of
    ``uncached_first``, the first detail of each reason is kept."""
    for name, value in part.items():
        if name == UNCACHED_FIRST and isinstance(value, dict):
            first = dict(total.get(UNCACHED_FIRST, {}))  # a copy: `total` may share it
            for reason, detail in value.items():
                first.setdefault(reason, detail)
            total[UNCACHED_FIRST] = first
            continue
        if name in _NOT_COUNTERS or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        total[name] = total.get(name, 0) + value


@dataclass
class StatsFile:
    """The session's CUBBY_STATS_FILE as this process has read it so far."""
    path: str
    offset: int = 0
    totals: Dict[str, float] = field(default_factory=dict)  # its lines read so far, added up
    pids: set = field(default_factory=set)  # the processes those lines came from

    def read(self) -> List[dict]:
        """The lines written since the last read (added to totals); a line still being written
        is read next time."""
        try:
            if os.stat(self.path).st_size <= self.offset:  # nothing new: one stat per test phase
                return []
        except OSError:
            return []
        with open(self.path, "rb") as file:
            file.seek(self.offset)
            data = file.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        lines = []
        for raw in data[:end].splitlines():
            try:
                lines.append(json.loads(raw))
            except ValueError:
                continue
        for line in lines:
            add_counters(self.totals, line)
            self.pids.add(line.get("pid"))
        return lines


@dataclass
class Section:
    """What the section reports besides the counters."""
    store: str  # the store folder as configured ("(default)" when nothing says)
    store_origin: str  # where that came from ("--cubby-dir", "CUBBY_DIR", "default", ...)
    disabled: bool
    library_error: Optional[str]
    cleared: Optional[int]  # entries --cubby-clear removed
    workers: int  # xdist workers that reported
    prefetch_note: str
    cupy_note: str
    cupy_installed: bool  # the CuPy backend is installed in this process
    prefetch_started: bool = False  # a prefetch process was started (prefetch_note says so)


def write_section(write: Callable[[str], None], totals: Dict[str, float], section: Section) -> None:
    """The ``cubby`` section's lines, through ``write``, for the session's ``totals``."""
    store, usage, error, lines = section.store, "", section.library_error, []
    try:
        with _cache.Cache() as cache:
            store = cache.dir
            entries, size = cache.usage(estimate=True)  # no walk of a big store at exit
            usage = f", {entries} entries, {size / 2**20:.1f} MiB"
    except Error as failure:
        error = error or str(failure)
    try:
        lines = _cache.summary_lines(totals)
    except Error as failure:
        error = error or str(failure)
    write(f"store: {store} (from {section.store_origin}){usage}"
          + (", disabled (--no-cubby)" if section.disabled else ""))
    if error is not None:
        write(f"error: {error}")
    if section.cleared is not None:
        write(f"cleared {section.cleared} entries before the session (--cubby-clear)")
    for line in lines:
        write(line)
    write(f"processes: {int(totals.get('processes', 0))} (xdist workers: {section.workers})")
    if section.prefetch_note and not (section.prefetch_started and _fully_warm(totals)):
        write(f"prefetch: {section.prefetch_note}")
    _write_cupy_line(write, totals, section)


def _fully_warm(totals: Dict[str, Any]) -> bool:
    """No lookup of the session missed and nothing was compiled, by its processes or by the
    prefetch's workers (which report to the session's stats file too): a prefetch started for it
    had nothing to do, so the section does not mention it."""
    return not any(totals.get(name, 0) for name in ("misses", "compiles", "compile_failures"))


def _write_cupy_line(write: Callable[[str], None], t: Dict[str, Any], section: Section) -> None:
    """The section's one CuPy line: how CuPy's programs went (served by the store, compiled into
    it, compiled without it: by cubby without a key, or CuPy's own way by reason), or the blob
    path's loads."""
    blob = t.get("cupy_hits", 0) or t.get("cupy_misses", 0) or t.get("cupy_saves", 0)
    own = {name[len("cupy_own:"):]: int(value) for name, value in sorted(t.items())
           if name.startswith("cupy_own:") and value}
    served, compiled = int(t.get("cupy_served", 0)), int(t.get("cupy_compiled", 0))
    without = int(t.get("cupy_uncached", 0)) + sum(own.values())
    programs = served + compiled + without
    note = section.cupy_note
    if not section.cupy_installed and (blob or programs) and section.workers:
        note = "installed in the xdist workers"  # the workers imported CuPy, not this one
    if not note:
        return
    detail = ""
    if programs:
        detail = (f"; {programs} program(s): {served} served by the store, {compiled} compiled "
                  f"into it, {without} compiled without it")
        if own:
            detail += (" (CuPy's own way: "
                       + ", ".join(f"{reason} {count}" for reason, count in own.items()) + ")")
    elif blob:
        detail = (f"; loads hit {int(t.get('cupy_hits', 0))}, missed "
                  f"{int(t.get('cupy_misses', 0))}, saved {int(t.get('cupy_saves', 0))}, "
                  f"{t.get('cupy_load_ms', 0):.0f} ms in lookups")
    write(f"cupy: {note}{detail}")
