#!/usr/bin/env bash
# Checks what libcubby.so exports (nm -DC --defined-only): every function declared in the C API
# header is there with C linkage, the public C++ classes are there (Cache, CacheResult, Config,
# Key, Module, CubinSymbols (the examples use it), Error's typeinfo), and nothing internal is: no
# nlohmann, hiredis, LZ4, xxHash or OpenSSL symbols, no Redis tier, no signing, no `detail`
# namespace, no store internals. Every other exported symbol must be a cubby:: one or a libstdc++
# template instantiation (namespace std keeps default visibility). Prints the count of exported
# symbols.
#   tests/install/check_exports.sh LIBCUBBY_SO CUBBY_H
set -euo pipefail
library="$1"
header="$2"
command -v nm >/dev/null || { echo "error: nm (binutils) is needed"; exit 2; }
symbols="$(nm -DC --defined-only "$library" | sed -E 's/^[0-9a-f]* [A-Za-z] //')"
raw="$(nm -D --defined-only "$library" | awk '$2 == "T" { print $3 }')"
failed=0
bad() { echo "error: $*"; failed=1; }

# The C API: each function of cubby.h, exported unmangled.
api="$(grep -oE '\bcubby_[a-z_]+\(' "$header" | tr -d '(' | sort -u)"
[ -n "$api" ] || bad "no functions found in $header"
for name in $api; do
  grep -qx "$name" <<<"$raw" || bad "C API function $name is not exported (CUBBY_API missing?)"
done

# The public C++ API: a few representatives of each class users and the harness need.
for needed in 'cubby::Cache::Cache(cubby::Config)' 'cubby::Cache::compile(cubby::CompileRequest const&)' \
              'cubby::CacheResult::lowered_name' 'cubby::Config::from_env()' 'cubby::Key::hex' \
              'cubby::Module::Module(std::shared_ptr<cubby::Entry const>)' 'cubby::gpu_status()' \
              'cubby::recover_names(' 'cubby::CubinSymbols::has_kernel' 'typeinfo for cubby::Error'; do
  grep -qF "$needed" <<<"$symbols" || bad "public symbol '$needed' is not exported"
done

# Nothing internal.
forbidden='nlohmann|hiredis|redis|[Ll][Zz]4|XXH|EVP_|HMAC|(^|[^_])detail::|seal_signed|open_signed|is_signed|hmac_sha256'
forbidden+='|cubby::(DiskTier|MemoryTier|RemoteTier|Tier|StoreStats|Background|Counters)\b'
forbidden+='|cubby::(scan_includes|scan_headers|list_includes|hash128|to_hex|blob_key|plan_includes)\('
if leaked="$(grep -E "$forbidden" <<<"$symbols")"; then
  bad "internal symbols are exported:"; echo "$leaked" | awk 'NR <= 20'
fi
# Everything exported is the C API, cubby::, or libstdc++'s own templates.
if stray="$(grep -vE '^cubby_[a-z_]+$|cubby::|^(typeinfo|typeinfo name|vtable|VTT) for (std|__gnu_cxx)::|^([a-z_ ]+[*&]? )?(std|__gnu_cxx)::' <<<"$symbols")"; then
  bad "exported symbols outside the API:"; echo "$stray" | awk 'NR <= 20'
fi

echo "libcubby.so exports $(wc -l <<<"$symbols") symbols ($(wc -w <<<"$api") C API functions)"
exit "$failed"
