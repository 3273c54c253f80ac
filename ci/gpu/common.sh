# The start shared by the ci/gpu/<step>.sh scripts; source it, then call
#   gpu_step_start SCRIPT DEFAULT_BUILD "$@"
# It sets root (the repository), out (OUT_DIR = $1: created, made absolute), build_dir (BUILD_DIR
# = $2, else $CUBBY_BUILD_DIR, else $root/DEFAULT_BUILD: made absolute) and status=0. It exits
# with the usage when OUT_DIR is missing, and with status 2 when the build folder does not exist.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

gpu_step_start() {
  local script="$1" default_build="$2"
  shift 2
  out="${1:?usage: ci/gpu/$script OUT_DIR [BUILD_DIR]}"
  build_dir="$(cd "${2:-${CUBBY_BUILD_DIR:-$root/$default_build}}" && pwd)" ||
    { echo "no build folder" >&2; exit 2; }
  mkdir -p "$out"
  out="$(cd "$out" && pwd)"
  status=0
}
