#!/usr/bin/env bash
# Static checks of cubby's own C++ (not build output, not third-party code):
#  - ci/check_layers.py: every include of core/src and of the public headers (core/include/cubby)
#    points down the folder order ARCHITECTURE.md lists (needs no build);
#  - ci/file-lengths.py: no C++ file over its length limit (600 lines, 1000 for tests; needs no
#    build);
#  - clang-tidy with the repository's .clang-tidy (every finding an error) over the first-party
#    translation units of a build's compile_commands.json (core/, cli/, harness/, bench/, tests/;
#    fuzz/ too, whose flags clang-tidy infers from its neighbours: the main build has no fuzz
#    targets);
#  - clang-format --dry-run --Werror (.clang-format) over every first-party .cpp/.hpp/.h.
# Quiet when clean; each finding says how to fix it. Installs clang-tidy and clang-format.
#   ci/lint.sh [BUILD_DIR]        # all four (BUILD_DIR: $CUBBY_BUILD_DIR, else build/ci; configured)
#   ci/lint.sh --fix-format       # rewrite the files clang-format would change (clang-format -i)
#   ci/lint.sh --format-only      # only the clang-format check (needs no build)
#   ci/lint.sh --layers-only      # only the layer order check (needs no build, no packages)
#   ci/lint.sh --lengths-only     # only the file length check (needs no build, no packages)
#   ci/lint.sh --tidy-only [BUILD_DIR]
#   CUBBY_LINT_JOBS=N             # parallel processes (default: nproc)
#   CUBBY_LINT_FILES='cli/ tests/cli/'  # only the files under these paths (while iterating)
#   CUBBY_LINT_CACHE=DIR          # clang-tidy results kept here (default ~/.cache/cubby-lint):
#                                 # a unit found clean is skipped until it or a header changes;
#                                 # CUBBY_LINT_CACHE= checks every unit
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mode=all
build_dir="${CUBBY_BUILD_DIR:-$CUBBY_ROOT/build/ci}"
for arg in "$@"; do
  case "$arg" in
    --fix-format) mode=fix-format ;;
    --format-only) mode=format ;;
    --tidy-only) mode=tidy ;;
    --layers-only) mode=layers ;;
    --lengths-only) mode=lengths ;;
    -h | --help) sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $arg (see ci/lint.sh --help)" ;;
    *) build_dir="$arg" ;;
  esac
done
[ ! -d "$build_dir" ] || build_dir="$(cd "$build_dir" && pwd)"
jobs="${CUBBY_LINT_JOBS:-$(nproc 2>/dev/null || echo 2)}"
cache="${CUBBY_LINT_CACHE-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/cubby-lint}"

# The checks a python script of ci/ makes (python3's standard library: no build, no packages):
# `script_check MODE [--alone]` runs the check that --MODE-only runs alone. The script's findings
# are on stderr (its stdout, a summary, is not shown); when it fails, the fix follows them and the
# status is 1, or with --alone lint.sh exits 1 naming the check that failed.
script_check() {
  local name fix
  local -a run
  case "$1" in
    # The layer order: one line per include against it (file:line, the two folders), from the
    # list in ARCHITECTURE.md.
    layers)
      name="layer order" run=(check_layers.py "$CUBBY_ROOT")
      fix=("an include runs against the folder order of ARCHITECTURE.md (above);"
        "  move the code it needs down, or the including code up (ci/lint.sh --layers-only reruns it)") ;;
    # The file length limits: one line per C++ file over its limit (ci/file-lengths.py's docstring).
    lengths)
      name="file length" run=(file-lengths.py)
      fix=("a C++ file is over its length limit (above); split it by concept"
        "  (ci/lint.sh --lengths-only reruns the check, ci/file-lengths.py prints the sizes)") ;;
    *) die "script_check: no check $1" ;;
  esac
  /usr/bin/python3 "$CUBBY_ROOT/ci/${run[0]}" "${run[@]:1}" >/dev/null && return 0
  printf '%s\n' "[cubby lint] ${fix[0]}" "${fix[@]:1}" >&2
  [ "${2:-}" != --alone ] || die "$name check failed (above)"
  return 1
}
case "$mode" in
  layers | lengths)
    script_check "$mode" --alone
    exit 0
    ;;
esac

apt_install "${CUBBY_LINT_APT_PACKAGES[@]}"
# The findings and the formatting are those of Debian 12's LLVM 14; another version may differ.
for tool in clang-tidy clang-format; do
  version="$("$tool" --version | grep -o 'version [0-9]*' | awk 'NR == 1')"
  [ "$version" = "version 14" ] || log "note: $tool $version; CI uses version 14 (results may differ)"
done

# First-party sources, relative to the root: git's files (tracked and new, not ignored), else
# every file outside build/ and other tools' folders. Third-party code would be left out here.
first_party_sources() {
  if git -C "$CUBBY_ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$CUBBY_ROOT" ls-files --cached --others --exclude-standard -- '*.cpp' '*.hpp' '*.h'
  else
    (cd "$CUBBY_ROOT" && find . \( -path ./build -o -path ./.git -o -name node_modules \) -prune \
      -o -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) -print | sed 's#^\./##')
  fi | grep -Ev '^(build|third_party)/' | sort -u | while IFS= read -r file; do
    [ -f "$CUBBY_ROOT/$file" ] || continue  # deleted, not yet committed
    if [ -n "${CUBBY_LINT_FILES:-}" ]; then
      local prefix keep=0
      for prefix in $CUBBY_LINT_FILES; do [[ "$file" == "$prefix"* ]] && keep=1; done
      [ "$keep" = 1 ] || continue
    fi
    printf '%s\n' "$file"
  done
}

format_check() {
  local failed
  failed="$(cd "$CUBBY_ROOT" && first_party_sources | xargs -r -d '\n' -n 8 -P "$jobs" sh -c \
    'for f; do clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || printf "%s\n" "$f"; done' sh \
    | sort)"
  [ -z "$failed" ] && return 0
  local file
  printf '\n[cubby lint] these files are not formatted as .clang-format says (first lines of the change):\n' >&2
  while IFS= read -r file; do
    printf '\n%s\n' "$file" >&2
    (cd "$CUBBY_ROOT" && clang-format "$file" | diff -u "$file" - | sed -n '3,14p') >&2 || true
  done <<<"$failed"
  printf '\n[cubby lint] fix: ci/lint.sh --fix-format (runs clang-format -i on them), then review the diff\n' >&2
  return 1
}

fix_format() {
  local changed=0 file before
  while IFS= read -r file; do
    before="$(cksum <"$CUBBY_ROOT/$file")"
    clang-format -i "$CUBBY_ROOT/$file"
    [ "$(cksum <"$CUBBY_ROOT/$file")" = "$before" ] || { log "formatted $file"; changed=$((changed + 1)); }
  done < <(first_party_sources)
  log "$changed file(s) reformatted"
}

# The translation units to check: those of compile_commands.json under the first-party folders,
# and fuzz/*.cpp (not in the main build's database: clang-tidy infers their flags from a neighbour).
tidy_units() {
  local db="$build_dir/compile_commands.json"
  {
    sed -n 's/^ *"file": "\(.*\)",\{0,1\}$/\1/p' "$db" | sed "s#^$CUBBY_ROOT/##"
    first_party_sources | grep '^fuzz/.*\.cpp$' || true
  } | grep -E '^(core|cli|harness|bench|tests|fuzz)/.*\.cpp$' | sort -u \
    | grep -Fxf <(first_party_sources)
}

tidy_check() {
  [ -f "$build_dir/compile_commands.json" ] \
    || die "no $build_dir/compile_commands.json: configure a build first (cmake -S . -B $build_dir; ci/test.sh does) or pass its folder"
  local out
  out="$(mktemp -d /tmp/cubby-lint.XXXXXX)"
  # Units found clean before, with nothing they read changed since, are not checked again
  # (ci/lint_cache.py; CUBBY_LINT_CACHE= turns the cache off).
  (cd "$CUBBY_ROOT" && tidy_units) >"$out/units"
  if [ -n "$cache" ]; then
    /usr/bin/python3 "$CUBBY_ROOT/ci/lint_cache.py" split "$build_dir" "$cache" "$CUBBY_ROOT" \
      <"$out/units" >"$out/plan"
    awk '$1 == "check" { print $2 }' "$out/plan" >"$out/units"
    log "clang-tidy: $(wc -l <"$out/units") translation units to check, $(grep -c '^clean' "$out/plan") unchanged since found clean ($cache)"
  fi
  # One log per unit, and the units clang-tidy failed on (findings are errors) in $out/failed.
  (cd "$CUBBY_ROOT" && xargs -r -d '\n' -n 1 -P "$jobs" sh -c '
    clang-tidy -p "$1" --quiet "$3" >"$2/$(printf "%s" "$3" | tr / _).log" 2>&1 || echo "$3" >>"$2/failed"
  ' sh "$build_dir" "$out" <"$out/units")
  if [ -n "$cache" ]; then
    touch "$out/failed"
    # shellcheck disable=SC2046  # keys are hex digits
    /usr/bin/python3 "$CUBBY_ROOT/ci/lint_cache.py" store "$cache" \
      $(awk 'FILENAME == ARGV[1] { failed[$0] = 1; next }
             $1 == "check" && !($2 in failed) { print $3 }' \
        "$out/failed" "$out/plan")
  fi
  local status=0
  if [ -s "$out/failed" ]; then
    # A diagnostic in a header is reported once per unit that includes it: print each once.
    cat "$out"/*.log | awk '
      /^[0-9]+ warnings? (and [0-9]+ errors? )?generated/ { keep = 0; next }
      /^Suppressed [0-9]+ warnings/ || /^Use -header-filter/ || /treated as errors?\.?$/ { keep = 0; next }
      /^Error while processing/ { keep = 0; next }  # the list of failed units follows
      /^[^ ].*:[0-9]+:[0-9]+: (warning|error): / { keep = !seen[$0]++ }
      keep' >&2
    printf '\n[cubby lint] clang-tidy failed on: %s\n' "$(sort "$out/failed" | tr '\n' ' ')" >&2
    printf '%s\n' "[cubby lint] fix each finding above; its check is named in brackets, and" \
      "  https://releases.llvm.org/14.0.0/tools/clang/tools/extra/docs/clang-tidy/checks/CHECK.html" \
      "  says what it wants. A false positive: // NOLINT(CHECK) on its line, with the reason." \
      "  A function over 80 lines: split it into named steps, or state why it stays long in a" \
      "  comment and add // NOLINT(readability-function-size) on its first line." \
      "  Rerun only these checks: ci/lint.sh --tidy-only $build_dir" >&2
    status=1
  fi
  rm -rf "$out"
  return "$status"
}

case "$mode" in
  fix-format) fix_format ;;
  format) format_check || die "clang-format check failed (above)" ;;
  tidy) tidy_check || die "clang-tidy check failed (above)" ;;
  all)
    status=0
    script_check layers || status=1
    script_check lengths || status=1
    format_check || status=1
    tidy_check || status=1
    [ "$status" = 0 ] || die "lint failed (above)"
    ;;
esac
