"""pytester tests of the cubby pytest plugin (pytest_plugin/src/cubby/plugin.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from conftest import CLI, KERNEL, SRC, kernel_test, needs_library

pytestmark = needs_library


def summary(result) -> str:
    """The text of the cubby section of a run's terminal summary."""
    text = result.stdout.str()
    start = text.find(" cubby ")
    assert start >= 0, f"no cubby section in:\n{text}"
    return text[start:]


def counter(result, name: str) -> int:
    match = re.search(rf"\b{name}: (\d+)", summary(result))
    assert match, f"no '{name}:' in the cubby section:\n{summary(result)}"
    return int(match.group(1))


def test_a_second_session_hits_what_the_first_compiled(pytester, run, store):
    pytester.makepyfile(test_k=kernel_test(2))
    first = run(f"--cubby-dir={store}")
    first.assert_outcomes(passed=2)
    assert counter(first, "compiles") == 2
    assert counter(first, "misses") == 2
    assert "store: " + str(store) in summary(first)
    second = run(f"--cubby-dir={store}")
    second.assert_outcomes(passed=2)
    assert counter(second, "compiles") == 0
    assert "hits: 2 (memory 0, disk 2, remote 0)" in summary(second)
    assert re.search(r"compile time saved: (\d+\.\d+) s", summary(second))
    assert re.search(r"2 entries", summary(second))


def test_the_summary_adds_up_every_counter_the_library_reports(tmp_path):
    # The plugin lists no counter names: it sums every number of a stats line, so each counter of
    # libcubby's table (cubby_stats_json's keys) reaches the session's totals.
    import cubby
    from cubby import _summary

    with cubby.Cache(tmp_path / "store") as handle:
        names = sorted(name for name, value in handle.stats().items()
                       if isinstance(value, (int, float)))
    assert {"hits_disk", "failed_writes", "remote_rejected", "remote_writes_dropped",
            "compile_ms"} <= set(names)
    line = {name: index + 1 for index, name in enumerate(names)}
    line["pid"] = 4242
    total: dict = {}
    _summary.add_counters(total, line)
    _summary.add_counters(total, line)
    assert total == {name: 2 * (index + 1) for index, name in enumerate(names)}


def test_the_first_program_of_each_reason_seen_is_kept_when_lines_add_up():
    from cubby import _summary

    total: dict = {}
    _summary.add_counters(total, {"uncached_unnamed_include": 1,
                                  "uncached_first": {"unnamed_include": "first"}})
    _summary.add_counters(total, {"uncached_unnamed_include": 2, "uncached_read_only": 1,
                                  "uncached_first": {"unnamed_include": "later",
                                                     "read_only": "program r.cu"}})
    assert total == {"uncached_unnamed_include": 3, "uncached_read_only": 1,
                     "uncached_first": {"unnamed_include": "first", "read_only": "program r.cu"}}


# Two programs, one with a -Xcudafe option the key cannot cover: compiled without the store on
# every run.
UNKEYABLE = """
KERNEL = {kernel!r}
def test_unkeyable(cubby_cache):
    result = cubby_cache.compile(KERNEL, ['ns::scale<float, 1>'], ['-Xcudafe', '--no_rtti'],
                                 'sm_90', 'unkeyable.cu')
    assert result.uncached == "unkeyable_option"
    assert result.uncached_detail == "-Xcudafe --no_rtti (program unkeyable.cu)"

def test_plain(cubby_cache):
    assert not cubby_cache.compile(KERNEL, ['ns::scale<float, 2>'], [], 'sm_90').uncached
"""


def test_the_summary_names_programs_compiled_without_the_store_and_require_warm_the_reason(
        pytester, run, store):
    pytester.makepyfile(test_k=UNKEYABLE.format(kernel=KERNEL))
    first = run(f"--cubby-dir={store}")
    first.assert_outcomes(passed=2)
    assert ("1 of 2 programs compiled without the store: an option the key cannot cover, first "
            "-Xcudafe --no_rtti (program unkeyable.cu)") in summary(first)
    warm = run(f"--cubby-dir={store}", "--cubby-require-warm")
    warm.assert_outcomes(passed=1, failed=1)
    text = warm.stdout.str()
    assert re.search(r"compiled [0-9a-f]{32} without the store: an option the key cannot cover, "
                     r"-Xcudafe --no_rtti \(program unkeyable.cu\)", text), text


SHOW_ENV = """
import os
def test_env():
    with open(os.environ["ENV_OUT"], "w") as out:
        for name in ("CUBBY_DIR", "CUBBY_MAX_SIZE", "CUBBY_REMOTE", "CUBBY_DISABLE", "CUBBY_STATS_FILE",
                     "CUBBY_BASE_DIR"):
            out.write(name + "=" + os.environ.get(name, "<unset>") + "\\n")
"""


def exported(pytester, run, *args) -> dict:
    out = pytester.path / "env.txt"
    os.environ["ENV_OUT"] = str(out)  # the env fixture's monkeypatch restores os.environ
    run(*args).assert_outcomes(passed=1)
    return dict(line.split("=", 1) for line in out.read_text().splitlines())


@pytest.mark.parametrize("given", [("ini",), ("ini", "env"), ("ini", "env", "cli"), ("cli",)])
def test_precedence_is_command_line_then_environment_then_ini(pytester, run, env, tmp_path, given):
    env.setenv("ENV_OUT", "")
    pytester.makepyfile(test_env=SHOW_ENV)
    places = {name: tmp_path / name for name in ("ini", "env", "cli")}
    if "ini" in given:
        pytester.makeini(f"[pytest]\ncubby_dir = {places['ini']}\ncubby_max_size = 1G\n")
    if "env" in given:
        env.setenv("CUBBY_DIR", str(places["env"]))
        env.setenv("CUBBY_MAX_SIZE", "2G")
    args = [f"--cubby-dir={places['cli']}", "--cubby-max-size=3G"] if "cli" in given else []
    values = exported(pytester, run, *args)
    winner = given[-1]
    assert values["CUBBY_DIR"] == str(places[winner])
    assert values["CUBBY_MAX_SIZE"] == {"ini": "1G", "env": "2G", "cli": "3G"}[winner]
    assert values["CUBBY_REMOTE"] == "<unset>"
    assert values["CUBBY_STATS_FILE"] != "<unset>"


def test_a_relative_ini_dir_is_relative_to_the_ini_file(pytester, run, env):
    env.setenv("ENV_OUT", "")
    pytester.makepyfile(test_env=SHOW_ENV)
    pytester.makeini("[pytest]\ncubby_dir = rel/store\ncubby_remote = redis://example:6379/0\n"
                     "cubby_base_dir = .\n")
    values = exported(pytester, run)
    assert values["CUBBY_DIR"] == str(pytester.path / "rel" / "store")
    assert values["CUBBY_REMOTE"] == "redis://example:6379/0"
    assert values["CUBBY_BASE_DIR"] == str(pytester.path)  # the checkout: the ini file's folder


@pytest.mark.parametrize("configured_by", ["ini", "env"])
def test_a_store_under_the_rootdir_is_never_collected(pytester, run, env, configured_by):
    # A relative store folder under the rootdir: pytest must not walk it (its lock files come and
    # go while pytest lists and looks at them), so a test file inside it is not collected either.
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    if configured_by == "ini":
        pytester.makeini("[pytest]\ncubby_dir = rel/store\n")
    else:
        env.setenv("CUBBY_DIR", "rel/store")
    store = pytester.path / "rel" / "store"
    store.mkdir(parents=True)
    (store / "test_inside.py").write_text("def test_inside():\n    assert False\n")
    run().assert_outcomes(passed=1)


def test_a_store_that_holds_the_rootdir_hides_no_test(pytester, run, env):
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    run(f"--cubby-dir={pytester.path}").assert_outcomes(passed=1)


def test_settings_are_restored_after_the_session(pytester, env, store):
    env.setenv("CUBBY_MAX_SIZE", "7G")
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "cubby.plugin", f"--cubby-dir={store}",
                                          "--cubby-max-size=1M")
    result.assert_outcomes(passed=1)
    assert os.environ["CUBBY_MAX_SIZE"] == "7G"
    assert "CUBBY_DIR" not in os.environ
    assert "CUBBY_STATS_FILE" not in os.environ


def test_a_bad_boolean_is_a_usage_error(pytester, run, env):
    env.setenv("CUBBY_REQUIRE_WARM", "maybe")
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "CUBBY_REQUIRE_WARM='maybe' is not a boolean" in result.stderr.str()


def test_no_cubby_compiles_every_time_and_stores_nothing(pytester, run, store):
    pytester.makepyfile(test_k=kernel_test(1))
    for _ in range(2):
        result = run(f"--cubby-dir={store}", "--no-cubby")
        result.assert_outcomes(passed=1)
        assert counter(result, "compiles") == 1
        assert "disabled (--no-cubby)" in summary(result)
    assert "0 entries" in summary(result)


def test_clear_empties_the_store_first(pytester, run, store):
    pytester.makepyfile(test_k=kernel_test(1))
    run(f"--cubby-dir={store}").assert_outcomes(passed=1)
    result = run(f"--cubby-dir={store}", "--cubby-clear")
    result.assert_outcomes(passed=1)
    assert "cleared 1 entries before the session" in summary(result)
    assert counter(result, "compiles") == 1


def test_require_warm_fails_a_test_that_compiles_and_shows_the_key_fields(pytester, run, store):
    pytester.makepyfile(test_k=kernel_test(1))
    cold = run(f"--cubby-dir={store}", "--cubby-require-warm")
    cold.assert_outcomes(failed=1)
    text = cold.stdout.str()
    assert "--cubby-require-warm" in text
    for label in ("arch", "nvrtc_version", "source"):
        assert re.search(rf"^\s+{label}\s", text, re.M), f"no key field {label} in:\n{text}"
    warm = run(f"--cubby-dir={store}", "--cubby-require-warm")
    warm.assert_outcomes(passed=1)


ORDER_DEPENDENT = """
import os

SOURCE = 'extern "C" __global__ void k(float* p) {\\n  *p = VALUE;\\n}\\n'


def test_kernel(cubby_cache):
    # What an earlier test left in the process chooses the kernel (CuPy's accelerator settings).
    source = SOURCE.replace("VALUE", os.environ.get("KERNEL_VALUE", "1.0f"))
    assert cubby_cache.compile(source, [], [], "sm_90").cubin[:4] == b"\\x7fELF"
"""


def test_require_warm_names_the_recorded_program_a_new_one_is_nearest_to(pytester, run, env,
                                                                         store):
    """A second run that compiles a program its first run never did (CuPy's kernel set can depend
    on test order under xdist) says so, with the first line that differs, and the remedy."""
    pytester.makepyfile(test_k=ORDER_DEPENDENT)
    run(f"--cubby-dir={store}").assert_outcomes(passed=1)  # records the suite
    env.setenv("KERNEL_VALUE", "2.0f")
    warm = run(f"--cubby-dir={store}", "--cubby-require-warm")
    warm.assert_outcomes(failed=1)
    text = warm.stdout.str()
    assert "never compiled this program before" in text, text
    assert "at line 2:" in text, text
    assert "recorded:   *p = 1.0f;" in text and "now:        *p = 2.0f;" in text, text
    assert "Run the suite once more to record this program" in text, text


def test_require_warm_from_the_environment(pytester, run, env, store):
    env.setenv("CUBBY_REQUIRE_WARM", "1")
    pytester.makepyfile(test_k=kernel_test(1))
    run(f"--cubby-dir={store}").assert_outcomes(failed=1)


CHILD = """
import os, subprocess, sys
KERNEL = {kernel!r}
def test_child(cubby_cache):
    code = ("import cubby, sys; c = cubby.Cache(); "
            "r = c.compile(sys.argv[1], ['ns::scale<double, 9>'], ['-std=c++17'], 'sm_90'); "
            "print(r.tier); c.close()")
    out = subprocess.run([sys.executable, "-c", code, KERNEL], check=True, capture_output=True,
                         text=True)
    assert out.stdout.strip() in ("compiled", "disk")
"""


def test_child_process_stats_are_collected(pytester, run, store):
    pytester.makepyfile(test_child=CHILD.format(kernel=KERNEL))
    result = run(f"--cubby-dir={store}")
    result.assert_outcomes(passed=1)
    assert counter(result, "compiles") == 1  # done by the child, counted here
    assert re.search(r"processes: 2\b", summary(result))
    again = run(f"--cubby-dir={store}")
    assert "disk 1" in summary(again)


def test_require_warm_fails_a_test_whose_child_compiles(pytester, run, store):
    pytester.makepyfile(test_child=CHILD.format(kernel=KERNEL))
    result = run(f"--cubby-dir={store}", "--cubby-require-warm")
    result.assert_outcomes(failed=1)
    assert "compiled 1 kernel(s)" in result.stdout.str()


@pytest.mark.skipif(not CLI, reason="no cubby CLI: build it or set CUBBY_CLI")
def test_a_cubby_compile_started_by_a_test_hits_what_the_test_compiled(pytester, run, env, store):
    env.setenv("CUBBY_CLI", CLI)
    pytester.makepyfile(test_cli=f"""
import json, os, subprocess
KERNEL = {KERNEL!r}
def test_cli(cubby_cache, tmp_path):
    first = cubby_cache.compile(KERNEL, ['ns::scale<float, 3>'], ['-std=c++17'], 'sm_90')
    (tmp_path / 'k.cu').write_text(KERNEL)
    out = subprocess.run([os.environ['CUBBY_CLI'], 'compile', str(tmp_path / 'k.cu'),
                          '--name-expr', 'ns::scale<float, 3>', '--option=-std=c++17',
                          '--arch', 'sm_90', '--json'],
                         check=True, capture_output=True, text=True)
    answer = json.loads(out.stdout)
    assert answer['key'] == first.key
    assert answer['hit'] is True and answer['tier'] == 'disk'
""")
    result = run(f"--cubby-dir={store}")
    result.assert_outcomes(passed=1)
    assert "disk 1" in summary(result)
    assert re.search(r"processes: 2\b", summary(result))


def test_xdist_workers_are_added_up(pytester, run, store):
    pytest.importorskip("xdist")
    pytester.makepyfile(test_a=kernel_test(3), test_b=kernel_test(3, offset=3))
    result = run("-p", "xdist.plugin", "-n", "2", f"--cubby-dir={store}")
    result.assert_outcomes(passed=6)
    assert counter(result, "compiles") == 6
    assert "xdist workers: 2" in summary(result)
    warm = run("-p", "xdist.plugin", "-n", "2", f"--cubby-dir={store}", "--cubby-require-warm")
    warm.assert_outcomes(passed=6)
    assert counter(warm, "compiles") == 0
    assert "disk 6" in summary(warm)


def test_a_missing_library_is_reported_naming_the_setting(pytester, run, env, store):
    env.setenv("CUBBY_LIBRARY", str(pytester.path / "nowhere" / "libcubby.so"))
    pytester.makepyfile(test_k=kernel_test(1) + "\ndef test_unrelated():\n    pass\n")
    result = run(f"--cubby-dir={store}")
    result.assert_outcomes(passed=1, errors=1)
    text = result.stdout.str()
    assert "CUBBY_LIBRARY=" in text and "could not be loaded" in text
    assert "error: " in summary(result)


def test_a_library_that_is_not_libcubby_is_reported(pytester, run, env, store):
    env.setenv("CUBBY_LIBRARY", "libc.so.6")
    pytester.makepyfile(test_k=kernel_test(1))
    result = run(f"--cubby-dir={store}")
    result.assert_outcomes(errors=1)
    assert "is not a usable libcubby" in result.stdout.str()
    assert "CUBBY_LIBRARY" in result.stdout.str()


def test_a_broken_library_file_is_reported(pytester, run, env, store):
    broken = pytester.path / "libcubby.so"
    broken.write_bytes(b"\x7fELF not really")
    env.setenv("CUBBY_LIBRARY", str(broken))
    pytester.makepyfile(test_k=kernel_test(1))
    result = run(f"--cubby-dir={store}")
    result.assert_outcomes(errors=1)
    assert f"CUBBY_LIBRARY={broken} could not be loaded" in result.stdout.str()


def test_the_entry_point_loads_the_plugin_when_installed(pytester, env, store, tmp_path):
    """`pip install ./pytest_plugin` with no network, then pytest finds the plugin by itself (a pure
    wheel: libcubby from CUBBY_LIBRARY; test_wheel.py installs the native one)."""
    env.setenv("CUBBY_WHEEL_PURE", "1")
    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target",
         str(target), str(SRC.parent)], capture_output=True, text=True)
    if install.returncode != 0 and "No module named pip" in install.stderr:
        pytest.skip("pip is not installed for this interpreter (python3-pip)")
    assert install.returncode == 0, install.stdout + install.stderr
    assert (target / "cubby" / "py.typed").exists()
    env.setenv("PYTHONPATH", str(target))
    env.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    pytester.makepyfile(test_k=kernel_test(1))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist",
                                           f"--cubby-dir={store}")
    result.assert_outcomes(passed=1)
    assert counter(result, "compiles") == 1


def test_a_session_records_its_suite_and_the_next_one_prefetches_it(pytester, run, store):
    pytester.makepyfile(test_k=kernel_test(3))
    run(f"--cubby-dir={store}").assert_outcomes(passed=3)
    suite = f"pytest-{pytester.path.name}"
    manifests = list((store / "manifests").glob("*.manifest"))
    assert len(manifests) == 1, manifests
    # Every key changed (a toolchain upgrade): the entries are gone, the recipes are not.
    shutil.rmtree(store / "entries")
    second = run(f"--cubby-dir={store}")
    second.assert_outcomes(passed=3)
    assert f"prefetch: started for suite '{suite}'" in summary(second)
    # The session and the prefetch workers (which report to the session's stats file) compiled
    # each kernel once between them.
    assert counter(second, "compiles") == 3


HEADER_SUITE = """
import os, time
KERNEL = '#include "v.cuh"\\n' + {kernel!r}
OPTIONS = ['-std=c++17', '-I' + {include!r}]

def compile(cache, n):
    return cache.compile(KERNEL, ['ns::scale<float, %d>' % n], OPTIONS, 'sm_90')

def test_1_misses(cubby_cache):
    compile(cubby_cache, 1)

def test_2_finds_what_the_prefetch_compiled(cubby_cache):
    # Waits (bounded) for the prefetch's workers: kernels 2 and 3 of this run beside the last
    # run's three, and kernel 1 of test 1.
    deadline = time.time() + 120
    while cubby_cache.usage()[0] < 6 and time.time() < deadline:
        time.sleep(0.05)
    assert compile(cubby_cache, 2).hit
    assert compile(cubby_cache, 3).hit
"""


def test_after_a_header_edit_the_prefetch_compiles_what_the_session_has_not(pytester, run, store):
    include = pytester.path / "include"
    include.mkdir()
    (include / "v.cuh").write_text("constexpr int kV = 1;\n")
    pytester.makepyfile(test_k=HEADER_SUITE.format(kernel=KERNEL, include=str(include)))
    first = run(f"--cubby-dir={store}", "-k", "not finds")
    first.assert_outcomes(passed=1, deselected=1)
    warm_up = pytester.makepyfile(test_w="""
from test_k import compile
def test_records(cubby_cache):
    for n in (2, 3):
        compile(cubby_cache, n)
""")
    run(f"--cubby-dir={store}", str(warm_up)).assert_outcomes(passed=1)
    warm_up.unlink()
    # The header changes: every key does, the last run's entries stay (under their old keys). The
    # prefetch starts at activation (the header is newer than the last run), else at the first miss.
    (include / "v.cuh").write_text("constexpr int kV = 2;\n")
    second = run(f"--cubby-dir={store}")
    second.assert_outcomes(passed=2)
    assert counter(second, "compiles") == 3  # kernel 1 by the session, 2 and 3 by the prefetch


def test_a_fully_warm_session_does_not_mention_the_prefetch_it_started(pytester, run, store):
    # Issue 36 item 7: with every kernel in the store the prefetch has nothing to do, and a
    # "prefetch: started" line would suggest it did.
    pytester.makepyfile(test_k=kernel_test(2))
    run(f"--cubby-dir={store}").assert_outcomes(passed=2)
    warm = run(f"--cubby-dir={store}")
    warm.assert_outcomes(passed=2)
    assert counter(warm, "compiles") == 0
    assert "prefetch:" not in summary(warm), summary(warm)


def test_no_cubby_prefetch_starts_none_and_a_suite_name_names_the_manifest(pytester, run, store):
    pytester.makepyfile(test_k=kernel_test(1))
    run(f"--cubby-dir={store}", "--cubby-suite=my suite").assert_outcomes(passed=1)
    assert [p.name for p in (store / "manifests").glob("*.manifest")] == [
        p.name for p in (store / "manifests").glob("my_suite-*.manifest")]
    shutil.rmtree(store / "entries")
    quiet = run(f"--cubby-dir={store}", "--cubby-suite=my suite", "--no-cubby-prefetch")
    quiet.assert_outcomes(passed=1)
    assert "prefetch:" not in summary(quiet)
    assert counter(quiet, "compiles") == 1


def test_the_suite_and_prefetch_settings_are_exported(pytester, run, env, store):
    pytester.makepyfile(test_env=SHOW_ENV.replace(
        '"CUBBY_BASE_DIR"', '"CUBBY_BASE_DIR", "CUBBY_SUITE", "CUBBY_PREFETCH", "CUBBY_JOBS"'))
    values = exported(pytester, run, f"--cubby-dir={store}", "--no-cubby-prefetch",
                      "--cubby-jobs=3", "--cubby-suite=s1")
    assert values["CUBBY_SUITE"] == "s1"
    assert values["CUBBY_PREFETCH"] == "0"
    assert values["CUBBY_JOBS"] == "3"


# -- manners: active only when configured or used -------------------------------------------------
PLAIN = """
import os
def test_plain():
    assert "CUBBY_STATS_FILE" not in os.environ  # an inactive plugin exports nothing
"""


def cubby_lines(result) -> list:
    """The lines of a run's output that mention cubby (but for pytest's rootdir line)."""
    return [line for line in result.stdout.lines + result.stderr.lines
            if "cubby" in line and not line.startswith("rootdir:")]


def test_an_unconfigured_session_that_does_not_use_cubby_is_silent(pytester, run, env):
    # Even without a usable libcubby: the plugin never loads it, so there is no error to show.
    env.setenv("CUBBY_LIBRARY", str(pytester.path / "nowhere" / "libcubby.so"))
    pytester.makepyfile(test_plain=PLAIN)
    quiet = run()
    quiet.assert_outcomes(passed=1)
    assert cubby_lines(quiet) == []
    verbose = run("-v")
    verbose.assert_outcomes(passed=1)
    lines = [line for line in cubby_lines(verbose) if "test_plain" not in line]
    assert len(lines) == 1 and lines[0].startswith("cubby: inactive"), lines


@pytest.mark.parametrize("how", ["option", "variable", "ini"])
def test_any_setting_activates_the_plugin(pytester, run, env, store, how):
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    args = []
    if how == "option":
        args = [f"--cubby-dir={store}"]
    elif how == "variable":
        env.setenv("CUBBY_DIR", str(store))
    else:
        pytester.makeini(f"[pytest]\ncubby_dir = {store}\n")
    result = run(*args)
    result.assert_outcomes(passed=1)
    assert f"store: {store}" in summary(result)


def test_a_test_using_the_fixture_activates_an_unconfigured_session(pytester, run, env, tmp_path):
    pytester.makepyfile(test_k=kernel_test(1))
    result = run()
    result.assert_outcomes(passed=1)
    assert counter(result, "compiles") == 1
    assert f"store: {tmp_path / 'xdg' / 'cubby'} (from default)" in summary(result)


def test_an_unconfigured_xdist_session_adds_up_the_workers_the_fixture_activated(pytester, run):
    pytest.importorskip("xdist")
    pytester.makepyfile(test_k=kernel_test(2))
    result = run("-p", "xdist.plugin", "-n", "2")
    result.assert_outcomes(passed=2)
    assert counter(result, "compiles") == 2
    assert "xdist workers: 2" in summary(result)


def test_a_fixture_requested_at_run_time_activates_the_plugin(pytester, run, env):
    pytester.makepyfile(test_k=kernel_test(1).replace(
        "(cubby_cache):", "(request):\n    cubby_cache = request.getfixturevalue('cubby_cache')"))
    result = run()
    result.assert_outcomes(passed=1)
    assert counter(result, "compiles") == 1


def junit_properties(path) -> dict:
    """{test name: {property: value}} of a --junitxml report."""
    tree = ElementTree.parse(path)
    return {case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
            for case in tree.iter("testcase")}


def test_per_test_cubby_data_reaches_junitxml(pytester, run, store):
    pytester.makepyfile(test_k=kernel_test(2) + "\ndef test_unrelated():\n    pass\n")
    report = pytester.path / "junit.xml"
    run(f"--cubby-dir={store}", f"--junitxml={report}").assert_outcomes(passed=3)
    cold = junit_properties(report)
    for name in ("test_kernel_0", "test_kernel_1"):
        assert cold[name]["cubby_compiles"] == "1", cold
        assert cold[name]["cubby_misses"] == "1", cold
        assert cold[name]["cubby_hits"] == "0", cold
        assert float(cold[name]["cubby_compile_ms"]) > 0, cold
    assert cold["test_unrelated"] == {}  # it did not use cubby
    run(f"--cubby-dir={store}", f"--junitxml={report}").assert_outcomes(passed=3)
    warm = junit_properties(report)
    assert warm["test_unrelated"] == {}
    for name in ("test_kernel_0", "test_kernel_1"):
        assert warm[name]["cubby_hits"] == "1" and warm[name]["cubby_hits_disk"] == "1", warm
        assert "cubby_compiles" not in warm[name], warm


def test_per_test_cubby_data_counts_what_a_child_process_did(pytester, run, store):
    # The child's counters reach this process only through the session's stats file (the test
    # opens no handle of its own): its test gets them, the test after it gets none.
    child = CHILD.format(kernel=KERNEL).replace("(cubby_cache):", "():")
    pytester.makepyfile(test_child=child + "\ndef test_after():\n    pass\n")
    report = pytester.path / "junit.xml"
    run(f"--cubby-dir={store}", f"--junitxml={report}").assert_outcomes(passed=2)
    properties = junit_properties(report)
    assert properties["test_child"]["cubby_compiles"] == "1", properties
    assert properties["test_after"] == {}, properties
