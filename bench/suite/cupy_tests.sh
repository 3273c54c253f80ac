#!/usr/bin/env bash
# Extracts CuPy's own test files, exactly as CuPy ships them at a tag, for the real-suite run
# (bench/suite/cupy_suite.py, ci/gpu/cupy-real.sh) on a machine where CuPy is pip-installed (a
# wheel ships no tests):
#   bench/suite/cupy_tests.sh [DEST] [REPO] [TAG]
# DEST   default .carry-cupy in the repository (git-ignored: hand it to the GPU machine as an
#        ignored path carried beside the tree); emptied first
# REPO   CuPy's git repository (default $CUBBY_CUPY_REPO, else /work/.mirror/cupy+cupy/repo)
# TAG    default v14.2.0: keep it the installed CuPy's version
# DEST gets every file of bench/suite/cupy_files.txt (both sets), tests/conftest.py, the
# __init__.py of every package folder on their way (the tests import as cupy_tests.* /
# cupyx_tests.*), and CuPy's pyproject.toml (its pytest settings: markers, strict markers and
# xfail, warnings as errors; pytest takes DEST as the rootdir), plus DEST/SOURCE naming the tag and
# its commit. `cupy.testing` comes from the installed CuPy. Exits 1 naming any file the tag lacks.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dest="${1:-$root/.carry-cupy}"
repo="${2:-${CUBBY_CUPY_REPO:-/work/.mirror/cupy+cupy/repo}}"
tag="${3:-v14.2.0}"
list="$root/bench/suite/cupy_files.txt"
commit="$(git -C "$repo" rev-parse --verify "$tag^{commit}" 2>/dev/null)" || {
  echo "cupy_tests.sh: no tag $tag in $repo: fetch CuPy's repository (with tags) or pass REPO" >&2
  exit 2
}
files=(pyproject.toml tests/conftest.py)
while read -r set path _; do
  case "$set" in ''|'#'*) continue ;; esac
  files+=("$path")
  folder="$(dirname "$path")"
  while [ "$folder" != tests ] && [ "$folder" != . ]; do  # tests/ itself is no package
    files+=("$folder/__init__.py")
    folder="$(dirname "$folder")"
  done
done <"$list"
mapfile -t files < <(printf '%s\n' "${files[@]}" | sort -u)
missing=0
for file in "${files[@]}"; do
  git -C "$repo" cat-file -e "$commit:$file" 2>/dev/null ||
    { echo "cupy_tests.sh: $tag has no $file (bench/suite/cupy_files.txt)" >&2; missing=1; }
done
[ "$missing" = 0 ] || exit 1
rm -rf "$dest"
mkdir -p "$dest"
git -C "$repo" archive "$commit" -- "${files[@]}" | tar -x -C "$dest"
printf 'CuPy %s (%s) from %s\n' "$tag" "$commit" "$repo" >"$dest/SOURCE"
echo "cupy_tests.sh: ${#files[@]} files of CuPy $tag in $dest ($(du -sh "$dest" | cut -f1))"
