#!/usr/bin/env bash
# Installed executables run from any prefix: a copy of the installed PREFIX moved elsewhere, in an
# empty environment (no LD_LIBRARY_PATH, no PATH entry for it). Each executable in bin/ has the
# run path $ORIGIN/../LIBDIR and nothing absolute (the layout a wheel copies), every library it
# needs is found (inside the moved prefix when it is one of the prefix's), and `cubby` runs:
# --help, and stats on a store.
#   tests/install/relocate.sh PREFIX LIBDIR
source "$(dirname "$0")/lib.sh"
prefix="$1"
libdir="$2"
command -v readelf >/dev/null || fail "readelf (binutils) is needed"
mkdir -p "$work/elsewhere"
cp -a "$prefix" "$work/elsewhere/prefix"
moved="$work/elsewhere/prefix"
[ -x "$moved/bin/cubby" ] || fail "$prefix/bin/cubby is not installed (configure with CUBBY_BUILD_CLI=ON)"

for exe in "$moved"/bin/*; do
  if [ ! -f "$exe" ] || [ ! -x "$exe" ]; then continue; fi
  name="$(basename "$exe")"
  step readelf -d "$exe"
  runpath="$(sed -nE 's/.*\((RUNPATH|RPATH)\).*\[(.*)\]$/\2/p' "$work/log")"
  [ "$runpath" = "\$ORIGIN/../$libdir" ] || fail "bin/$name: run path '$runpath', expected '\$ORIGIN/../$libdir'"
  step env -i ldd "$exe"
  if grep -q 'not found' "$work/log"; then fail "bin/$name: a library is not found"; fi
  if grep -qF " => $prefix/" "$work/log"; then fail "bin/$name: loads a library from the original prefix"; fi
done

step env -i HOME="$work" "$moved/bin/cubby" --help
grep -qi 'usage' "$work/log" || fail "cubby --help printed no usage"
step env -i HOME="$work" "$moved/bin/cubby" stats --dir "$work/store"
echo "installed executables run from a moved prefix OK"
