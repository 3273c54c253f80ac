#!/usr/bin/env bash
# Collects the servers ci/fleet-suite.sh (ci/lib.sh: start_redis_fleet, start_nginx) starts, for a
# GPU machine that has none of them and no network, into one folder to carry there:
#   ci/gpu/carry_servers.sh [--dav-ext] DEST        e.g. DEST = .carry/servers (ignored by git)
# DEST/libexec: this machine's (Debian 12's) redis-server, redis-cli, nginx and openssl;
# DEST/bin: a wrapper per tool that runs it with DEST/lib as its library path and DEST/etc's
#   openssl.cnf (nothing else sees them); DEST/lib: every library they load except glibc's own
#   (libc, libm, libpthread, libdl, librt, ld-linux...: the GPU machine's newer glibc runs them);
# DEST/env.sh: source it (bash) there: puts DEST/bin first on PATH (redis-cli, openssl) and sets
#   CUBBY_TEST_REDIS_SERVER, CUBBY_TEST_NGINX and CUBBY_TEST_NGINX_MODULES (DEST/modules).
# DEST/modules is empty unless --dav-ext: ci/lib.sh's nginx config uses only nginx's built-in
# WebDAV PUT/DELETE, and the dav ext module (PROPFIND, OPTIONS) brings libxml2 and ICU (+35 MB).
# Each tool is run once through its wrapper here (-v/--version) to check the bundle.
set -euo pipefail
usage="usage: ci/gpu/carry_servers.sh [--dav-ext] DEST"
dav_ext=0
[ "${1:-}" = --dav-ext ] && { dav_ext=1; shift; }
dest="${1:?$usage}"
die() { echo "ci/gpu/carry_servers.sh: $*" >&2; exit 1; }

# tool NAME: the executable NAME is on this machine (PATH, /usr/sbin), or stops with what to install.
tool() {
  PATH="$PATH:/usr/sbin:/sbin" command -v "$1" ||
    die "no $1 here: apt-get install redis-server redis-tools nginx libnginx-mod-http-dav-ext openssl"
}
# glibc's own libraries, which the GPU machine has and its processes must share.
is_glibc() {
  case "$1" in
    libc.so.* | libm.so.* | libmvec.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux*) return 0 ;;
    libresolv.so.* | libutil.so.* | libanl.so.* | libnsl.so.* | libnss_*) return 0 ;;
  esac
  return 1
}
# carry_libraries FILE: copies the libraries FILE loads (ldd lists them all, transitively), but
# glibc's, into DEST/lib under the names the loader asks for.
carry_libraries() {
  local name path
  ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | while read -r name path; do
    is_glibc "$name" || [ -f "$dest/lib/$name" ] || cp -L "$path" "$dest/lib/$name"
  done
}

# A bundle made before is made anew; any other folder with files in it is left alone.
if [ -n "$(ls -A "$dest" 2>/dev/null)" ]; then
  if [ ! -f "$dest/env.sh" ] || [ ! -d "$dest/libexec" ]; then
    die "$dest has files and is no bundle: name a new folder"
  fi
  for part in bin libexec lib modules etc env.sh; do rm -rf "${dest:?}/$part"; done
fi
mkdir -p "$dest/bin" "$dest/libexec" "$dest/lib" "$dest/modules" "$dest/etc"
dest="$(cd "$dest" && pwd)"
# Debian's redis-server is a link to redis-check-rdb, which picks its mode from argv[0]: the copy
# is named redis-server.
for name in redis-server redis-cli nginx openssl; do
  exe="$(tool "$name")"
  cp -L "$exe" "$dest/libexec/$name"
  carry_libraries "$exe"
  cat >"$dest/bin/$name" <<WRAPPER
#!/bin/sh
# Debian 12's $name, carried by ci/gpu/carry_servers.sh, with the bundle's libraries and openssl.cnf.
bundle="\$(cd "\$(dirname "\$0")/.." && pwd)"
LD_LIBRARY_PATH="\$bundle/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" OPENSSL_CONF="\$bundle/etc/openssl.cnf" \\
  exec "\$bundle/libexec/$name" "\$@"
WRAPPER
  chmod +x "$dest/bin/$name"
done
# The openssl CLI reads its configuration file (req: its default sections) and stops without one.
cp "$(openssl version -d | sed 's/^OPENSSLDIR: "\(.*\)"$/\1/')/openssl.cnf" "$dest/etc/openssl.cnf"
if [ "$dav_ext" = 1 ]; then
  module=/usr/lib/nginx/modules/ngx_http_dav_ext_module.so
  [ -f "$module" ] || die "no $module: apt-get install libnginx-mod-http-dav-ext"
  cp "$module" "$dest/modules/"
  carry_libraries "$module"
fi

cat >"$dest/env.sh" <<'ENV'
# Source it (bash) to have ci/lib.sh start the carried servers (ci/gpu/carry_servers.sh).
cubby_servers="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PATH="$cubby_servers/bin:$PATH"  # redis-cli (--cluster create) and openssl (the test CAs)
export CUBBY_TEST_REDIS_SERVER="$cubby_servers/bin/redis-server"
export CUBBY_TEST_NGINX="$cubby_servers/bin/nginx"
export CUBBY_TEST_NGINX_MODULES="$cubby_servers/modules"
unset cubby_servers
ENV

if ! { "$dest/bin/redis-server" --version && "$dest/bin/redis-cli" --version &&
  "$dest/bin/nginx" -v 2>&1 && "$dest/bin/openssl" version; } >/dev/null; then
  die "a carried tool does not run here (see above)"
fi
echo "ci/gpu/carry_servers.sh: $(du -sh "$dest" | cut -f1) in $dest"
