"""The `cubby` console command of the wheel: runs the cubby tool (cli/) with this process's
arguments, replacing this process (``os.execv``), so exit status, signals and output are the tool's.

The tool is, in order: ``CUBBY_CLI``; the one bundled in the wheel (``cubby/_native/bin/cubby``);
the one beside the loaded libcubby (``<lib>/../bin/cubby``, or ``<build>/cli/cubby`` in a build
tree, as libcubby's own search for prefetch in core/include/cubby/prefetch.hpp); when the package
runs from a checkout (an editable install), that of the checkout's newest build.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional

from ._errors import Error

BUNDLED = Path(__file__).resolve().parent / "_native" / "bin" / "cubby"


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _candidates() -> List[Path]:
    found = []
    explicit = os.environ.get("CUBBY_CLI", "")
    if explicit:
        found.append(Path(explicit))
    found.append(BUNDLED)
    from ._library import checkout_builds, library_path

    try:
        folder = Path(library_path()).resolve().parent
        found += [folder.parent / "bin" / "cubby", folder.parent / "cli" / "cubby"]
    except Error:
        pass  # no libcubby either: the error below says what to do
    found += [library.parent.parent / "cli" / "cubby" for library in checkout_builds()]
    return found


def cli_path() -> str:
    """The cubby tool the `cubby` command runs; raises cubby.Error (naming CUBBY_CLI) if none."""
    me = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    for candidate in _candidates():
        if _executable(candidate) and candidate.resolve() != me:  # never this wrapper itself
            return str(candidate)
    raise Error("the cubby tool was not found (not bundled in this installation, which was "
                "built with CUBBY_WHEEL_PURE=1 or is editable, and not beside libcubby); set "
                "CUBBY_CLI to a built cubby (build/<dir>/cli/cubby), or reinstall with "
                "`pip install ./pytest_plugin`, which bundles it")


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        tool = cli_path()
    except Error as error:
        print(f"cubby: {error}", file=sys.stderr)
        return 1  # the tool's "failed" (cli/cli.hpp)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(tool, [tool, *args])
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
