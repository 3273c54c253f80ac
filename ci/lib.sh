#!/usr/bin/env bash
# Shared by ci/*.sh: install what cubby needs on Debian 12, find the CUDA toolkit, configure
# and build. Source it; do not run it.

CUBBY_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Debian packages the build and the tests need (see the dependency table in README.md).
CUBBY_APT_PACKAGES=(
  build-essential cmake pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  libxxhash-dev nlohmann-json3-dev libcli11-dev
  libhiredis-dev libssl-dev redis-server
)

# The benchmark report (python3) and the dashboard's browser test (chromium); node and npm come
# from ensure_node.
CUBBY_BENCH_APT_PACKAGES=(python3 chromium)

# The Python package and pytest plugin's tests (tests/python, run with /usr/bin/python3): pytest,
# pytest-xdist for the -n 2 test, pip for the offline `pip install ./pytest_plugin` test.
CUBBY_PYTHON_APT_PACKAGES=(python3 python3-pytest python3-pytest-xdist python3-pip python3-setuptools)

log() { printf '\033[1m[cubby ci]\033[0m %s\n' "$*" >&2; }
die() { printf '[cubby ci] error: %s\n' "$*" >&2; exit 1; }

# Installs the missing packages among "$@" with apt-get (as root, or through sudo).
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
  $sudo apt-get update -qq || die "apt-get update failed; check the network or the apt sources"
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

# Starts a private redis-server on 127.0.0.1 on a free port for the remote-tier tests and exports
# CUBBY_TEST_REDIS_URL (tests that stop or pause Redis start their own). stop_test_redis ends it.
start_test_redis() {
  command -v redis-server >/dev/null || { log "no redis-server: remote-tier tests start none"; return 0; }
  CUBBY_TEST_REDIS_DIR="$(mktemp -d /tmp/cubby-ci-redis.XXXXXX)"
  local port attempt
  for attempt in 1 2 3 4 5 6 7 8; do
    port=$((20000 + RANDOM % 40000))
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --protected-mode no \
      --daemonize yes --pidfile "$CUBBY_TEST_REDIS_DIR/redis.pid" --dir "$CUBBY_TEST_REDIS_DIR" \
      --logfile "$CUBBY_TEST_REDIS_DIR/redis.log" >/dev/null 2>&1 || continue
    for _ in $(seq 50); do
      if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = "PONG" ]; then
        export CUBBY_TEST_REDIS_URL="redis://127.0.0.1:$port"
        log "redis-server for the tests: $CUBBY_TEST_REDIS_URL"
        return 0
      fi
      sleep 0.1
    done
    stop_test_redis
    CUBBY_TEST_REDIS_DIR="$(mktemp -d /tmp/cubby-ci-redis.XXXXXX)"
  done
  log "could not start redis-server on a free port; remote-tier tests start their own"
}

stop_test_redis() {
  [ -n "${CUBBY_TEST_REDIS_DIR:-}" ] || return 0
  local pid=""
  [ -f "$CUBBY_TEST_REDIS_DIR/redis.pid" ] && pid="$(cat "$CUBBY_TEST_REDIS_DIR/redis.pid" 2>/dev/null || true)"
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    # Redis removes its pid file and writes its log while it shuts down: wait before removing.
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$CUBBY_TEST_REDIS_DIR" 2>/dev/null || true
  CUBBY_TEST_REDIS_DIR=""
}
