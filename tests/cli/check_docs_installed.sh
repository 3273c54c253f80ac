#!/usr/bin/env bash
# Installs the built tree into a temporary prefix and checks that `cmake --install` puts the
# generated man page and bash completion of `cubby` where man(1) and bash-completion look, that
# the page renders, and that the completion completes a command.
#   tests/cli/check_docs_installed.sh BUILD_DIR
set -euo pipefail
build_dir="$1"
work="$(mktemp -d /tmp/cubby-docs.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
page="$work/prefix/share/man/man1/cubby.1"
completion="$work/prefix/share/bash-completion/completions/cubby"
[ -s "$page" ] || { echo "no man page at $page"; exit 1; }
[ -s "$completion" ] || { echo "no bash completion at $completion"; exit 1; }
grep -q '^\.SS "cubby config' "$page" || { echo "the man page lacks cubby config"; exit 1; }
if command -v man >/dev/null; then
  man -l "$page" 2>/dev/null | grep -q 'older.than' || { echo "the man page does not render"; exit 1; }
fi
words="$(bash -c "source '$completion'; COMP_WORDS=(cubby con); COMP_CWORD=1; _cubby; echo \"\${COMPREPLY[*]}\"")"
[ "$words" = "config" ] || { echo "completion of 'cubby con' gave '$words'"; exit 1; }
"$work/prefix/bin/cubby" --version >/dev/null || { echo "the installed cubby does not run"; exit 1; }
echo "installed: $page, $completion"
