#!/usr/bin/env bash
# Checks that each FILE (libcubby.so, the cubby tool) does not list, as NEEDED in its dynamic
# section, a library cubby loads with dlopen on first use (NVRTC, the CUDA driver), nor libcurl
# (HTTP(S) remotes speak HTTP themselves: storage/remote/http/http.hpp). Linking one would make every
# process load it (libcurl alone is ~25 libraries and ~6 ms per process).
#   tests/install/check_lazy_libraries.sh FILE...
set -euo pipefail
command -v readelf >/dev/null || { echo "error: readelf (binutils) is needed"; exit 2; }
failed=0
for file in "$@"; do
  needed="$(readelf -d "$file" | sed -nE 's/.*\(NEEDED\).*\[(.*)\]$/\1/p')"
  [ -n "$needed" ] || { echo "error: $file lists no NEEDED libraries (not a dynamic ELF file?)"; failed=1; continue; }
  if lazy="$(grep -E '^lib(curl|nvrtc|cuda)[.-]' <<<"$needed")"; then
    echo "error: $file links what cubby loads on first use:" $lazy
    failed=1
  else
    echo "$file: $(wc -l <<<"$needed") NEEDED libraries, none of libcurl, libnvrtc, libcuda"
  fi
done
exit "$failed"
