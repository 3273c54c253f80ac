/* CUBBY_API: marks what libcubby.so exports. The library is built with hidden visibility by
 * default (CMake: CXX_VISIBILITY_PRESET hidden, VISIBILITY_INLINES_HIDDEN), so a declaration
 * without CUBBY_API is internal: reachable from the static core library (cubby_core, which the
 * CLI, tests, benchmarks and fuzz targets link) but not from libcubby.so. Put it on the public
 * API only: the C API (cubby.h) and the cubby:: classes and functions of the installed headers.
 * An exception type thrown across the boundary must be CUBBY_API (its typeinfo must be shared).
 * C and C++. tests/install/check_exports.sh checks the exported list. */
#ifndef CUBBY_EXPORT_H_
#define CUBBY_EXPORT_H_

#if defined(__GNUC__) || defined(__clang__)
#define CUBBY_API __attribute__((visibility("default")))
#else
#define CUBBY_API
#endif

#endif /* CUBBY_EXPORT_H_ */
