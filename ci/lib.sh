#!/usr/bin/env bash
# Shared by ci/*.sh: install what cubby needs on Debian 12, find the CUDA toolkit, configure
# and build. Source it; do not run it.

CUBBY_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Debian packages the build and the tests need (see the dependency table in docs/reference.md).
CUBBY_APT_PACKAGES=(
  build-essential cmake pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  libxxhash-dev nlohmann-json3-dev libcli11-dev
  libhiredis-dev libssl-dev liblz4-dev zlib1g-dev redis-server
  nginx libnginx-mod-http-dav-ext  # the HTTP(S) remote tests' server (WebDAV PUT)
  redis-tools openssl  # redis-cli --cluster create and the test CA of the Redis TLS and Cluster tests
  squashfs-tools  # a real SquashFS image for the stat-trust test (skipped where mounting is not allowed)
)

# The benchmark report (python3) and the dashboard's browser test (chromium); node and npm come
# from ensure_node.
CUBBY_BENCH_APT_PACKAGES=(python3 chromium)

# ci/lint.sh: clang-tidy and clang-format (LLVM 14 on Debian 12).
CUBBY_LINT_APT_PACKAGES=(clang-tidy clang-format)

# The Python package and pytest plugin's tests (tests/python, run with /usr/bin/python3): pytest,
# pytest-xdist for the -n 2 test, pip for the offline `pip install ./pytest_plugin` tests, venv
# for the fresh virtual environment they install the wheel into (tests/python/test_wheel.py).
CUBBY_PYTHON_APT_PACKAGES=(python3 python3-pytest python3-pytest-xdist python3-pip python3-setuptools
                           python3-venv)

log() { printf '\033[1m[cubby ci]\033[0m %s\n' "$*" >&2; }
die() { printf '[cubby ci] error: %s\n' "$*" >&2; exit 1; }

# Stage timing (ci/test.sh): `stage NAME` ends the running stage (if any) and starts NAME;
# `stages_report` ends the running one and prints every stage's wall and CPU minutes (CPU: user +
# system of the processes it waited for; a better figure than wall on a shared machine) and the
# total. Each stage's end is logged as it happens, so a log cut short still says where time went.
ci_stage_names=() ci_stage_lines=() ci_stage_name="" ci_stage_wall=0 ci_stage_cpu=0 ci_cpu=0
ci_started_at=$SECONDS
# ci_cpu_now: sets ci_cpu to the CPU seconds x 100 used so far by this shell's finished children
# (bash `times`, run in this shell: in a subshell, $(times), it would count the subshell's).
ci_cpu_now() {
  local file line user sys
  file="$(mktemp /tmp/cubby-ci-times.XXXXXX)"
  times >"$file"
  line="$(tail -n 1 "$file")"  # children: "XmY.YYYs XmY.YYYs"
  rm -f "$file"
  user="${line%% *}" sys="${line##* }"
  ci_cpu="$(awk -v u="$user" -v s="$sys" 'function c(t, m) { split(t, m, "m"); sub("s", "", m[2]);
    return m[1] * 6000 + m[2] * 100 } BEGIN { printf "%d\n", c(u) + c(s) }')"
}
ci_stage_end() {
  [ -n "$ci_stage_name" ] || return 0
  ci_cpu_now
  local wall=$((SECONDS - ci_stage_wall)) cpu=$((ci_cpu - ci_stage_cpu)) line
  line="$(awk -v n="$ci_stage_name" -v w="$wall" -v c="$cpu" \
    'BEGIN { printf "%-28s %6.1f min wall %6.1f min CPU", n, w / 60, c / 6000 }')"
  ci_stage_lines+=("$line")
  log "stage done: $line"
  ci_stage_name=""
}
stage() {
  ci_stage_end
  ci_cpu_now
  ci_stage_name="$1" ci_stage_wall=$SECONDS ci_stage_cpu="$ci_cpu"
  log "stage: $1"
}
stages_report() {
  ci_stage_end
  [ ${#ci_stage_lines[@]} -gt 0 ] || return 0
  log "time per stage:"
  printf '  %s\n' "${ci_stage_lines[@]}" >&2
  ci_cpu_now
  awk -v w=$((SECONDS - ci_started_at)) -v c="$ci_cpu" \
    'BEGIN { printf "  %-28s %6.1f min wall %6.1f min CPU\n", "total", w / 60, c / 6000 }' >&2
}

# ctest_jobs: how many tests ci/test.sh runs at once: CUBBY_CI_TEST_JOBS, else one per core.
# (Most tests wait rather than compute, but some have tight deadlines, such as a 5 MiB Redis
# round trip in 300 ms: ci/test.sh fills the idle cores with lint and builds at nice 19 instead.)
ctest_jobs() {
  echo "${CUBBY_CI_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}"
}

# ctest_slowest BUILD_DIR [N]: the N (default 15) tests of BUILD_DIR's last ctest run that took
# longest (ctest's Testing/Temporary/CTestCostData.txt), so a CI log says where test time goes.
ctest_slowest() {
  local data="$1/Testing/Temporary/CTestCostData.txt"
  [ -f "$data" ] || return 0
  log "slowest tests (seconds, last run):"
  # awk, not head, takes the first N: head would leave sort writing into a closed pipe, and
  # under `set -o pipefail` sort's SIGPIPE (exit 141) would end the caller's script.
  awk '/^---/ { exit } NF == 3 { printf "  %8.2f  %s\n", $3, $1 }' "$data" | sort -rn \
    | awk -v n="${2:-15}" 'NR <= n' >&2
  awk '/^---/ { exit } NF == 3 { total += $3; n++ }
    END { printf "  %d tests, %.1f test-minutes in all\n", n, total / 60 }' "$data" >&2
}

# run_pytest ARG...: python -m pytest ARG... with $python (find_python); exit status 5 (nothing
# collected or everything deselected: no tests of that kind in this checkout) is said and is 0.
run_pytest() {
  local status=0
  [ -n "${python:-}" ] || find_python
  "$python" -m pytest "$@" || status=$?
  if [ "$status" -eq 5 ]; then
    log "pytest collected no tests (exit status 5): $*"
    return 0
  fi
  return "$status"
}

# find_python: sets python to /usr/bin/python3 (Debian's, which has the apt packages the tests
# use), else python3 on PATH (a GPU machine's).
find_python() {
  python="$(command -v /usr/bin/python3 || command -v python3)" || die "no python3 (/usr/bin or PATH)"
}

# Installs the missing packages among "$@" with apt-get (as root, or through sudo). The package
# index is updated once per run (ci_apt_updated).
ci_apt_updated=0
apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "need root or sudo to install: ${missing[*]}"
    sudo="sudo"
  fi
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if [ "$ci_apt_updated" = 0 ]; then
    $sudo apt-get update -qq || die "apt-get update failed; check the network or the apt sources"
    ci_apt_updated=1
  fi
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get install ${missing[*]} failed"
}

# Exports CUDA_HOME (the toolkit with NVRTC) or stops with what to do.
find_cuda() {
  local candidates=("${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr/local/cuda-13.0 /usr/local/cuda-12)
  for dir in "${candidates[@]}"; do
    if [ -n "$dir" ] && [ -f "$dir/include/nvrtc.h" ]; then
      export CUDA_HOME="$dir"
      export PATH="$CUDA_HOME/bin:$PATH"
      return 0
    fi
  done
  die "no CUDA toolkit found (looked for include/nvrtc.h in CUDA_HOME, CUDA_PATH, /usr/local/cuda); install the CUDA toolkit or set CUDA_HOME"
}

# configure_and_build BUILD_DIR [cmake args...]
configure_and_build() {
  local build_dir="$1"; shift
  local jobs
  jobs="$(nproc 2>/dev/null || echo 2)"
  log "configuring in $build_dir"
  cmake -S "$CUBBY_ROOT" -B "$build_dir" -DCUDAToolkit_ROOT="$CUDA_HOME" "$@" >"$build_dir.configure.log" 2>&1 \
    || { cat "$build_dir.configure.log" >&2; die "cmake configure failed (log above)"; }
  log "building with $jobs jobs"
  cmake --build "$build_dir" -j "$jobs" || die "build failed"
}

# Makes `node` and `npm` available: an existing install (Debian's or another) is kept, else
# Debian's nodejs and npm are installed. Returns 1 (after saying why) when that fails.
ensure_node() {
  if command -v node >/dev/null && command -v npm >/dev/null; then return 0; fi
  ( apt_install nodejs npm ) || { log "node/npm unavailable: apt-get install nodejs npm"; return 1; }
}

# find_redis_server: sets redis_server to the redis-server to start: $CUBBY_TEST_REDIS_SERVER if
# set (as the C++ tests do), else redis-server on PATH. Returns 1, with the reason in redis_why,
# when there is none.
find_redis_server() {
  redis_server="" redis_why=""
  if [ -n "${CUBBY_TEST_REDIS_SERVER:-}" ]; then
    if [ ! -f "$CUBBY_TEST_REDIS_SERVER" ] || [ ! -x "$CUBBY_TEST_REDIS_SERVER" ]; then
      redis_why="CUBBY_TEST_REDIS_SERVER=$CUBBY_TEST_REDIS_SERVER is not an executable file"
      return 1
    fi
    redis_server="$CUBBY_TEST_REDIS_SERVER"
  else
    redis_server="$(command -v redis-server)" \
      || { redis_why="no redis-server on PATH (install redis-server, or set CUBBY_TEST_REDIS_SERVER)"; return 1; }
  fi
}

# redis_ping PORT: succeeds when a Redis on 127.0.0.1:PORT answers PING (bash's /dev/tcp: no
# redis-cli needed).
redis_ping() {
  ( exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'PING\r\n' >&3 && IFS= read -r -t 2 reply <&3 \
      && [ "${reply%$'\r'}" = "+PONG" ] ) 2>/dev/null
}

# start_redis SERVER DIR [ARG...]: starts SERVER (a redis-server executable) on 127.0.0.1 on a
# free port, without persistence, daemonized, with its pid file, log and working folder in DIR (an
# existing folder), and the further ARGs (TLS, cluster, unix socket options). Sets redis_url (redis://127.0.0.1:PORT) once it answers; returns 1, with the reason in
# redis_why, when it does not start. stop_redis DIR ends it.
start_redis() {
  local server="$1" dir="$2" port pid attempt status
  redis_url="" redis_why=""
  for ((attempt = 0; attempt < 8; attempt++)); do
    port=$((20000 + RANDOM % 40000)) status=0
    ( exec 3<>"/dev/tcp/127.0.0.1/$port" ) 2>/dev/null && continue  # taken
    rm -f "$dir/redis.pid"
    "$server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --protected-mode no \
      --daemonize yes --pidfile "$dir/redis.pid" --dir "$dir" --logfile "$dir/redis.log" \
      "${@:3}" >"$dir/start.log" 2>&1 || status=$?
    if [ "$status" -ne 0 ]; then
      # It did not run at all (a missing library, an unknown option): another port will not help.
      redis_why="$(tail -n 1 "$dir/start.log")"
      redis_why="$server did not start (exit status $status${redis_why:+: $redis_why})"
      return 1
    fi
    # The pid file appears once the daemon is listening; the PING (or, where bash has no
    # /dev/tcp, the log) says it answers.
    for _ in $(seq 50); do
      pid="$(cat "$dir/redis.pid" 2>/dev/null || true)"
      if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null \
        && { redis_ping "$port" || grep -q 'Ready to accept connections' "$dir/redis.log" 2>/dev/null; }; then
        redis_url="redis://127.0.0.1:$port"
        return 0
      fi
      sleep 0.1
    done
    stop_redis "$dir"
    redis_why="$server did not answer on 127.0.0.1:$port ($(tail -n 1 "$dir/redis.log" 2>/dev/null))"
  done
  return 1
}

# stop_by_pid_file FILE SIGNAL: sends SIGNAL to the process whose pid FILE holds (if any), waits
# up to 5 s for it to exit (a server writes its log and removes its pid file while it shuts
# down), then kills it.
stop_by_pid_file() {
  local pid=""
  [ -f "$1" ] && pid="$(cat "$1" 2>/dev/null || true)"
  [ -n "$pid" ] || return 0
  kill "-$2" "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  return 0
}

# stop_redis DIR: ends the redis-server whose pid file is in DIR (if any) and waits for it.
stop_redis() { stop_by_pid_file "$1/redis.pid" TERM; }

# start_nginx DIR: starts nginx (CUBBY_TEST_NGINX, else nginx on PATH or in /usr/sbin) as a WebDAV
# cache server on 127.0.0.1, daemonized, with its config, pid file, logs, temporary folders and
# served folder (DIR/www) in DIR (an existing folder; nothing of nginx's compiled-in paths under
# /etc/nginx or /var is used), loading the dav ext module from CUBBY_TEST_NGINX_MODULES (default
# /usr/lib/nginx/modules) when it is there: HTTP on one free port, HTTPS on another with a CA and a
# server certificate made with openssl (DIR/ca.pem). Sets nginx_url (http://127.0.0.1:PORT),
# nginx_https_url and nginx_ca once both answer; returns 1, with the reason in nginx_why, when it
# does not start. stop_nginx DIR ends it. (The C++ tests start their own: tests/support/nginx_server.hpp.)
start_nginx() {
  local dir="$1" exe="${CUBBY_TEST_NGINX:-}" port tls_port attempt ext="" key modules
  nginx_url="" nginx_https_url="" nginx_ca="" nginx_why=""
  [ -n "$exe" ] || exe="$(PATH="$PATH:/usr/sbin" command -v nginx)" \
    || { nginx_why="no nginx (install nginx libnginx-mod-http-dav-ext, or set CUBBY_TEST_NGINX)"; return 1; }
  key="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
  # shellcheck disable=SC2086
  ( cd "$dir" && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >san.cnf \
      && openssl req -x509 $key -keyout ca.key -out ca.pem -days 7 -subj /CN=cubby-ci-ca \
      && openssl req $key -keyout server.key -out server.csr -subj /CN=localhost \
      && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
           -out server.pem -days 7 -extfile san.cnf ) >"$dir/openssl.log" 2>&1 \
    || { nginx_why="openssl could not make the certificates ($(tail -n 1 "$dir/openssl.log"))"; return 1; }
  modules="${CUBBY_TEST_NGINX_MODULES:-/usr/lib/nginx/modules}"
  [ -f "$modules/ngx_http_dav_ext_module.so" ] && ext="load_module $modules/ngx_http_dav_ext_module.so;"
  mkdir -p "$dir/www"
  for ((attempt = 0; attempt < 8; attempt++)); do
    port=$((20000 + RANDOM % 40000)) tls_port=$((20000 + RANDOM % 40000))
    [ "$port" != "$tls_port" ] || continue
    ( exec 3<>"/dev/tcp/127.0.0.1/$port" ) 2>/dev/null && continue  # taken
    ( exec 3<>"/dev/tcp/127.0.0.1/$tls_port" ) 2>/dev/null && continue
    cat >"$dir/nginx.conf" <<CONF
$ext
user $(id -un) $(id -gn);
pid $dir/nginx.pid;
error_log $dir/error.log warn;
worker_processes 2;
events { worker_connections 1024; }
http {
  access_log off;
  client_max_body_size 256m;
  client_body_temp_path $dir/tmp-body; proxy_temp_path $dir/tmp-proxy;
  fastcgi_temp_path $dir/tmp-fastcgi; uwsgi_temp_path $dir/tmp-uwsgi; scgi_temp_path $dir/tmp-scgi;
  server {
    listen 127.0.0.1:$port;
    listen 127.0.0.1:$tls_port ssl;
    ssl_certificate $dir/server.pem;
    ssl_certificate_key $dir/server.key;
    root $dir/www;
    location / { dav_methods PUT DELETE; create_full_put_path on; dav_access user:rw group:r; }
  }
}
CONF
    rm -f "$dir/nginx.pid"
    "$exe" -p "$dir/" -c "$dir/nginx.conf" -e "$dir/error.log" >"$dir/start.log" 2>&1 \
      || { nginx_why="nginx did not start ($(tail -n 1 "$dir/error.log" 2>/dev/null))"; continue; }
    for _ in $(seq 50); do
      if ( exec 3<>"/dev/tcp/127.0.0.1/$port" ) 2>/dev/null \
        && ( exec 3<>"/dev/tcp/127.0.0.1/$tls_port" ) 2>/dev/null; then
        nginx_url="http://127.0.0.1:$port" nginx_https_url="https://127.0.0.1:$tls_port"
        nginx_ca="$dir/ca.pem"
        return 0
      fi
      sleep 0.1
    done
    stop_nginx "$dir"
    nginx_why="nginx did not answer on 127.0.0.1:$port/$tls_port ($(tail -n 1 "$dir/error.log" 2>/dev/null))"
  done
  return 1
}

# stop_nginx DIR: ends the nginx whose pid file is in DIR (if any) and waits for it.
stop_nginx() { stop_by_pid_file "$1/nginx.pid" QUIT; }

# start_redis_fleet DIR: one server of each Redis backend on loopback, for the remote benchmarks
# (bench/remote.cpp, CUBBY_BENCH_BACKENDS): plain TCP and a unix socket (one server), TLS
# (a CA and a server certificate made with openssl) and a cluster of 3 masters (redis-cli
# --cluster create). Exports CUBBY_BENCH_BACKENDS and CUBBY_REMOTE_CA_FILE; returns 1, with the
# reason in redis_why, when one does not start. stop_redis_fleet DIR ends them all.
start_redis_fleet() {
  local dir="$1" plain tls_port nodes="" first="" n
  find_redis_server || return 1
  mkdir -p "$dir/plain" "$dir/tls" "$dir/c1" "$dir/c2" "$dir/c3"
  start_redis "$redis_server" "$dir/plain" --unixsocket "$dir/plain/redis.sock" \
    --unixsocketperm 700 || return 1
  plain="$redis_url"
  local ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$dir/tls/san.ext"
  # shellcheck disable=SC2086  # $ec is a list of options
  { openssl req -x509 $ec -keyout "$dir/tls/ca.key" -out "$dir/tls/ca.crt" -days 2 \
      -subj /CN=cubby-bench-ca \
    && openssl req $ec -keyout "$dir/tls/server.key" -out "$dir/tls/server.csr" -subj /CN=localhost \
    && openssl x509 -req -in "$dir/tls/server.csr" -CA "$dir/tls/ca.crt" -CAkey "$dir/tls/ca.key" \
      -CAcreateserial -out "$dir/tls/server.crt" -days 2 -extfile "$dir/tls/san.ext"; } \
    >"$dir/tls/openssl.log" 2>&1 || { redis_why="openssl could not make the test CA"; return 1; }
  tls_port=$((20000 + RANDOM % 40000))
  start_redis "$redis_server" "$dir/tls" --tls-port "$tls_port" \
    --tls-cert-file "$dir/tls/server.crt" --tls-key-file "$dir/tls/server.key" \
    --tls-ca-cert-file "$dir/tls/ca.crt" --tls-auth-clients optional || return 1
  for n in 1 2 3; do
    rm -f "$dir/c$n/nodes.conf"  # a node of an earlier cluster would not join this one
    start_redis "$redis_server" "$dir/c$n" --cluster-enabled yes \
      --cluster-config-file "$dir/c$n/nodes.conf" --cluster-port $((20000 + RANDOM % 40000)) \
      || return 1
    nodes+=" ${redis_url#redis://}"
    [ -n "$first" ] || first="$redis_url"
  done
  # shellcheck disable=SC2086  # $nodes is a list of host:port
  redis-cli --cluster create $nodes --cluster-replicas 0 --cluster-yes >"$dir/cluster.log" 2>&1 \
    || { redis_why="redis-cli --cluster create failed (apt-get install redis-tools)"; return 1; }
  for _ in $(seq 100); do
    redis-cli -u "$first" cluster info 2>/dev/null | grep -q 'cluster_state:ok' && break
    sleep 0.1
  done
  export CUBBY_REMOTE_CA_FILE="$dir/tls/ca.crt"
  export CUBBY_BENCH_BACKENDS="redis=$plain,rediss=rediss://127.0.0.1:$tls_port"
  CUBBY_BENCH_BACKENDS+=",unix=unix://$dir/plain/redis.sock,cluster=$first"
}

# stop_redis_fleet DIR: ends the servers start_redis_fleet DIR started.
stop_redis_fleet() {
  local sub
  for sub in plain tls c1 c2 c3; do stop_redis "$1/$sub"; done
}

# Starts a private redis-server for the remote-tier tests (start_redis) and exports
# CUBBY_TEST_REDIS_URL (tests that stop or pause Redis start their own). stop_test_redis ends it.
start_test_redis() {
  find_redis_server || { log "$redis_why: remote-tier tests start none"; return 0; }
  CUBBY_TEST_REDIS_DIR="$(mktemp -d /tmp/cubby-ci-redis.XXXXXX)"
  if start_redis "$redis_server" "$CUBBY_TEST_REDIS_DIR"; then
    export CUBBY_TEST_REDIS_URL="$redis_url"
    log "redis-server for the tests: $CUBBY_TEST_REDIS_URL"
  else
    log "$redis_why; remote-tier tests start their own"
    stop_test_redis
  fi
}

stop_test_redis() {
  [ -n "${CUBBY_TEST_REDIS_DIR:-}" ] || return 0
  stop_redis "$CUBBY_TEST_REDIS_DIR"
  rm -rf "$CUBBY_TEST_REDIS_DIR" 2>/dev/null || true
  CUBBY_TEST_REDIS_DIR=""
}
