/* cubby C API: stable, extern "C", opaque handles. Used by the Python package through ctypes.
 *
 * Conventions: functions that can fail return 0 on success or a nonzero cubby_status; the
 * message of the last failure on this thread is cubby_last_error(). Strings returned by a
 * handle's accessors live as long as the handle. Every pointer argument may be NULL only where
 * documented. Strings are NUL-terminated: a string argument ends at its first NUL byte (bindings
 * must reject strings that contain one rather than pass them truncated).
 *
 * Threads: a cubby_cache may be used by any number of threads at once, and closed by one of them
 * while others are in calls on it (see cubby_close). JSON answers are UTF-8: bytes of program
 * names, options or paths that are not UTF-8 are replaced by U+FFFD.
 */
#ifndef CUBBY_H_
#define CUBBY_H_

#include <stddef.h>
#include <stdint.h>

#include "cubby/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cubby_status {
  CUBBY_OK = 0,
  CUBBY_ERROR_IO = 1,
  CUBBY_ERROR_CORRUPT = 2,
  CUBBY_ERROR_NOT_FOUND = 3,
  CUBBY_ERROR_INVALID_ARGUMENT = 4,
  CUBBY_ERROR_COMPILE_FAILED = 5,
  CUBBY_ERROR_NVRTC_UNAVAILABLE = 6,
  CUBBY_ERROR_DRIVER_UNAVAILABLE = 7,
  CUBBY_ERROR_NO_GPU = 8,
  CUBBY_ERROR_CUDA = 9,
  CUBBY_ERROR_NAME_NOT_FOUND = 10,
  CUBBY_ERROR_INTERNAL = 99
} cubby_status;

typedef struct cubby_cache cubby_cache;
typedef struct cubby_result cubby_result;

/* Library version, e.g. "0.1.0". */
CUBBY_API const char* cubby_version(void);

/* Message of the last failure on this thread ("" if none). For CUBBY_ERROR_COMPILE_FAILED it
 * contains NVRTC's log; cubby_last_compile_log() gives the log alone. */
CUBBY_API const char* cubby_last_error(void);
CUBBY_API const char* cubby_last_compile_log(void);

/* Opens the store in `dir` (NULL: CUBBY_DIR / XDG default) with the other settings from CUBBY_*
 * variables and the store's own cubby.conf (`cubby config`; a variable wins). *out receives a
 * handle to close with cubby_close. */
CUBBY_API int cubby_open(const char* dir, cubby_cache** out);

/* Closes a handle: later calls with it fail with CUBBY_ERROR_INVALID_ARGUMENT (the handle is
 * closed; handles are never reused, so a closed one is never taken for another), calls already in
 * flight on other threads finish normally, and cubby_close returns once they have (the cache's
 * stats then go to CUBBY_STATS_FILE when set). Results (cubby_result) stay valid until freed.
 * Strings returned by cubby_store_dir die with the handle. NULL, or a handle closed already, is
 * ignored. */
CUBBY_API void cubby_close(cubby_cache* cache);

/* Compiles through the cache. `program_name` and `arch` may be NULL (defaults); `name_expressions`
 * and `options` may be NULL when their count is 0. *out receives a result handle to free with
 * cubby_result_free. */
CUBBY_API int cubby_compile(cubby_cache* cache, const char* source, const char* program_name,
                            const char* const* name_expressions, size_t name_expression_count,
                            const char* const* options, size_t option_count, const char* arch,
                            cubby_result** out);

/* The key of a request without compiling (32 hex digits, written with its NUL to key_out[33]). */
CUBBY_API int cubby_key(cubby_cache* cache, const char* source, const char* program_name,
                        const char* const* name_expressions, size_t name_expression_count,
                        const char* const* options, size_t option_count, const char* arch,
                        char key_out[33]);

/* cubby_key for a request cubby_compile would look up and store under that key; for one it
 * compiles without the store (an include the header scan cannot name, an option the key cannot
 * cover, a disabled store) CUBBY_ERROR_INVALID_ARGUMENT, cubby_last_error saying why. A front end
 * that stores what it compiled itself (CuPy's nvcc programs) under this key stays header-exact. */
CUBBY_API int cubby_storable_key(cubby_cache* cache, const char* source, const char* program_name,
                                 const char* const* name_expressions, size_t name_expression_count,
                                 const char* const* options, size_t option_count, const char* arch,
                                 char key_out[33]);

CUBBY_API void cubby_result_free(cubby_result* result);
CUBBY_API const char* cubby_result_key(const cubby_result* result);
CUBBY_API int cubby_result_hit(const cubby_result* result);
/* "memory", "disk", "remote" or "compiled". */
CUBBY_API const char* cubby_result_tier(const cubby_result* result);
/* "cubin", "ptx" or "ltoir". */
CUBBY_API const char* cubby_result_payload_kind(const cubby_result* result);
CUBBY_API const void* cubby_result_payload(const cubby_result* result, size_t* size);
/* Lowered names by index, 0 .. cubby_result_name_count - 1. For cubby_compile's results the order
 * is the request's: the name expressions as passed (a repeated one once, at its first place),
 * then any other expression the entry holds, sorted. cubby_result_lowered_name_of looks one up by
 * its expression. */
CUBBY_API size_t cubby_result_name_count(const cubby_result* result);
CUBBY_API const char* cubby_result_name_expression(const cubby_result* result, size_t index);
CUBBY_API const char* cubby_result_lowered_name(const cubby_result* result, size_t index);
/* The lowered name of `name_expression`, or NULL if the result has none for it. */
CUBBY_API const char* cubby_result_lowered_name_of(const cubby_result* result,
                                                   const char* name_expression);
CUBBY_API const char* cubby_result_log(const cubby_result* result);
CUBBY_API double cubby_result_compile_ms(const cubby_result* result);
CUBBY_API double cubby_result_elapsed_ms(const cubby_result* result);
/* Why this program was compiled without the store: "" when it was not (a hit, or a compile that
 * was stored), else a reason of cubby/stats.hpp's CUBBY_UNCACHED ("unnamed_include",
 * "unkeyable_option", "store_disabled", "read_only", ...); cubby_result_uncached_detail says
 * what of this program ("<header>: #include NAME (program k.cu)", the option, or the program;
 * "" when not uncached). */
CUBBY_API const char* cubby_result_uncached(const cubby_result* result);
CUBBY_API const char* cubby_result_uncached_detail(const cubby_result* result);

/* Every field above but the names, in one call (for bindings, where each call costs: a warm hit
 * from Python is a few microseconds). Set `size` to sizeof(cubby_result_fields) first: the fields
 * of this version that fit in `size` bytes are written (a caller built against a later version
 * gets the fields this library has; the rest keep their values), and `size` then says how many
 * bytes were. Pointers live as long as the result. A NULL result or fields writes nothing. */
typedef struct cubby_result_fields {
  size_t size;
  const char* key;
  int hit;
  const char* tier;
  const char* payload_kind;
  const void* payload;
  size_t payload_size;
  size_t name_count;
  const char* log;
  double compile_ms;
  double elapsed_ms;
  const char* uncached;
  const char* uncached_detail;
} cubby_result_fields;
CUBBY_API void cubby_result_get_fields(const cubby_result* result, cubby_result_fields* fields);

/* This handle's statistics as a JSON object (keys as in `cubby stats --json`'s "process" part),
 * plus "uncached_first": for each reason (CUBBY_UNCACHED) this handle counted, the first such
 * program of this process, as cubby_uncached_first says it. The string lives until this thread's
 * next call of cubby_stats_json (other threads have their own), whatever happens to the handle. */
CUBBY_API const char* cubby_stats_json(cubby_cache* cache);

/* Programs compiled without the store, by reason (cubby/stats.hpp's CUBBY_UNCACHED): each
 * reason's name, label and what it counts for index 0 .. cubby_uncached_count - 1 (NULL past the
 * end); its counter in cubby_stats_json is "uncached_<name>". cubby_uncached_first: the detail of
 * this process's first program of the reason named `reason` ("" when none yet; NULL, with
 * cubby_last_error, for a name that is no reason); it lives until this thread's next call of
 * cubby_uncached_first. */
CUBBY_API size_t cubby_uncached_count(void);
CUBBY_API const char* cubby_uncached_name(size_t index);
CUBBY_API const char* cubby_uncached_label(size_t index);
CUBBY_API const char* cubby_uncached_what(size_t index);
CUBBY_API const char* cubby_uncached_first(const char* reason);

/* Counts a program a front end compiled without asking cubby_compile (e.g. CuPy's own compile):
 * in "programs" and "uncached_<reason>"; `detail` (may be NULL) is kept as the process's first of
 * the reason when it is the first. CUBBY_ERROR_INVALID_ARGUMENT for a name that is no reason. */
CUBBY_API int cubby_count_uncached(cubby_cache* cache, const char* reason, const char* detail);

/* The end-of-run summary of a set of counters, in the one wording of the GoogleTest harness, the
 * pytest plugin and `cubby stats`: lines separated by '\n' (none after the last), the first
 * "hits: ..., misses: ..., compiles: ..., compile time saved: ...". `stats_json` is a JSON object
 * of counters named as cubby_stats_json writes them (sums of such objects too): members it does
 * not name are ignored, missing ones are 0. NULL when it is not a JSON object (cubby_last_error
 * says why). The string lives until this thread's next call of cubby_stats_summary. */
CUBBY_API const char* cubby_stats_summary(const char* stats_json);

/* The store folder of this handle (absolute or as given). Lives as long as the handle. */
CUBBY_API const char* cubby_store_dir(cubby_cache* cache);

/* Entries and bytes in the store (0 and 0 for a store folder that does not exist yet). */
CUBBY_API int cubby_store_usage(cubby_cache* cache, uint64_t* entries, uint64_t* bytes);

/* The store's size estimate: entries and bytes as its persisted counters have them (every write
 * and removal adjusts them at once, a remote hit's copy to disk within seconds, `cubby gc` makes
 * them exact), read from two small files instead of walking every entry as cubby_store_usage
 * does. 0 and 0 before anything was stored. */
CUBBY_API int cubby_store_estimate(cubby_cache* cache, uint64_t* entries, uint64_t* bytes);

/* Removes every entry of the store, then empties this handle's memory tier (so the handle serves
 * none of them afterwards); *removed (may be NULL) receives the count. A read-only store is
 * CUBBY_ERROR_INVALID_ARGUMENT, with nothing removed. */
CUBBY_API int cubby_clear(cubby_cache* cache, uint64_t* removed);

/* Reads ahead, into this handle's memory tier, the entries the recipes of the handle's suite
 * (CUBBY_SUITE) have now, so that the run's lookups hit memory (Cache::read_ahead_suite in
 * cubby/cache.hpp: keys derived as cubby_compile derives them, entries checked as disk hits are;
 * no remote, no compile, no miss counted; at most CUBBY_MEMORY_ENTRIES entries and 256 MiB). For
 * a background thread while the run gets ready. `stop` (may be NULL): read before each recipe; a
 * non-zero value ends the read-ahead. *count (may be NULL) receives how many entries were read;
 * *lacking (may be NULL) how many of the suite's recipes the store may lack an entry for now
 * (those not looked at, after a bound or `stop`, included; UINT64_MAX: the manifest could not be
 * read, or the call failed): 0 means a run of the recorded programs misses nothing, so a
 * prefetch beside it has nothing to do. 0 and 0 without a suite or its manifest. */
CUBBY_API int cubby_read_ahead(cubby_cache* cache, const volatile int* stop, uint64_t* count,
                               uint64_t* lacking);

/* Every field the key of a request hashes, as a JSON array of {"label", "summary", "hash"}
 * (what `cubby compile --explain` prints). The string lives until this thread's next call of
 * cubby_explain_json (other threads have their own), whatever happens to the handle. */
CUBBY_API const char* cubby_explain_json(cubby_cache* cache, const char* source,
                                         const char* program_name,
                                         const char* const* name_expressions,
                                         size_t name_expression_count, const char* const* options,
                                         size_t option_count, const char* arch);

/* The recorded recipe of the handle's suite (CUBBY_SUITE) nearest to a request, as a JSON object:
 * "suite", "program" (its name), "same_request" (the suite recorded this very request: only its
 * key changed), "same_source" (this source with other options or name expressions), else "line"
 * (1-based, where the sources first differ), "recorded" and "now" (that line of each). {} without
 * a suite, its manifest or a recipe. What `--cubby-require-warm` shows of a program a second run
 * compiled. Lives like cubby_explain_json's answer (until this thread's next call of it). */
CUBBY_API const char* cubby_nearest_recorded_json(cubby_cache* cache, const char* source,
                                                  const char* program_name,
                                                  const char* const* name_expressions,
                                                  size_t name_expression_count,
                                                  const char* const* options, size_t option_count,
                                                  const char* arch);

/* The same fields as text, in the one key-dump layout of `cubby compile --explain` and the test
 * harnesses' require-warm failures: a title line, then one line per field with its label, the
 * first 12 digits of its hash and its value. Lives like cubby_explain_json's answer (until this
 * thread's next call of cubby_explain_text). */
CUBBY_API const char* cubby_explain_text(cubby_cache* cache, const char* source,
                                         const char* program_name,
                                         const char* const* name_expressions,
                                         size_t name_expression_count, const char* const* options,
                                         size_t option_count, const char* arch);

/* Blobs: opaque payloads another tool compiled (e.g. CuPy's kernel cache), stored byte for byte
 * under (namespace, name) as entries of kind "blob" in the same store, so they are bounded,
 * checked and shared like compiled entries. `ns`: 1..255 of [A-Za-z0-9._-]; `name`: non-empty.
 *
 * cubby_blob_get: on a hit *out receives a result handle (payload, key, hit = 1, tier "memory",
 * "disk" or "remote", compile_ms = what producing it cost); on a miss it returns CUBBY_OK with
 * *out = NULL. cubby_blob_put: stores `size` bytes at `data` (NULL only when size is 0), and
 * queues them for the remote tier like a compiled entry (unless CUBBY_REMOTE_MODE=read);
 * `compile_ms` is what producing the payload cost (0 if unknown), credited as time saved on later
 * hits. */
CUBBY_API int cubby_blob_get(cubby_cache* cache, const char* ns, const char* name,
                             cubby_result** out);
CUBBY_API int cubby_blob_put(cubby_cache* cache, const char* ns, const char* name, const void* data,
                             size_t size, double compile_ms);

/* cubby_blob_get_or_claim: cubby_blob_get, and on a miss a claim on the blob: the caller is to
 * produce it and cubby_blob_put it (which gives the claim back), and other processes asking for
 * it meanwhile wait for that (up to `wait_ms`) instead of producing it again; a waiter that finds
 * it stored gets a hit. On a miss *claimed is 1 when this call holds the claim, 0 when it does not
 * (the wait expired, a read-only store): produce the blob either way. cubby_blob_release gives a
 * claim back without storing (the blob could not be produced); no effect without one. A claim
 * also ends with the handle and with the process. */
CUBBY_API int cubby_blob_get_or_claim(cubby_cache* cache, const char* ns, const char* name,
                                      unsigned wait_ms, cubby_result** out, int* claimed);
CUBBY_API int cubby_blob_release(cubby_cache* cache, const char* ns, const char* name);

/* cubby_blob_remove: removes the blob from the handle's memory, the store and the remote tier
 * (when one is configured; a failure there is ignored); *removed (NULL: not set) is 1 when the
 * store held it, else 0. A read-only store: CUBBY_ERROR_INVALID_ARGUMENT. Other processes' memory
 * tiers keep what they loaded. */
CUBBY_API int cubby_blob_remove(cubby_cache* cache, const char* ns, const char* name, int* removed);

/* Namespaces: the blobs of one namespace (`ns` as for blobs), or "programs" (the compiled
 * programs), as `cubby ls` shows them and `cubby clear --namespace` removes them. Both calls scan
 * the store: every entry file is read and decoded (blob keys are hashes of (namespace, name), so
 * the namespace is known only from the entry itself), a cost that grows with the whole store,
 * not with the namespace; entries that do not decode belong to no namespace (`cubby verify`).
 *
 * cubby_namespace_usage: the entries of `ns` on the local disk store and their bytes (*entries
 * and *bytes may be NULL; both 0 on failure). Neither the handle's memory tier nor the remote tier
 * is counted; with CUBBY_DISABLE, 0 and 0 (the handle stores and serves nothing).
 * cubby_namespace_clear: removes the entries of `ns` from the local disk store (and from the
 * store's size estimate), then from this handle's memory tier, so that the handle serves none of
 * them afterwards unless they are stored again; *removed (may be NULL) receives the count removed
 * from disk. The remote tier is not touched (it cannot be listed): with CUBBY_REMOTE a later get
 * may read a cleared entry back from it. Other processes' memory tiers keep what they loaded.
 * With CUBBY_DISABLE nothing is removed (0).
 * Errors: CUBBY_ERROR_INVALID_ARGUMENT for a NULL or bad `ns` or handle, and from
 * cubby_namespace_clear for a read-only store; CUBBY_ERROR_IO when the store cannot be listed or
 * an entry cannot be removed (entries removed before the failure stay removed). */
CUBBY_API int cubby_namespace_usage(cubby_cache* cache, const char* ns, uint64_t* entries,
                                    uint64_t* bytes);
CUBBY_API int cubby_namespace_clear(cubby_cache* cache, const char* ns, uint64_t* removed);

/* Prefetch (cubby/prefetch.hpp): starts `cubby warm --prefetch` for suite `suite` (non-empty) on
 * the store `dir` (NULL: CUBBY_DIR / XDG default), other settings from CUBBY_* variables, so the
 * kernels the suite recorded compile in worker processes while its tests run. *out receives a
 * handle for cubby_prefetch_stop also when nothing was started (prefetch off, read-only store,
 * nothing recorded, tool not found): cubby_prefetch_pid is then 0 and cubby_prefetch_note says
 * why, when that is worth saying ("" otherwise). The prefetch ends with the calling process and
 * thread, or with cubby_prefetch_stop (which frees the handle; NULL is ignored). */
typedef struct cubby_prefetch cubby_prefetch;
CUBBY_API int cubby_prefetch_start(const char* dir, const char* suite, cubby_prefetch** out);
/* The same, but the prefetch only reads the suite's recipes until a process using the store for
 * that suite (CUBBY_SUITE) misses a key; then it derives their keys and compiles what is missing.
 * A warm run so pays for no key checks beside it. It goes on at once where the run will miss (an
 * entry of the suite's last run gone, a header its recipes read written since that run). The
 * pytest plugin starts its prefetch so. */
CUBBY_API int cubby_prefetch_start_at_first_miss(const char* dir, const char* suite,
                                                 cubby_prefetch** out);
CUBBY_API long cubby_prefetch_pid(const cubby_prefetch* prefetch);
CUBBY_API const char* cubby_prefetch_note(const cubby_prefetch* prefetch);
CUBBY_API void cubby_prefetch_stop(cubby_prefetch* prefetch);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CUBBY_H_ */
