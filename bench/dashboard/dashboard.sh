# Dashboard helpers for ci/bench.sh and ci/test.sh. Source it after ci/lib.sh.
#   dashboard_build HISTORY OUT_HTML [--current RECORD.jsonl]
#                                      npm ci (from the lock file, offline when the npm cache
#                                      has the packages) + node build.mjs; returns 1 without npm
#   dashboard_browser_test PAGE PNG    the headless Chromium test (bench/dashboard/test/browser.mjs)
#                                      of PAGE, then of a page drawn from a fixture history that
#                                      has every kind of chart (tests/bench/fixtures/
#                                      dashboard-history.jsonl: the hit-path band and a fault, hit
#                                      rates, the cold suite's variants (a legend table), two
#                                      machines whose host and CPU model strings vary; the
#                                      latest run of one slower beyond its noise band and under load,
#                                      of the other within its band with a failed goal, load
#                                      unknown), its screenshot beside PNG (-fixture.png); then
#                                      of that history plus a run just made on a new machine of
#                                      the same description (tests/bench/fixtures/
#                                      dashboard-current.jsonl: first, its own baseline verdict,
#                                      never merged), screenshot -current.png

CUBBY_DASHBOARD_DIR="$CUBBY_ROOT/bench/dashboard"

# Installs the locked packages once (again when the lock file changes).
dashboard_npm_ci() {
  ensure_node || return 1
  local stamp="$CUBBY_DASHBOARD_DIR/node_modules/.cubby-lock"
  if [ -f "$stamp" ] && cmp -s "$stamp" "$CUBBY_DASHBOARD_DIR/package-lock.json"; then return 0; fi
  log "installing the dashboard's npm packages (package-lock.json)"
  ( cd "$CUBBY_DASHBOARD_DIR" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error ) \
    || { log "npm ci failed in bench/dashboard (no network and no npm cache?): dashboard skipped"; return 1; }
  cp "$CUBBY_DASHBOARD_DIR/package-lock.json" "$stamp"
}

dashboard_build() {
  local history="$1" out="$2"
  shift 2
  dashboard_npm_ci || return 1
  node "$CUBBY_DASHBOARD_DIR/build.mjs" --history "$history" --out "$out" "$@"
}

dashboard_browser_test() {
  local page="$1" png="$2"
  local fixture="$CUBBY_ROOT/tests/bench/fixtures/dashboard-history.jsonl" fixture_page="${page%.html}-fixture.html"
  dashboard_npm_ci || return 1
  node "$CUBBY_DASHBOARD_DIR/test/browser.mjs" "$page" "$png" --expect recovery:bar,time-saved || return 1
  node "$CUBBY_DASHBOARD_DIR/build.mjs" --history "$fixture" --out "$fixture_page" || return 1
  node "$CUBBY_DASHBOARD_DIR/test/browser.mjs" "$fixture_page" "${png%.png}-fixture.png" \
    --expect hit-rate,time-saved,recovery:bar,overhead-mdspan50:band,overhead-mdspan-suite:fault,cold-suite-mdspan-suite:table \
    --expect-verdict "no GPU, 2 CPUs=slower;H200, 16 CPUs=goals-fail" --expect-load unknown,under || return 1
  local current="$CUBBY_ROOT/tests/bench/fixtures/dashboard-current.jsonl" current_page="${page%.html}-current.html"
  local with_current="${page%.html}-current.jsonl"
  cat "$fixture" "$current" >"$with_current"
  node "$CUBBY_DASHBOARD_DIR/build.mjs" --history "$with_current" --out "$current_page" --current "$current" || return 1
  node "$CUBBY_DASHBOARD_DIR/test/browser.mjs" "$current_page" "${png%.png}-current.png" \
    --expect-current "no GPU, 2 CPUs · c0ffee12" \
    --expect-verdict "no GPU, 2 CPUs · c0ffee12=baseline;no GPU, 2 CPUs=slower;H200, 16 CPUs=goals-fail"
}
