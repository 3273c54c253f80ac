"""``--cubby-require-warm``: a test that compiles a kernel fails, with the key fields of what it
compiled (through this process's Cache handles, CuPy's own way, or a process the test started)."""

from __future__ import annotations

import os
from typing import List, Optional

from . import _cache, cupy_adapter
from ._errors import Error


def _summary_reasons(line: dict) -> str:
    """The "N of M programs compiled without the store: <reason>, first ..." lines of a stats
    line (libcubby's wording), joined by "; "; "" when it compiled none without the store."""
    try:
        lines = _cache.summary_lines(line)
    except Error:
        return ""
    return "; ".join(text for text in lines if "compiled without the store" in text)


def never_recorded(nearest: dict) -> str:
    """What require-warm says of a program no earlier run of the suite compiled (``nearest``:
    Cache.nearest_recorded's answer, not the same request)."""
    if nearest.get("same_source"):
        where = (f"its source was recorded (program {nearest['program']}), with other options or "
                 "name expressions")
    else:
        where = (f"its source first differs from the nearest recorded one (program "
                 f"{nearest['program']}) at line {nearest['line']}:\n"
                 f"  recorded: {nearest['recorded']}\n  now:      {nearest['now']}")
    return (f"suite '{nearest['suite']}' never compiled this program before; {where}\n"
            "A test's kernels can depend on what ran before it in the same process (CuPy: "
            "accelerator and dtype settings left by another test), and under pytest-xdist the "
            "tests a worker runs differ from run to run. Run the suite once more to record this "
            "program too (or run it without -n, in a fixed order), then require warm again.")


class RequireWarm:
    """The compiles seen since the last report; the plugin registers on_compile and on_cupy_save
    as observers and hands it the stats-file lines of other processes (saw_stats_line)."""

    def __init__(self) -> None:
        self.cold: List[str] = []  # compiles of this process since the last report
        self.children: List[str] = []  # compiles of processes the test started, likewise

    def on_compile(self, cache, result, request) -> None:
        if result.hit:
            return
        if result.uncached:  # no run can make it warm: the reason, not the key, is the finding
            label = _cache.uncached_reasons().get(result.uncached, result.uncached)
            self.cold.append(f"compiled {result.key} without the store: {label}, "
                             f"{result.uncached_detail} (counted in uncached_{result.uncached})")
            return
        try:
            nearest = cache.nearest_recorded(request.source, request.name_expressions,
                                             request.options, request.arch, request.program_name)
        except Error:
            nearest = {}
        if nearest and not nearest.get("same_request"):
            self.cold.append(f"compiled {result.key} (store {cache.dir}): "
                             f"{never_recorded(nearest)}")
            return
        try:  # the one key-dump layout of `cubby compile --explain` (cubby_explain_text)
            dump = cache.explain_text(request.source, request.name_expressions, request.options,
                                      request.arch, request.program_name)
        except Error as error:
            dump = f"(key fields unavailable: {error})\n"
        recorded = (f"suite '{nearest['suite']}' recorded this very program "
                    f"({nearest['program']}) under another key, so a key field changed; "
                    if nearest else "")
        self.cold.append(f"compiled {result.key} (store {cache.dir}); {recorded}compare with that "
                         f"run's `cubby compile --explain`:\n{dump.rstrip()}")

    def on_cupy_own(self, reason: str, name: str) -> None:
        label = _cache.uncached_reasons().get("compiled_elsewhere", "compiled_elsewhere")
        self.cold.append(f"CuPy compiled {name!r} without the store: {label} ({reason}; counted "
                         "in uncached_compiled_elsewhere)")

    def on_cupy_save(self, name: str) -> None:
        self.cold.append(f"CuPy compiled {name!r} (cubby namespace "
                         f"'{cupy_adapter.NAMESPACE}' had no entry for it)")

    def saw_stats_line(self, line: dict) -> None:
        """A CUBBY_STATS_FILE line: another process (started by the test) that compiled counts."""
        if line.get("compiles", 0) and line.get("pid") != os.getpid():
            why = _summary_reasons(line)
            self.children.append(f"process {line.get('pid')} (started by this test) compiled "
                             f"{line['compiles']} kernel(s)"
                             + (f" ({why})" if why else "")
                             + "; run it with `cubby compile --explain` "
                             "or CUBBY_DIR set to see their key fields")

    def failure(self, when: str) -> Optional[str]:
        """What fails the test's `when` phase (None: nothing compiled); forgets the findings."""
        cold = self.cold + self.children
        self.cold, self.children = [], []
        if not cold:
            return None
        return (f"cubby: --cubby-require-warm: {len(cold)} compile(s) during {when}; the store was "
                "required to hold every kernel:\n" + "\n".join(cold))
